"""benchmarks/_load.py (train_throughput.py --busy / --beside-training): the load's processes stop
and run again on request and never outlive the benchmark."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from _load import BackgroundLoad  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, PR_SET_PDEATHSIG")


def process_state(pid: int) -> str:
    """/proc state letter (R, S, T, Z, ...); "gone" once the process was reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return "gone"


def wait_for_state(pid: int, wanted: set[str], timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while (state := process_state(pid)) not in wanted and time.monotonic() < deadline:
        time.sleep(0.02)
    return state


def test_busy_processes_stop_run_and_are_killed_at_the_end():
    with BackgroundLoad.busy(2) as load:
        pids = [p.pid for p in load.processes]
        assert len(pids) == 2
        load.set_active(False)
        assert [wait_for_state(pid, {"T"}) for pid in pids] == ["T", "T"]
        load.set_active(True)
        assert all(wait_for_state(pid, {"R", "S"}) in ("R", "S") for pid in pids)
    assert all(p.poll() is not None for p in load.processes)
    assert [process_state(pid) for pid in pids] == ["gone", "gone"]


def test_killed_on_an_exception_inside_the_block():
    with pytest.raises(KeyboardInterrupt):
        with BackgroundLoad.busy(1) as load:
            raise KeyboardInterrupt
    assert load.processes[0].poll() is not None


def test_busy_process_dies_with_a_benchmark_that_had_no_chance_to_clean_up():
    # The parent exits at once with os._exit (no finally runs, as after a SIGKILL): the kernel
    # kills its busy process (PR_SET_PDEATHSIG), which then waits only to be reaped by init.
    parent = ("import os, sys; sys.path.insert(0, sys.argv[1]); from _load import BackgroundLoad; "
              "load = BackgroundLoad.busy(1); print(load.processes[0].pid, flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", parent, str(Path(__file__).resolve().parents[1] / "benchmarks")],
                         capture_output=True, text=True, timeout=60, check=True)
    pid = int(out.stdout.split()[0])
    assert wait_for_state(pid, {"Z", "gone"}) in ("Z", "gone")
