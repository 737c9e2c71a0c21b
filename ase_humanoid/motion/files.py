"""Reading a motion file's bytes with the project's error: the one place every reader opens files."""

from __future__ import annotations

from pathlib import Path

from ase_humanoid.errors import MotionFileError


def read_motion_bytes(path: Path) -> bytes:
    """The file's bytes; a missing, unreadable or empty file raises MotionFileError naming it."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise MotionFileError(f"{path}: no such motion file") from None
    except OSError as err:
        raise MotionFileError(f"{path}: cannot read motion file: {err}") from None
    if not raw.strip():
        raise MotionFileError(f"{path}: file is empty")
    return raw
