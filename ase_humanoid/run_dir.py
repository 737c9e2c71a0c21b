"""The run folder's life: refuse to overwrite another run, fail early on a folder that cannot be
written, write config.yaml atomically, and on resume put the logs back where the checkpoint
stands (metrics.jsonl truncated, TensorBoard purged after its step) and drop the temp files a
kill during a checkpoint write leaves behind."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ase_humanoid.errors import ConfigError
from ase_humanoid.utils.atomic_file import write_atomic

# Files whose presence means "a run lives here".
RUN_FILES = ("latest.pt", "metrics.jsonl", "config.yaml", "replay")  # replay/: the AMP replay journal


def existing_run_files(run_dir: Path) -> list[str]:
    """Names of RUN_FILES (and numbered snapshots) present in `run_dir`."""
    if not run_dir.is_dir():
        return []
    found = [name for name in RUN_FILES if (run_dir / name).exists()]
    return found + sorted(p.name for p in run_dir.glob("epoch_*.pt"))[:1]


def refuse_existing_run(run_dir: Path) -> None:
    """A new run must not replace another run's latest.pt or append to its metrics.jsonl."""
    found = existing_run_files(run_dir)
    if found:
        raise ConfigError(f"run_dir '{run_dir}' already holds a run ({', '.join(found)}); continue it with "
                          "resume=true, or give a new run_dir (or delete the folder) to start over")


def check_writable(run_dir: Path) -> None:
    """Create `run_dir` and write a probe file in it: an unwritable folder or a full disk is a
    ConfigError now, before the env and agent are built, not a traceback after."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=run_dir, prefix=".write_check.", delete=True) as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise ConfigError(f"run_dir '{run_dir}' is not writable: {exc.strerror or exc}") from exc


def write_text_atomic(path: Path, text: str) -> None:
    """Temp file + rename: a full disk leaves the old file (or none), never an empty one."""
    write_atomic(path, lambda f: f.write(text.encode()))


def remove_stale_temp_files(run_dir: Path) -> list[Path]:
    """Delete `.<name>.*.tmp` files left by a kill during an atomic write; returns them."""
    stale = [p for p in [*run_dir.glob(".*.tmp"), *run_dir.glob("replay/.*.tmp")]
             if p.is_file() and not p.name.startswith(".write_check.")]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def truncate_metrics(path: Path, epoch: int) -> int:
    """Keep the lines of metrics.jsonl up to and including `epoch` (a torn last line goes too);
    returns how many lines were dropped. Resuming from an older checkpoint then does not repeat
    epochs in the file."""
    if not path.is_file():
        return 0
    kept, dropped = [], 0
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            dropped += 1
            continue
        if isinstance(record, dict) and isinstance(record.get("epoch"), int) and record["epoch"] <= epoch:
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        write_text_atomic(path, "".join(line + "\n" for line in kept))
    return dropped
