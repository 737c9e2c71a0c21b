"""Ctrl-C that waits for a checkpoint being written.

A KeyboardInterrupt raised inside torch.save leaves its zip writer half-closed, and the writer's
own cleanup then fails with a RuntimeError that replaces the interrupt: the user sees a traceback
and exit status 1 instead of "interrupted, continue with resume=true". Writing a checkpoint takes
well under a second, so Ctrl-C during one is held until the write (and whatever belongs with it,
such as the replay journal's commit) is done, then raised.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_holding = False


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold SIGINT for the body; raise KeyboardInterrupt after it if one came.

    Nests (an inner use inside an outer one does nothing). Works only where Python can set signal
    handlers (the main thread) and while SIGINT has Python's default handler; anywhere else the
    body runs as it would without this. An error from the body wins over a held interrupt.
    """
    global _holding
    if (_holding or threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    _holding = True
    try:
        yield
    finally:
        _holding = False
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt
