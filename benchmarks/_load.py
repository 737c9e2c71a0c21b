"""Load beside a measurement: N single-threaded busy processes, or a second training, that
`benchmarks/train_throughput.py --busy N / --beside-training` switches on and off between its
epochs (SIGSTOP / SIGCONT), so idle and loaded epochs interleave in one run.

    with BackgroundLoad.busy(2) as load:
        load.set_active(False)   # idle epoch
        ...
        load.set_active(True)    # loaded epoch

Every process is killed when the `with` block ends, also on an exception or Ctrl-C. Each runs in
its own session (Ctrl-C in the terminal reaches only the benchmark, which then kills them) and,
on Linux, asks the kernel to kill it when the benchmark dies, so not even a SIGKILL of the
benchmark leaves a CPU burner behind. POSIX only (signals, sessions).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]

BUSY_LOOP = "while True: pass"

# `python -c ORPHAN_GUARD PARENT_PID PROGRAM ARGS...`: die with the parent (Linux
# PR_SET_PDEATHSIG, kept across exec), or at once if the parent is already gone, then become
# PROGRAM ARGS....
ORPHAN_GUARD = """\
import ctypes, os, signal, sys
try:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass  # no prctl (not Linux): only the parent's cleanup ends this process
if os.getppid() != int(sys.argv[1]):
    sys.exit(0)
os.execv(sys.argv[2], sys.argv[2:])
"""


def spawn(argv: list[str], log_path: Path | None = None) -> subprocess.Popen:
    """Start `argv` in its own session, to die with this process (see ORPHAN_GUARD)."""
    log = open(log_path, "wb") if log_path is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen([sys.executable, "-c", ORPHAN_GUARD, str(os.getpid()), *argv],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=PROJECT_ROOT)
    finally:
        if log is not subprocess.DEVNULL:
            log.close()  # the child has its own descriptor


def signal_group(process: subprocess.Popen, signum: int) -> None:
    """`signum` to the process and everything it started (its session's process group)."""
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass  # already gone


def kill(processes: list[subprocess.Popen]) -> None:
    """SIGKILL (works on stopped processes too) and reap."""
    for process in processes:
        signal_group(process, signal.SIGKILL)
    for process in processes:
        process.wait()


class BackgroundLoad:
    """Processes that load the machine; `set_active(False)` stops them (SIGSTOP), `True` lets
    them run again (SIGCONT). A context manager: leaving it kills them all."""

    def __init__(self, description: dict, processes: list[subprocess.Popen],
                 ready_file: Path | None = None, log_path: Path | None = None):
        self.description = description
        self.processes = processes
        self.ready_file = ready_file  # exists once the load is in its steady state
        self.log_path = log_path
        self.active = True

    @classmethod
    def busy(cls, n: int) -> BackgroundLoad:
        """`n` single-threaded processes spinning in a Python loop."""
        processes: list[subprocess.Popen] = []
        try:
            for _ in range(n):
                processes.append(spawn([sys.executable, "-c", BUSY_LOOP]))
        except BaseException:
            kill(processes)
            raise
        return cls({"kind": "busy", "processes": n}, processes)

    @classmethod
    def training(cls, overrides: list[str], folder: Path) -> BackgroundLoad:
        """A second `train.py` with `overrides` (its run folder, log and nothing else in
        `folder`), training until killed; ready once it has logged its first epoch."""
        run_dir = folder / "beside_run"
        log_path = folder / "beside_training.log"
        argv = [sys.executable, str(PROJECT_ROOT / "train.py"), *overrides, f"run_dir={run_dir}",
                "max_epochs=1000000"]
        return cls({"kind": "training", "overrides": overrides}, [spawn(argv, log_path)],
                   ready_file=run_dir / "metrics.jsonl", log_path=log_path)

    def wait_ready(self, timeout_s: float = 600.0) -> None:
        """Until the load runs in its steady state (a training: past its start-up and first
        epoch); RuntimeError with the log's tail if a process ended or the time ran out."""
        deadline = time.monotonic() + timeout_s
        while self.ready_file is not None and not (self.ready_file.is_file() and self.ready_file.stat().st_size):
            self.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the load was not ready after {timeout_s:.0f} s{self.log_tail()}")
            time.sleep(0.5)
        self.check_alive()

    def check_alive(self) -> None:
        ended = [p.returncode for p in self.processes if p.poll() is not None]
        if ended:
            raise RuntimeError(f"a load process ended (exit status {ended[0]}){self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        if self.log_path is None or not self.log_path.is_file():
            return ""
        return f"; its output ends:\n{self.log_path.read_text(errors='replace')[-chars:]}"

    def set_active(self, active: bool) -> None:
        if active != self.active:
            for process in self.processes:
                signal_group(process, signal.SIGCONT if active else signal.SIGSTOP)
            self.active = active
        if active:
            self.check_alive()  # a loaded measurement without its load would be wrong

    def close(self) -> None:
        kill(self.processes)

    def __enter__(self) -> BackgroundLoad:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
