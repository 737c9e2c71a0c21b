"""TensorBoard scalars, a metrics.jsonl line per epoch (easy to read back in scripts and tests),
and one compact console line per epoch with a progress bar."""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from collections import deque
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter


def progress_bar(fraction: float, width: int = 20) -> str:
    fraction = min(max(fraction, 0.0), 1.0)
    filled = int(round(fraction * width))
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def format_duration(seconds: float) -> str:
    """`[d]h:mm:ss` (or `m:ss` under an hour) for the console line."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def json_safe(stats: dict[str, float]) -> dict[str, float | None]:
    """NaN / inf as null: json.dumps would write bare NaN, which no strict JSON reader accepts."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in stats.items()}


class EpochClock:
    """Time left to `max_epochs` from the pace of the last `window` epochs of this sitting
    (a recent window follows a machine that becomes busier or idle; a resumed run starts a
    new window, so time spent before the resume does not distort it).

    An epoch that took more than `PAUSE_FACTOR` times the window's median is a pause (the
    process was stopped, the laptop slept) rather than the pace, and is left out: with it, one
    6-minute pause among 2-second epochs showed 10 hours left instead of 1 for 20 epochs."""

    PAUSE_FACTOR = 10.0

    def __init__(self, window: int = 20):
        self.marks: deque[tuple[int, float]] = deque(maxlen=window + 1)

    def start(self, epoch: int, now: float) -> None:
        self.marks.clear()
        self.marks.append((epoch, now))

    def tick(self, epoch: int, now: float) -> None:
        self.marks.append((epoch, now))

    def seconds_per_epoch(self) -> float | None:
        if len(self.marks) < 2:
            return None
        marks = list(self.marks)
        # [intervals] seconds per epoch between consecutive marks, with their epoch counts
        spans = [(t1 - t0, max(e1 - e0, 1)) for (e0, t0), (e1, t1) in zip(marks, marks[1:])]
        median = statistics.median(seconds / epochs for seconds, epochs in spans)
        kept = [(s, e) for s, e in spans if len(spans) < 3 or s / e <= self.PAUSE_FACTOR * median]
        return sum(s for s, _ in kept) / sum(e for _, e in kept)

    def seconds_left(self, epoch: int, max_epochs: int) -> float | None:
        pace = self.seconds_per_epoch()
        return None if pace is None else pace * max(max_epochs - epoch, 0)


class TrainingLogger:
    """Writes scalars to `<run_dir>/tensorboard` and a console line to `stream`.

    Only rank 0 of a distributed run should create one with `enabled=True`. The caller logs an
    epoch before checkpointing it, so a kill between the two repeats the epoch (its log lines are
    truncated on resume) rather than leaving a gap.
    """

    # Console line keys, in order, when present in the stats (short name, format).
    CONSOLE_KEYS = (
        ("episode/length", "len", "{:.0f}"),
        ("train/task_reward_mean", "task", "{:.3f}"),
        ("train/disc_reward_mean", "style", "{:.3f}"),
        ("train/enc_reward_mean", "enc", "{:.3f}"),
        ("train/disc_agent_acc", "acc_a", "{:.2f}"),
        ("train/disc_demo_acc", "acc_d", "{:.2f}"),
        ("perf/samples_per_s", "sps", "{:.0f}"),
    )

    # What each console column means, printed once above the first line.
    LEGEND = {
        "len": "mean episode length (control steps)",
        "task": "task reward per step",
        "style": "style reward per step (the discriminator's)",
        "enc": "encoder reward per step (ASE: how well the latent reads back from the motion)",
        "acc_a": "discriminator accuracy on the agent's motion",
        "acc_d": "its accuracy on the motion data",
        "sps": "samples per second",
    }

    def __init__(self, run_dir: str | Path, max_epochs: int, enabled: bool = True, stream=None,
                 purge_step: int | None = None, time_source=time.time, hidden_keys: tuple[str, ...] = ()):
        self.enabled = enabled
        # stats left off the console (e.g. the task reward in ASE pre-training, which has none)
        self.hidden_keys = set(hidden_keys)
        self.columns: list[tuple[str, str, str]] | None = None  # fixed by the first line
        self.max_epochs = max_epochs
        self.stream = stream  # None: whatever sys.stdout is when a line is printed
        self.time_source = time_source  # wall clock of the console line (a test passes its own)
        self.start_time = time_source()
        self.clock = EpochClock()
        # a wall-clock budget's end on time_source's clock, for a caller of
        # Runner.learn(time_budget_s=...): the time left is the sooner of it and max_epochs
        self.stop_time: float | None = None
        # purge_step (on resume): TensorBoard hides the events from that step on, which a run
        # killed after its last checkpoint had written (they are logged again).
        self.writer = SummaryWriter(str(Path(run_dir) / "tensorboard"), purge_step=purge_step) if enabled else None
        self.metrics_path = Path(run_dir) / "metrics.jsonl"

    def log(self, epoch: int, global_step: int, stats: dict[str, float]) -> None:
        if not self.enabled:
            return
        for key, value in stats.items():
            self.writer.add_scalar(key, value, global_step)
        self.writer.flush()
        with open(self.metrics_path, "a") as f:
            f.write(json.dumps({"epoch": epoch, "global_step": global_step, **json_safe(stats)}) + "\n")
        if self.columns is None:
            # The columns of the first line stay for the whole run (a value not measured in an
            # epoch, like the episode length before any episode ended, shows as "-").
            self.columns = [(key, short, fmt) for key, short, fmt in self.CONSOLE_KEYS
                            if key not in self.hidden_keys and (key in stats or key == "episode/length")]
            legend = "; ".join(f"{short} = {self.LEGEND[short]}" for _, short, _ in self.columns)
            print(f"columns: {legend}; then time so far and time left", file=self.stream or sys.stdout, flush=True)
        parts = [f"epoch {epoch:>6d}/{self.max_epochs}", progress_bar(epoch / max(self.max_epochs, 1))]
        for key, short, fmt in self.columns:
            value = stats.get(key)
            parts.append(f"{short} " + (fmt.format(value) if value is not None and value == value else "-"))
        now = self.time_source()
        if not self.clock.marks:
            # The first logged epoch of this sitting started at the logger's creation.
            self.clock.start(epoch - 1, self.start_time)
        self.clock.tick(epoch, now)
        parts.append(f"{format_duration(now - self.start_time)}")
        left = self.clock.seconds_left(epoch, self.max_epochs)
        if self.stop_time is not None:
            budget_left = max(self.stop_time - now, 0.0)
            left = budget_left if left is None else min(left, budget_left)
        if left is not None:
            parts.append(f"left {format_duration(left)}")
        print("  ".join(parts), file=self.stream or sys.stdout, flush=True)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
