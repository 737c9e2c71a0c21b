"""Clips made from others: turning clips from straight ones (the same poses on a path that bends
at a constant rate), and mirror images (left and right swapped).

The shippable locomotion clips (walk, run, CMU 131_01) all go straight. A discriminator trained on
them scores turning as unlike the data, so an ASE controller's latents can vary speed and gait but
barely steer, and a high-level policy has nothing to steer with (docs/research-notes.md, "Turning clips").
`curve_path` turns each frame's whole pose about the vertical line through its root by
`yaw_rate * t` and bends the root's horizontal path to match: the root's horizontal step from
frame k to k + 1 is turned by the yaw at their midpoint, so the speed along the path stays the
clip's. Joint angles and root height are untouched. A foot in stance slides by about
`yaw_rate * r` (r: its horizontal distance from the root; a median 0.24 m/s on the walk clip
at 1 rad/s, 0.40 at 2), which is how far this is from a recorded turn.

With `pivot="stance_foot"` each frame's turn is made about the lower foot instead, as a person
pivots on the planted foot: the pose turns at the same rate, the stance foot stays where it was
planted (median 0 m/s, as in the straight clip) and the root swings round it, which lengthens
its path (the walk clip's 3.90 m to 4.21 at 1 rad/s, 4.53 at 2).

`mirror` reflects a clip in the vertical plane through the world x axis: a right turn becomes a
left one with the same style, so a dataset can hold a motion recorded one way in both directions
(docs/research-notes.md, "Recorded turns", measures what that does for an ASE controller).
"""

from __future__ import annotations

import math

import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.clip import MotionClip
from ase_humanoid.robots.mirror import QUATERNION_REFLECTION, REFLECTION, tree_partners
from ase_humanoid.utils import rotations as rot

# rad/s: a walking person turns at up to about 1-2 rad/s; beyond this the stance foot would slide
# further than it steps
MAX_YAW_RATE = 3.0


PIVOTS = ("root", "stance_foot")


def curve_path(clip: MotionClip, yaw_rate: float, pivot: str = "root") -> MotionClip:
    """`clip` turning left (positive, counter-clockwise seen from above) at `yaw_rate` rad/s.

    Root rotation `[T, 4]` gains a yaw of `yaw_rate * t` (t = frame / fps). With `pivot="root"`
    the root's horizontal steps `[T - 1, 2]` are turned by the yaw halfway through each step; with
    `pivot="stance_foot"` each frame's yaw increment turns the pose about the lower foot
    (`_pivot_on_stance_foot`). Velocities are recomputed.
    """
    yaw_rate = float(yaw_rate)
    if not math.isfinite(yaw_rate) or abs(yaw_rate) > MAX_YAW_RATE:
        raise MotionFileError(f"yaw rate {yaw_rate} rad/s: must be finite and within +-{MAX_YAW_RATE}")
    if pivot not in PIVOTS:
        raise MotionFileError(f"pivot {pivot!r}: must be one of {', '.join(PIVOTS)}")
    times = torch.arange(clip.num_frames, dtype=clip.dtype, device=clip.device) / clip.fps
    yaw = yaw_rate * times
    up = torch.zeros(clip.num_frames, 3, dtype=clip.dtype, device=clip.device)
    up[:, 2] = 1.0
    local_rotation = clip.local_rotation.clone()
    local_rotation[:, 0] = rot.quat_normalize(rot.quat_mul(rot.quat_from_axis_angle(up, yaw),
                                                           clip.local_rotation[:, 0]))

    root_translation = clip.root_translation.clone()
    if pivot == "stance_foot":
        root_translation[:, :2] = _pivot_on_stance_foot(clip, yaw)
    else:
        steps = clip.root_translation[1:, :2] - clip.root_translation[:-1, :2]  # [T - 1, 2]
        turned = _turn_xy(steps, 0.5 * (yaw[1:] + yaw[:-1]))
        root_translation[1:, :2] = clip.root_translation[0, :2] + torch.cumsum(turned, dim=0)
    return MotionClip(clip.skeleton, local_rotation, root_translation, clip.fps)


def _turn_xy(xy: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Horizontal vectors `[..., 2]` turned counter-clockwise by `angle` `[...]` (radians)."""
    cos, sin = torch.cos(angle), torch.sin(angle)
    return torch.stack([cos * xy[..., 0] - sin * xy[..., 1], sin * xy[..., 0] + cos * xy[..., 1]], dim=-1)


def _pivot_on_stance_foot(clip: MotionClip, yaw: torch.Tensor) -> torch.Tensor:
    """Root positions `[T, 2]` of the clip turned by `yaw` `[T]`, each frame's increment about the
    lower foot. The map from the clip's ground plane to the turned one is a rotation by yaw[k]
    plus a shift s[k]; s[k] keeps the lower foot f[k] where frame k - 1's map put it:
    R(yaw[k]) f[k] + s[k] = R(yaw[k - 1]) f[k] + s[k - 1], so the shifts are a cumulative sum."""
    feet = [i for i, name in enumerate(clip.skeleton.node_names) if "foot" in name.lower()]
    if len(feet) != 2:
        raise MotionFileError(f"pivot 'stance_foot' needs two joints named *foot*; the skeleton's joints: "
                              f"{', '.join(clip.skeleton.node_names)}")
    foot_pos = clip.global_translation[:, feet]  # [T, 2, 3]
    lower = foot_pos[..., 2].argmin(dim=1)  # [T]
    stance_xy = foot_pos[torch.arange(clip.num_frames), lower, :2]  # [T, 2]
    increments = _turn_xy(stance_xy[1:], yaw[:-1]) - _turn_xy(stance_xy[1:], yaw[1:])  # [T - 1, 2]
    shifts = torch.cat([torch.zeros_like(increments[:1]), torch.cumsum(increments, dim=0)])
    return _turn_xy(clip.root_translation[:, :2], yaw) + shifts


_OFFSET_TOLERANCE = 1e-3  # m: paired bone offsets must mirror each other this closely


def mirror(clip: MotionClip) -> MotionClip:
    """`clip` reflected in the world's xz plane, left and right joints swapped.

    Local rotations `[T, J, 4]`: joint j takes its partner's rotation, reflected; root translation
    `[T, 3]`: y negated. Raises MotionFileError unless the skeleton is left-right symmetric
    (`mirror_partners`). Velocities are recomputed.
    """
    partners = mirror_partners(clip.skeleton)
    flip_q = torch.tensor(QUATERNION_REFLECTION, dtype=clip.dtype, device=clip.device)
    flip_p = torch.tensor(REFLECTION, dtype=clip.dtype, device=clip.device)
    local_rotation = clip.local_rotation[:, partners] * flip_q
    return MotionClip(clip.skeleton, local_rotation, clip.root_translation * flip_p, clip.fps)


def mirror_partners(skeleton) -> torch.Tensor:
    """Index `[J]` of each joint's mirror image: the joint named with left and right swapped
    (left_foot <-> right_foot, LeftUpLeg <-> RightUpLeg), else the joint itself; MotionFileError
    unless the pairing keeps the tree and partners' bone offsets mirror each other
    (`robots.mirror.tree_partners`)."""
    return tree_partners(skeleton.node_names, skeleton.parent_indices, skeleton.local_translation, "joint",
                         _OFFSET_TOLERANCE, MotionFileError)
