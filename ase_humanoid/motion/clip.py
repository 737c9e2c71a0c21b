"""A motion clip: local joint rotations and a root trajectory on a Skeleton, sampled at a fixed rate.

Joint 0's local rotation is the root's world rotation. World poses come from forward kinematics;
world velocities are stored (poselib files carry them) or computed by `compute_velocities`.
"""

from __future__ import annotations

import math
from functools import cached_property

import torch
import torch.nn.functional as F

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.skeleton import Skeleton
from ase_humanoid.utils import rotations as rot

# Velocity smoothing: a Gaussian over time with this standard deviation (frames), cut at
# VELOCITY_TRUNCATE standard deviations, edges padded with the nearest frame. The same kernel
# the poselib clips were made with, so recomputed velocities match the stored ones.
VELOCITY_SMOOTHING_SIGMA = 2.0
VELOCITY_TRUNCATE = 4.0

# Frame rates a recorded or retargeted clip can have (mocap: 30-480 fps); 1e9 fps is a unit
# mix-up, not a clip. Checked where files are read and where clips become reference motion.
PLAUSIBLE_FPS_RANGE = (1.0, 1000.0)


class MotionClip:
    """local_rotation [T, J, 4] xyzw, root_translation [T, 3], fps (frames per second);
    global_velocity / global_angular_velocity [T, J, 3] (world frame), computed when None.

    Every tensor shares one floating dtype and device (taken from local_rotation).
    """

    def __init__(
        self,
        skeleton: Skeleton,
        local_rotation: torch.Tensor,
        root_translation: torch.Tensor,
        fps: float,
        global_velocity: torch.Tensor | None = None,
        global_angular_velocity: torch.Tensor | None = None,
    ):
        local_rotation = torch.as_tensor(local_rotation)
        if not local_rotation.is_floating_point():
            local_rotation = local_rotation.to(torch.float32)
        like = dict(dtype=local_rotation.dtype, device=local_rotation.device)
        self.skeleton = skeleton.to(device=like["device"], dtype=like["dtype"])
        self.local_rotation = local_rotation
        self.root_translation = torch.as_tensor(root_translation).to(**like)
        self.fps = _check_fps(fps)
        _validate_motion(self.skeleton, self.local_rotation, self.root_translation)
        if global_velocity is None or global_angular_velocity is None:
            global_velocity, global_angular_velocity = compute_velocities(self)
        self.global_velocity = torch.as_tensor(global_velocity).to(**like)
        self.global_angular_velocity = torch.as_tensor(global_angular_velocity).to(**like)
        _validate_velocities(self)

    # ----------------------------------------------------------------------------- properties
    @property
    def num_frames(self) -> int:
        return self.local_rotation.shape[0]

    @property
    def num_joints(self) -> int:
        return self.skeleton.num_joints

    @property
    def duration(self) -> float:
        """Seconds from the first to the last frame: (T - 1) / fps."""
        return (self.num_frames - 1) / self.fps

    @property
    def dtype(self) -> torch.dtype:
        return self.local_rotation.dtype

    @property
    def device(self) -> torch.device:
        return self.local_rotation.device

    @cached_property
    def _world_pose(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.skeleton.forward_kinematics(self.local_rotation, self.root_translation)

    @property
    def global_translation(self) -> torch.Tensor:
        """World joint positions [T, J, 3]."""
        return self._world_pose[0]

    @property
    def global_rotation(self) -> torch.Tensor:
        """World joint rotations [T, J, 4]."""
        return self._world_pose[1]

    # ------------------------------------------------------------------------------- editing
    def trim(self, start: int, end: int | None = None) -> "MotionClip":
        """Frames start .. end-1 (Python slice semantics, negative indices allowed); velocities are
        sliced, not recomputed, so they keep the values the full clip had there."""
        frames = range(self.num_frames)[slice(start, end)]
        if len(frames) == 0:
            raise MotionFileError(f"trim({start}, {end}) selects no frames of a {self.num_frames}-frame clip")
        sl = slice(frames.start, frames.stop)
        return MotionClip(
            self.skeleton,
            self.local_rotation[sl],
            self.root_translation[sl],
            self.fps,
            self.global_velocity[sl],
            self.global_angular_velocity[sl],
        )

    def resampled_num_frames(self, fps: float) -> int:
        """Frames of `resample(fps)`, known before it allocates them."""
        return int(math.floor(self.duration * _check_fps(fps) + 1e-6)) + 1

    def resample(self, fps: float) -> "MotionClip":
        """The clip at a new frame rate over the same time span (frames at k / fps for
        k = 0 .. floor(duration * fps)): slerp of local rotations, lerp of the root translation,
        velocities recomputed."""
        fps = _check_fps(fps)
        num_new = self.resampled_num_frames(fps)
        times = torch.arange(num_new, dtype=torch.float64) / fps
        src = (times * self.fps).clamp(max=self.num_frames - 1)
        i0 = src.floor().long().clamp(max=self.num_frames - 1)
        i1 = (i0 + 1).clamp(max=self.num_frames - 1)
        blend = (src - i0.to(torch.float64)).to(dtype=self.dtype, device=self.device)
        i0, i1 = i0.to(self.device), i1.to(self.device)
        local_rotation = rot.slerp(self.local_rotation[i0], self.local_rotation[i1], blend[:, None, None])
        root_translation = torch.lerp(self.root_translation[i0], self.root_translation[i1], blend[:, None])
        return MotionClip(self.skeleton, local_rotation, root_translation, fps)

    def to(self, device=None, dtype=None) -> "MotionClip":
        dtype = dtype or self.dtype
        return MotionClip(
            self.skeleton,
            self.local_rotation.to(device=device, dtype=dtype),
            self.root_translation.to(device=device, dtype=dtype),
            self.fps,
            self.global_velocity.to(device=device, dtype=dtype),
            self.global_angular_velocity.to(device=device, dtype=dtype),
        )

    def __repr__(self) -> str:
        return (
            f"MotionClip({self.num_frames} frames at {self.fps:g} fps, {self.duration:.2f} s, "
            f"{self.num_joints} joints, {self.dtype})"
        )


# ----------------------------------------------------------------------------------- velocities
def compute_velocities(clip: MotionClip) -> tuple[torch.Tensor, torch.Tensor]:
    """World linear and angular velocities [T, J, 3] of every joint, by finite differences.

    Linear: central differences of the FK positions (one-sided at the ends). Angular: the
    rotation q_{t+1} q_t^-1 between consecutive world rotations as axis * angle / dt (the last
    frame has none and gets zero before smoothing). Both are then smoothed over time with a
    Gaussian of VELOCITY_SMOOTHING_SIGMA frames.
    """
    return smoothed_velocities(clip.global_translation, clip.global_rotation, clip.fps)


def smoothed_velocities(
    positions: torch.Tensor, rotations: torch.Tensor, fps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """positions [T, J, 3], rotations [T, J, 4] world poses -> (linear, angular) [T, J, 3]."""
    num_frames = positions.shape[0]
    if num_frames < 2:
        return torch.zeros_like(positions), torch.zeros_like(positions)
    linear = torch.gradient(positions, dim=0)[0] * fps
    delta = rot.quat_mul(rotations[1:], rot.quat_conjugate(rotations[:-1]))
    angular = torch.zeros_like(positions)
    angular[:-1] = rot.quat_to_exp_map(rot.quat_normalize(delta)) * fps
    return gaussian_smooth_time(linear), gaussian_smooth_time(angular)


def gaussian_smooth_time(x: torch.Tensor, sigma: float = VELOCITY_SMOOTHING_SIGMA) -> torch.Tensor:
    """Gaussian filter along dim 0 of `x [T, ...]`, edges padded with the nearest sample."""
    radius = int(VELOCITY_TRUNCATE * sigma + 0.5)
    offsets = torch.arange(-radius, radius + 1, dtype=x.dtype, device=x.device)
    kernel = torch.exp(-0.5 * (offsets / sigma) ** 2)
    kernel = (kernel / kernel.sum()).view(1, 1, -1)
    series = x.reshape(x.shape[0], -1).T.unsqueeze(1)  # [channels, 1, T]
    padded = F.pad(series, (radius, radius), mode="replicate")
    return F.conv1d(padded, kernel).squeeze(1).T.reshape(x.shape)


# ----------------------------------------------------------------------------------- validation
def _check_fps(fps) -> float:
    try:
        value = float(fps)
    except (TypeError, ValueError):
        raise MotionFileError(f"clip fps must be a number, got {fps!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise MotionFileError(f"clip fps must be positive and finite, got {value}")
    return value


def _validate_motion(skeleton: Skeleton, local_rotation: torch.Tensor, root_translation: torch.Tensor) -> None:
    num_joints = skeleton.num_joints
    if local_rotation.dim() != 3 or local_rotation.shape[1:] != (num_joints, 4):
        raise MotionFileError(
            f"rotation has shape {tuple(local_rotation.shape)}, expected [T, {num_joints}, 4] for a "
            f"{num_joints}-joint skeleton"
        )
    num_frames = local_rotation.shape[0]
    if num_frames < 1:
        raise MotionFileError("clip has no frames")
    if tuple(root_translation.shape) != (num_frames, 3):
        raise MotionFileError(f"root_translation has shape {tuple(root_translation.shape)}, expected [{num_frames}, 3]")
    for name, value in (("rotation", local_rotation), ("root_translation", root_translation)):
        if not torch.isfinite(value).all():
            raise MotionFileError(f"{name} contains NaN or inf")
    norms = local_rotation.norm(dim=-1)
    if ((norms - 1.0).abs() > 1e-3).any():
        raise MotionFileError(
            f"rotation holds quaternions that are not unit length (norms {norms.min().item():.4f} .. {norms.max().item():.4f})"
        )


def _validate_velocities(clip: MotionClip) -> None:
    expected = (clip.num_frames, clip.num_joints, 3)
    for name in ("global_velocity", "global_angular_velocity"):
        value = getattr(clip, name)
        if tuple(value.shape) != expected:
            raise MotionFileError(f"{name} has shape {tuple(value.shape)}, expected {list(expected)}")
        if not torch.isfinite(value).all():
            raise MotionFileError(f"{name} contains NaN or inf")
