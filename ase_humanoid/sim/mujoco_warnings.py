"""MuJoCo's warnings as Python warnings, never as a MUJOCO_LOG.TXT in the user's current folder.

By default MuJoCo prints a warning ("Nan, Inf or huge value in QPOS ...") and appends it to
MUJOCO_LOG.TXT in whatever folder the process runs in: a file nobody asked for, beside the
user's own. Routed here, each becomes a RuntimeWarning (shown once per message, as Python
warnings are), and the env still counts and resets the worlds it concerns.
"""

from __future__ import annotations

import re
import warnings

import mujoco


def _warn(message: str) -> None:
    # without the simulation time, a warning repeated in many worlds or steps is shown once
    text = re.sub(r"\s*Time = [-+0-9.eE]+\.?", "", message.strip())
    warnings.warn(f"MuJoCo: {text}", RuntimeWarning, stacklevel=2)


def route_mujoco_warnings() -> None:
    """Send MuJoCo's warnings to `warnings.warn` (process-wide; idempotent)."""
    if mujoco.get_mju_user_warning() is not _warn:
        mujoco.set_mju_user_warning(_warn)
