"""Checks of user inputs shared by train.py, the tools and the gymnasium entry, so that each
accepts the same values: a seed's range, and what "a file" means for an input path.

Kept low in the package (utils) so that envs, motion readers and checkpoints can all use them.
"""

from __future__ import annotations

import numbers
import os
import stat
from pathlib import Path

from ase_humanoid.errors import AseHumanoidError, ConfigError

# numpy's legacy seeding takes 0..2**32-1 and each distributed rank adds 1000 * rank to the run's
# seed, so the range stays well inside it (and inside int32 for any backend that stores one).
SEED_RANGE = (0, 2**31 - 1)


def check_seed(value, key: str = "seed") -> int:
    """`value` as a seed; ConfigError naming `key` and SEED_RANGE for anything else (a bool, a
    float, a negative number, 2**40: numpy and torch would raise their own errors later). numpy
    integers count as integers."""
    low, high = SEED_RANGE
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise ConfigError(f"config key '{key}' must be an integer from {low} to {high}, got {value!r}")
    return int(value)


def input_file_problem(path: Path) -> str | None:
    """What keeps `path` from being read as an input file ("does not exist", "is a folder", "is a
    FIFO", ...), or None for a regular file. A FIFO would block the read forever and a device such
    as /dev/zero would fill the memory, so only regular files (symbolic links followed) pass."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return f"is a symbolic link to '{os.readlink(path)}', which does not exist"
        return "does not exist"
    except OSError as err:
        return f"cannot be read: {err.strerror or err}"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    kind = next((name for test, name in kinds if test(mode)), "not a regular file")
    target = f" (a link to '{os.path.realpath(path)}')" if os.path.islink(path) else ""
    return f"is {kind}{target}, not a regular file"


def output_file_problem(path: Path) -> str | None:
    """What keeps `path` from being written as an output file ("is a folder", its folder missing
    or not writable), or None. The twin of `input_file_problem`, for tools to call before long
    work so a bad output path fails at once, creating nothing."""
    path = Path(path)
    if path.is_dir():
        return "is a folder; give a file name"
    folder = path.parent
    if not folder.is_dir():
        return f"folder '{folder}' does not exist (create it first)"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"folder '{folder}' is not writable"
    return None


def require_input_file(path, what: str, error: type[AseHumanoidError]) -> Path:
    """`path` as a Path if it is a regular file; else `error` saying "<what> '<path>' <problem>"."""
    path = Path(path)
    problem = input_file_problem(path)
    if problem is not None:
        raise error(f"{what} '{path}' {problem}")
    return path
