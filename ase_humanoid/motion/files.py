"""Reading a motion file's bytes with the project's error: the one place every reader opens files."""

from __future__ import annotations

from pathlib import Path

from ase_humanoid.errors import MotionFileError
from ase_humanoid.utils.checks import input_file_problem


def read_motion_bytes(path: Path) -> bytes:
    """The file's bytes; a missing, unreadable or empty file raises MotionFileError naming it."""
    check_motion_path(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise MotionFileError(f"{path}: no such motion file") from None
    except OSError as err:
        raise MotionFileError(f"{path}: cannot read motion file: {err}") from None
    if not raw.strip():
        raise MotionFileError(f"{path}: file is empty")
    return raw


def check_motion_path(path: Path) -> None:
    """MotionFileError naming `path` unless it is a regular file: a folder, a FIFO or a device
    (which would block or never end the read) is said to be one, not "no such file"."""
    problem = input_file_problem(Path(path))
    if problem == "does not exist":
        raise MotionFileError(f"{path}: no such motion file")
    if problem is not None:
        raise MotionFileError(f"{path}: motion file {problem}")
