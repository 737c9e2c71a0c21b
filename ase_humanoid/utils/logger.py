"""TensorBoard scalars plus one compact console line per epoch with a progress bar."""

from __future__ import annotations

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

    Only rank 0 of a distributed run should create one with `enabled=True`.
    """

    # Console line keys, in order, when present in the stats (short name, format).
    CONSOLE_KEYS = (
        ("episode/length", "len", "{:.0f}"),
        ("reward/task", "task", "{:.3f}"),
        ("reward/style", "style", "{:.3f}"),
        ("reward/encoder", "enc", "{:.3f}"),
        ("disc/accuracy_agent", "acc_a", "{:.2f}"),
        ("disc/accuracy_demo", "acc_d", "{:.2f}"),
        ("perf/samples_per_s", "sps", "{:.0f}"),
    )

    def __init__(self, run_dir: str | Path, max_epochs: int, enabled: bool = True, stream=sys.stdout):
        self.enabled = enabled
        self.max_epochs = max_epochs
        self.stream = stream
        self.start_time = time.time()
        self.writer = SummaryWriter(str(Path(run_dir) / "tensorboard")) if enabled else None

    def log(self, epoch: int, global_step: int, stats: dict[str, float]) -> None:
        if not self.enabled:
            return
        for key, value in stats.items():
            self.writer.add_scalar(key, value, global_step)
        self.writer.flush()
        parts = [f"epoch {epoch:>6d}/{self.max_epochs}", progress_bar(epoch / max(self.max_epochs, 1))]
        for key, short, fmt in self.CONSOLE_KEYS:
            if key in stats:
                parts.append(f"{short} " + fmt.format(stats[key]))
        parts.append(f"{time.time() - self.start_time:.0f}s")
        print("  ".join(parts), file=self.stream, flush=True)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
