"""Atomic checkpoint files: a crash or kill mid-write never destroys the previous checkpoint."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from ase_humanoid.errors import CheckpointError


def save_checkpoint(state: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write `state` with torch.save to a temp file in the same folder, fsync, then rename.

    os.replace is atomic on POSIX and Windows, so readers see either the old file or the
    complete new one, never a truncated one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return path


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint written by save_checkpoint; errors name the file and the problem."""
    path = Path(path)
    if path.is_dir():
        path = path / "latest.pt"
    if not path.is_file():
        raise CheckpointError(f"checkpoint '{path}' does not exist")
    try:
        # Checkpoints hold numpy RNG state and config dicts as well as tensors.
        state = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as exc:  # torch raises several types for truncated/corrupt zip files
        raise CheckpointError(f"checkpoint '{path}' is unreadable (truncated or corrupt?): {exc}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint '{path}' does not hold a dict of states")
    return state
