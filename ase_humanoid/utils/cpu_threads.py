"""How many CPU cores this process may use, and how many torch threads each update gets.

Why the update's thread count is measured rather than fixed: on an idle 2-core machine the
update runs about twice as fast on 2 threads as on 1, but beside any other busy process (a
browser, a test run, a second training) a 2-thread update waits at every parallel operation for
whichever thread the scheduler has set aside, and the same update then takes 2-4x longer than
on 1 thread (issue 22's measurements). Which count is faster depends on what else runs, and
that changes during a run, so the runner times its updates and keeps the faster count, trying
the other one now and then.
"""

from __future__ import annotations

import os
import statistics
from collections import deque
from pathlib import Path


def cgroup_cpu_limit(cpu_max_file: Path = Path("/sys/fs/cgroup/cpu.max")) -> float | None:
    """The container's CPU quota in cores (cgroup v2 `cpu.max`: "quota period"), None if unlimited
    or not readable."""
    try:
        quota, period = cpu_max_file.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        return max(float(quota) / float(period), 0.0)
    except (ValueError, ZeroDivisionError):
        return None


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity mask (taskset, cpusets), capped by a
    container's CPU quota (docker --cpus, Kubernetes limits); os.cpu_count() sees neither."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores, max(1, int(limit + 0.5)))
    return max(1, cores)


class UpdateThreadChooser:
    """Chooses the torch thread count of each update between 1 and `max_threads` by measured time.

    The first update is a warm-up (not timed); then each candidate is timed once, and afterwards
    the one with the lower median of its last `window` times is used. Every `probe_every`-th update
    runs the other candidate so that a change of load (another process starting or stopping) is
    noticed within about `probe_every` epochs; a probe costs at most one slower update in
    `probe_every`.
    """

    def __init__(self, max_threads: int, probe_every: int = 16, window: int = 3):
        if max_threads < 1:
            raise ValueError(f"max_threads must be >= 1, got {max_threads}")
        self.candidates = (max_threads, 1) if max_threads > 1 else (1,)
        self.probe_every = probe_every
        self.seconds: dict[int, deque[float]] = {n: deque(maxlen=window) for n in self.candidates}
        self.updates = 0

    def best(self) -> int:
        """The candidate with the lowest median time so far (`max_threads` before any is timed)."""
        timed = [n for n in self.candidates if self.seconds[n]]
        if not timed:
            return self.candidates[0]
        return min(timed, key=lambda n: statistics.median(self.seconds[n]))

    def next_threads(self) -> int:
        """The thread count for the coming update."""
        if self.updates == 0 or len(self.candidates) == 1:
            return self.candidates[0]
        untimed = [n for n in self.candidates if not self.seconds[n]]
        if untimed:
            return untimed[0]
        best = self.best()
        if self.updates % self.probe_every == 0:
            return next(n for n in self.candidates if n != best)
        return best

    def record(self, threads: int, seconds: float) -> None:
        """The update just run with `threads` threads took `seconds` (the first is the warm-up)."""
        if self.updates > 0 and threads in self.seconds:
            self.seconds[threads].append(seconds)
        self.updates += 1
