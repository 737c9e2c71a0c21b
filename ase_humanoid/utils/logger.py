"""TensorBoard scalars, a metrics.jsonl line per epoch (easy to read back in scripts and tests),
and one compact console line per epoch with a progress bar."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from torch.utils.tensorboard import SummaryWriter


def progress_bar(fraction: float, width: int = 20) -> str:
    fraction = min(max(fraction, 0.0), 1.0)
    filled = int(round(fraction * width))
    return "[" + "#" * filled + "-" * (width - filled) + "]"


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

    def __init__(self, run_dir: str | Path, max_epochs: int, enabled: bool = True, stream=None,
                 purge_step: int | None = None):
        self.enabled = enabled
        self.max_epochs = max_epochs
        self.stream = stream  # None: whatever sys.stdout is when a line is printed
        self.start_time = time.time()
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
            f.write(json.dumps({"epoch": epoch, "global_step": global_step, **stats}) + "\n")
        parts = [f"epoch {epoch:>6d}/{self.max_epochs}", progress_bar(epoch / max(self.max_epochs, 1))]
        for key, short, fmt in self.CONSOLE_KEYS:
            if key in stats:
                parts.append(f"{short} " + fmt.format(stats[key]))
        parts.append(f"{time.time() - self.start_time:.0f}s")
        print("  ".join(parts), file=self.stream or sys.stdout, flush=True)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
