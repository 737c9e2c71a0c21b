"""Turning clips made from straight ones: the same poses on a path that bends at a constant rate.

The shippable locomotion clips (walk, run, CMU 131_01) all go straight. A discriminator trained on
them scores turning as unlike the data, so an ASE controller's latents can vary speed and gait but
barely steer, and a high-level policy has nothing to steer with (docs/TASKS.md, "Turning clips").
`curve_path` turns each frame's whole pose about the vertical line through its root by
`yaw_rate * t` and bends the root's horizontal path to match: the root's horizontal step from
frame k to k + 1 is turned by the yaw at their midpoint, so the speed along the path stays the
clip's. Joint angles and root height are untouched. A foot in stance slides by about
`yaw_rate * r` (r: its horizontal distance from the root; about 0.1 m/s at 1 rad/s), which is
how far this is from a recorded turn.
"""

from __future__ import annotations

import math

import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.clip import MotionClip
from ase_humanoid.utils import rotations as rot

# rad/s: a walking person turns at up to about 1-2 rad/s; beyond this the stance foot would slide
# further than it steps
MAX_YAW_RATE = 3.0


def curve_path(clip: MotionClip, yaw_rate: float) -> MotionClip:
    """`clip` turning left (positive, counter-clockwise seen from above) at `yaw_rate` rad/s.

    Root rotation `[T, 4]` gains a yaw of `yaw_rate * t` (t = frame / fps); the root's horizontal
    steps `[T - 1, 2]` are turned by the yaw halfway through each step; velocities are recomputed.
    """
    yaw_rate = float(yaw_rate)
    if not math.isfinite(yaw_rate) or abs(yaw_rate) > MAX_YAW_RATE:
        raise MotionFileError(f"yaw rate {yaw_rate} rad/s: must be finite and within +-{MAX_YAW_RATE}")
    times = torch.arange(clip.num_frames, dtype=clip.dtype, device=clip.device) / clip.fps
    yaw = yaw_rate * times
    up = torch.zeros(clip.num_frames, 3, dtype=clip.dtype, device=clip.device)
    up[:, 2] = 1.0
    local_rotation = clip.local_rotation.clone()
    local_rotation[:, 0] = rot.quat_normalize(rot.quat_mul(rot.quat_from_axis_angle(up, yaw),
                                                           clip.local_rotation[:, 0]))

    steps = clip.root_translation[1:, :2] - clip.root_translation[:-1, :2]  # [T - 1, 2]
    mid_yaw = 0.5 * (yaw[1:] + yaw[:-1])
    cos, sin = torch.cos(mid_yaw), torch.sin(mid_yaw)
    turned = torch.stack([cos * steps[:, 0] - sin * steps[:, 1], sin * steps[:, 0] + cos * steps[:, 1]], dim=-1)
    root_translation = clip.root_translation.clone()
    root_translation[1:, :2] = clip.root_translation[0, :2] + torch.cumsum(turned, dim=0)
    return MotionClip(clip.skeleton, local_rotation, root_translation, clip.fps)
