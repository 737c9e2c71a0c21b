"""One way to write a file so that a crash, a kill or a full disk never leaves it half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

from ase_humanoid.utils.interrupts import interrupts_held


def write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Call `write(f)` on a temp file in `path`'s folder, fsync, then rename it over `path`.

    os.replace is atomic on POSIX and Windows: readers see the old file or the complete new one,
    never a truncated one; on any error the temp file is removed and the old file stays. Ctrl-C
    during the write is held until the file is in place (see utils/interrupts.py).
    """
    path = Path(path)
    with interrupts_held():
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """`text` (UTF-8) into `path` through `write_atomic`: a full disk leaves the old file (or
    none), never an empty one."""
    return write_atomic(path, lambda f: f.write(text.encode()))
