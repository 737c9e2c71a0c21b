"""The project's own exception types: every user-facing failure names the file or key at fault."""

import difflib
import sys
from collections.abc import Callable
from typing import NoReturn


class AseHumanoidError(Exception):
    """Base class for errors raised by ase_humanoid."""


class ModelError(AseHumanoidError):
    """A humanoid/scene MJCF is missing, malformed, or does not match its configuration."""


class MotionFileError(AseHumanoidError):
    """A motion file (npy, BVH, ASF/AMC, FBX, dataset YAML) is missing, corrupt or mismatched."""


class ConfigError(AseHumanoidError):
    """A configuration key or value is invalid; the message names the key and the valid choices."""


class CheckpointError(AseHumanoidError):
    """A checkpoint is missing, truncated, or does not fit the model being loaded."""


class TrainingError(AseHumanoidError):
    """Training cannot go on (e.g. a loss turned NaN or infinite); the last good checkpoint stays."""


class EnvStateError(AseHumanoidError, RuntimeError):
    """An env was used out of order: stepped before its first reset, or used after close()."""


class ActionError(AseHumanoidError, TypeError):
    """Actions handed to an env are not real numbers (complex, strings, objects, booleans)."""


def did_you_mean(name, valid) -> str:
    """` (did you mean 'x'?)` naming the closest of `valid` to a mistyped `name`, or '' when none
    is close: for messages about an unknown key or choice, before the list of valid ones."""
    close = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=0.75)
    return f" (did you mean '{close[0]}'?)" if close else ""


def run_command(main: Callable[[], object]) -> NoReturn:
    """Run a command-line tool's `main()` and exit with its status (the int it returns, else 0).
    A project error (a missing or corrupt file, a wrong key, an unusable checkpoint) prints as
    `error: ...` and exits 2, as train.py does, instead of ending in a traceback."""
    try:
        status = main()
    except AseHumanoidError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    sys.exit(status if isinstance(status, int) and not isinstance(status, bool) else 0)
