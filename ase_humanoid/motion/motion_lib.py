"""MotionLib: reference clips packed on the device for sampling and interpolated state queries.

Every clip is converted once at load time (in float64 on the CPU) into the humanoid's own
coordinates, then all frames are concatenated into flat tensors `[F, ...]` (F = frames of all
clips) on the device. A query `(motion_id, time)` maps to two neighbouring frames of its clip and
a blend factor; positions and velocities are lerped, rotations slerped, and DoF positions are
recomputed from the slerped local rotations (lerping Euler angles would jump at +-pi wrap-arounds).

Frame conventions (all world frame, z up):
  root_pos [F, 3], root_rot [F, 4]             the root body's pose (xyzw)
  local_rot [F, B, 4]                           each body's rotation in its parent frame; the root
                                                slot is identity (the root's rotation is root_rot),
                                                as `dof_pos_to_local_rot` returns it
  body_pos [F, B, 3], body_rot [F, B, 4]        forward kinematics with the robot's offsets
  root_lin_vel, root_ang_vel [F, 3]             the clip's stored global velocities of the root
  body_lin_vel [F, B, 3]                        the clip's stored global velocities of every body
  joint_vel [F, D]                              spherical joint: child's angular velocity relative
                                                to its parent, in the child frame; hinge: its rate.
                                                From frame t to t + 1 (last frame repeats the one
                                                before), so slerping from a frame moves at exactly it
  dof_pos, dof_vel [F, D]                       MuJoCo hinge angles and rates
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.clip import PLAUSIBLE_FPS_RANGE
from ase_humanoid.motion.dataset import read_motion_entries
from ase_humanoid.motion.io import load_motion
from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.robots.kinematics import (
    dof_pos_to_local_rot,
    dof_vel_from_joint_vel,
    forward_kinematics,
    local_rot_to_dof_pos,
)
from ase_humanoid.utils import rotations as rot

# A clip's bone offsets may differ a little from the humanoid's (retargeting, rounding): FK uses
# the humanoid's, and differences above this many metres are worth a warning.
OFFSET_WARN_M = 0.01
# Local rotations the humanoid's hinges cannot reproduce (off-axis rotation of a hinge, any
# rotation of a welded body) beyond this angle (rad) are reported: the simulator will not match.
UNREPRESENTABLE_WARN_RAD = 1e-3


@dataclass
class MotionState:
    """Reference state of n queries (motion_id, time); everything world frame."""

    root_pos: torch.Tensor  # [n, 3]
    root_rot: torch.Tensor  # [n, 4] xyzw
    root_lin_vel: torch.Tensor  # [n, 3]
    root_ang_vel: torch.Tensor  # [n, 3]
    local_rot: torch.Tensor  # [n, B, 4] root slot identity
    dof_pos: torch.Tensor  # [n, D] simulator hinge angles
    dof_vel: torch.Tensor  # [n, D] simulator hinge rates
    joint_vel: torch.Tensor  # [n, D] AMP "DoF velocity" (see module docstring)
    key_body_pos: torch.Tensor | None  # [n, K, 3] (None: queried with body_states=False)
    body_pos: torch.Tensor | None  # [n, B, 3]
    body_lin_vel: torch.Tensor | None  # [n, B, 3]


# Per-frame tensors packed over all clips, in MotionLib attribute names.
_FRAME_FIELDS = (
    "root_pos", "root_rot", "root_lin_vel", "root_ang_vel", "local_rot", "body_pos", "body_rot",
    "body_lin_vel", "dof_pos", "joint_vel", "dof_vel",
)


class MotionLib:
    """Reference motions for one humanoid, packed on `device`.

    `motion_file`: one clip (e.g. poselib `.npy`) or a dataset YAML (see `motion/dataset.py`).
    `robot`: the humanoid; every clip's skeleton must have its body names in its order.
    Raises MotionFileError naming the file (and key / bodies) for bad input.
    """

    def __init__(self, motion_file, robot: RobotDescription, device="cpu", dtype=torch.float32):
        self.device = torch.device(device)
        self.dtype = dtype
        self.motion_file = Path(motion_file)
        entries = read_motion_entries(motion_file)
        robot64 = robot.to(dtype=torch.float64)
        clips = [convert_clip(load_motion(e.path), robot64, e.path) for e in entries]
        # The robot's tensors live next to the packed data so queries never move them.
        self.robot = robot.to(device=self.device, dtype=dtype)
        self.key_body_ids = torch.tensor(robot.key_body_ids, dtype=torch.long, device=self.device)
        self.motion_names = [e.path.stem for e in entries]
        self.motion_files = [e.path for e in entries]

        to_device = lambda x: x.to(device=self.device, dtype=dtype)  # noqa: E731
        num_frames = torch.tensor([c["num_frames"] for c in clips], dtype=torch.long)
        fps = torch.tensor([c["fps"] for c in clips], dtype=torch.float64)
        weights = torch.tensor([e.weight for e in entries], dtype=torch.float64)
        self.motion_num_frames = num_frames.to(self.device)  # [M]
        self.motion_start = (torch.cumsum(num_frames, 0) - num_frames).to(self.device)  # [M] first frame in F
        self.motion_fps = to_device(fps)  # [M]
        self.motion_dt = to_device(1.0 / fps)  # [M]
        self.motion_lengths = to_device((num_frames - 1) / fps)  # [M] seconds, (T - 1) / fps
        self.motion_weights = to_device(weights / weights.sum())  # [M] sampling probabilities
        for name in _FRAME_FIELDS:
            setattr(self, name, to_device(torch.cat([c[name] for c in clips], dim=0)))

    # ---- sizes and sampling -------------------------------------------------------------------

    @property
    def num_motions(self) -> int:
        return len(self.motion_names)

    @property
    def num_frames(self) -> int:
        """Total frames F over all clips."""
        return int(self.root_pos.shape[0])

    def get_motion_length(self, motion_ids: torch.Tensor) -> torch.Tensor:
        """Clip durations `[n]` in seconds for `motion_ids [n]`."""
        return self.motion_lengths[motion_ids]

    def sample_motions(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """`[n]` motion ids drawn with replacement by the dataset weights."""
        return torch.multinomial(self.motion_weights, n, replacement=True, generator=generator)

    def sample_time(self, motion_ids: torch.Tensor, truncate_time: float | None = None,
                    generator: torch.Generator | None = None) -> torch.Tensor:
        """Times `[n]` uniform in [0, length - truncate_time] (0 where the clip is shorter)."""
        length = self.motion_lengths[motion_ids]
        if truncate_time is not None:
            length = (length - truncate_time).clamp_min(0.0)
        u = torch.rand(length.shape, generator=generator, dtype=self.dtype, device=self.device)
        return u * length

    def packed_nbytes(self) -> int:
        """Bytes held by the packed per-frame and per-motion tensors."""
        names = _FRAME_FIELDS + ("motion_num_frames", "motion_start", "motion_fps", "motion_dt",
                                 "motion_lengths", "motion_weights")
        return sum(getattr(self, n).numel() * getattr(self, n).element_size() for n in names)

    # ---- queries ------------------------------------------------------------------------------

    def frame_blend(self, motion_ids: torch.Tensor, times: torch.Tensor):
        """Global frame indices f0, f1 `[n]` (into the packed tensors) and blend `[n]` in [0, 1].

        Times are clamped to [0, length]: beyond the end gives the last frame, negative the first.
        """
        num_frames = _take(self.motion_num_frames, motion_ids)
        frame = times.to(self.dtype).clamp_min(0.0) * _take(self.motion_fps, motion_ids)
        local0 = torch.minimum(frame.floor().long(), num_frames - 1)
        local1 = torch.minimum(local0 + 1, num_frames - 1)
        blend = (frame - local0.to(self.dtype)).clamp(0.0, 1.0)
        start = _take(self.motion_start, motion_ids)
        return start + local0, start + local1, blend

    def get_motion_state(self, motion_ids: torch.Tensor, times: torch.Tensor,
                         body_states: bool = True) -> MotionState:
        """Interpolated reference state for `motion_ids [n]` at `times [n]` (seconds).

        `body_states=False` leaves key_body_pos, body_pos and body_lin_vel None (the envs need
        only the root and DoF state; their body states come from the simulator's kinematics).
        """
        f0, f1, blend = self.frame_blend(motion_ids, times)
        w1 = blend.unsqueeze(-1)  # [n, 1]
        w1_bodies = w1.unsqueeze(-1)  # [n, 1, 1]

        def lerp(x, w):
            a = _take(x, f0)
            return a + w * (_take(x, f1) - a)

        local_rot = rot.slerp(_take(self.local_rot, f0), _take(self.local_rot, f1), w1_bodies)
        joint_vel = lerp(self.joint_vel, w1)
        dof_pos = local_rot_to_dof_pos(self.robot, local_rot)
        body_pos = lerp(self.body_pos, w1_bodies) if body_states else None
        return MotionState(
            root_pos=lerp(self.root_pos, w1),
            root_rot=rot.slerp(_take(self.root_rot, f0), _take(self.root_rot, f1), w1),
            root_lin_vel=lerp(self.root_lin_vel, w1),
            root_ang_vel=lerp(self.root_ang_vel, w1),
            local_rot=local_rot,
            dof_pos=dof_pos,
            dof_vel=dof_vel_from_joint_vel(self.robot, dof_pos, joint_vel),
            joint_vel=joint_vel,
            key_body_pos=_take(body_pos, self.key_body_ids, dim=1) if body_states else None,
            body_pos=body_pos,
            body_lin_vel=lerp(self.body_lin_vel, w1_bodies) if body_states else None,
        )

    def __repr__(self) -> str:
        return (f"MotionLib({self.motion_file}, robot={self.robot.name}, motions={self.num_motions}, "
                f"frames={self.num_frames}, device={self.device})")


def _take(x: torch.Tensor, ids: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """`x` indexed by `ids` along `dim`: index_select (cheaper than advanced indexing) for 1-D ids."""
    if isinstance(ids, torch.Tensor) and ids.dim() == 1:
        return x.index_select(dim, ids)
    return x[(slice(None),) * dim + (ids,)]


# ---- loading and converting one clip ------------------------------------------------------------


def convert_clip(clip, robot: RobotDescription, path) -> dict:
    """One clip -> per-frame tensors (see the module docstring) in `robot`'s dtype, plus num_frames, fps.

    `clip`: a MotionClip on the robot's skeleton (MotionClip validates frames, fps and velocities).
    Raises MotionFileError naming `path` if the skeleton differs from the robot's.
    """
    check_skeleton(clip.skeleton, robot, path)
    check_reference_clip(clip, path)
    dtype = robot.local_translation.dtype
    as_t = lambda x: torch.as_tensor(x).to(dtype=dtype)  # noqa: E731
    local_rot = rot.quat_normalize(as_t(clip.local_rotation))  # [T, B, 4]
    num_frames = int(local_rot.shape[0])
    fps = float(clip.fps)
    root_pos = as_t(clip.root_translation)  # [T, 3]
    root_rot = local_rot[:, 0].clone()
    local_rot[:, 0] = rot.quat_identity((), dtype=dtype)
    body_pos, body_rot = forward_kinematics(robot.parent_indices, robot.local_translation, local_rot, root_pos, root_rot)

    body_lin_vel = as_t(clip.global_velocity)  # [T, B, 3] world frame
    root_ang_vel = as_t(clip.global_angular_velocity)[:, 0]  # [T, 3] world frame
    dof_pos = local_rot_to_dof_pos(robot, local_rot)
    _warn_unrepresentable(local_rot, dof_pos_to_local_rot(robot, dof_pos), robot, path)
    joint_vel = joint_vel_from_local_rot(robot, local_rot, fps)
    return {
        "num_frames": num_frames,
        "fps": fps,
        "root_pos": root_pos,
        "root_rot": root_rot,
        "root_lin_vel": body_lin_vel[:, 0],
        "root_ang_vel": root_ang_vel,
        "local_rot": local_rot,
        "body_pos": body_pos,
        "body_rot": body_rot,
        "body_lin_vel": body_lin_vel,
        "dof_pos": dof_pos,
        "joint_vel": joint_vel,
        "dof_vel": dof_vel_from_joint_vel(robot, dof_pos, joint_vel),
    }


# Plausible ranges of a reference clip in the robot's units (metres, seconds): a root 1e30 m up
# gives non-finite physics at every reset, a one-frame clip has no motion for AMP to imitate.
MAX_ROOT_DISTANCE_M = 1000.0
MIN_REFERENCE_FRAMES = 2


def check_reference_clip(clip, path) -> None:
    """Raise MotionFileError naming `path` if the clip cannot serve as training/reference motion."""
    if clip.num_frames < MIN_REFERENCE_FRAMES:
        raise MotionFileError(f"{path}: clip has {clip.num_frames} frame(s); a reference clip needs at least "
                              f"{MIN_REFERENCE_FRAMES} (a SkeletonState is one pose, not a motion)")
    low, high = PLAUSIBLE_FPS_RANGE
    if not low <= float(clip.fps) <= high:
        raise MotionFileError(f"{path}: clip fps is {clip.fps}, expected {low:g} to {high:g}")
    farthest = float(clip.root_translation.abs().max())
    if farthest > MAX_ROOT_DISTANCE_M:
        raise MotionFileError(f"{path}: root position reaches {farthest:g} m from the origin; expected within "
                              f"+-{MAX_ROOT_DISTANCE_M:g} m (wrong units or a corrupt file?)")


def check_skeleton(skeleton, robot: RobotDescription, path) -> None:
    """Refuse a clip whose bodies are not the robot's (names, order, parents); warn on offsets > 1 cm."""
    clip_names = list(skeleton.node_names)
    robot_names = list(robot.body_names)
    if clip_names != robot_names:
        missing = [n for n in robot_names if n not in clip_names]
        extra = [n for n in clip_names if n not in robot_names]
        problems = []
        if missing:
            problems.append(f"missing bodies {missing}")
        if extra:
            problems.append(f"extra bodies {extra}")
        if not missing and not extra:
            moved = [f"#{i}: clip '{c}' vs humanoid '{r}'" for i, (c, r) in enumerate(zip(clip_names, robot_names)) if c != r]
            problems.append(f"bodies out of order ({'; '.join(moved)})")
        raise MotionFileError(
            f"{path}: clip skeleton does not match humanoid '{robot.name}': {', '.join(problems)}. "
            f"Expected bodies in this order: {robot_names}. Retarget the clip onto this humanoid first."
        )
    clip_parents = [int(p) for p in torch.as_tensor(skeleton.parent_indices).reshape(-1)]
    robot_parents = [int(p) for p in robot.parent_indices]
    if clip_parents != robot_parents:
        wrong = [n for n, c, r in zip(robot_names, clip_parents, robot_parents) if c != r]
        raise MotionFileError(f"{path}: clip skeleton does not match humanoid '{robot.name}': "
                              f"bodies with a different parent: {wrong}")
    offsets = torch.as_tensor(skeleton.local_translation).to(torch.float64)
    diff = (offsets - robot.local_translation.to(torch.float64)).norm(dim=-1)
    diff[0] = 0.0  # the root's entry is its rest position, not a bone
    far = [f"{n} ({d * 100:.1f} cm)" for n, d in zip(robot_names, diff.tolist()) if d > OFFSET_WARN_M]
    if far:
        warnings.warn(f"{path}: clip bone offsets differ from humanoid '{robot.name}' by more than "
                      f"{OFFSET_WARN_M * 100:.0f} cm: {', '.join(far)}; the humanoid's offsets are used", stacklevel=3)


def joint_vel_from_local_rot(robot: RobotDescription, local_rot: torch.Tensor, fps: float) -> torch.Tensor:
    """Joint velocities `[T, D]` from consecutive local rotations `[T, B, 4]`.

    Spherical: exp map of q_t^-1 q_{t+1} times fps (child frame); hinge: its component along the
    hinge axis. The last frame repeats the one before (zero for a single-frame clip).
    """
    num_frames = local_rot.shape[0]
    rel = torch.zeros(*local_rot.shape[:-1], 3, dtype=local_rot.dtype)  # [T, B, 3]
    if num_frames > 1:
        step = rot.quat_mul(rot.quat_conjugate(local_rot[:-1]), local_rot[1:])
        rel[:-1] = rot.quat_to_exp_map(step) * fps
        rel[-1] = rel[-2]
    joint_vel = torch.zeros(num_frames, robot.num_dofs, dtype=local_rot.dtype)
    if robot.spherical_dof_ids.numel():
        joint_vel[:, robot.spherical_dof_ids] = rel[:, robot.spherical_body_ids]
    if robot.hinge_dof_ids.numel():
        axes = robot.dof_axes[robot.hinge_dof_ids].to(local_rot.dtype)  # [H, 3]
        joint_vel[:, robot.hinge_dof_ids] = (rel[:, robot.hinge_body_ids] * axes).sum(-1)
    return joint_vel


def _warn_unrepresentable(local_rot, reproduced, robot: RobotDescription, path) -> None:
    error = rot.quat_angle_between(local_rot, reproduced).amax(dim=0)  # [B]
    bad = [f"{n} ({e:.3f} rad)" for n, e in zip(robot.body_names, error.tolist()) if e > UNREPRESENTABLE_WARN_RAD]
    if bad:
        warnings.warn(f"{path}: local rotations that humanoid '{robot.name}' joints cannot reproduce "
                      f"(off-axis hinge or welded-body rotation), max error: {', '.join(bad)}", stacklevel=3)

