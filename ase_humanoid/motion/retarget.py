"""T-pose retargeting of a source motion clip onto a humanoid's skeleton: the pipeline.

The idea (the one poselib's retargeting uses, written here from scratch): a source skeleton and
the target humanoid are each put in a reference pose in which they look alike (both T-poses);
each mapped joint's rotation relative to its T-pose is applied to the target body's T-pose
orientation. Bone lengths come from the target, so only orientations travel; the root
translation is the source root position scaled to metres and rotated into the target's axes.
The result is then made simulator-ready. One module per step:

- `retarget_config.py`: `RetargetConfig`, the source -> target axis change
- `joint_map.py`: joint maps (checked, mirrored, chosen per source skeleton)
- `tpose.py`: T-poses and the rotation transfer (`transfer_rotations`)
- `hinge_projection.py`: elbows/knees made exact 1-DoF rotations, welded bodies identity
- `ground_alignment.py`: one constant height offset from collision geoms or body origins
- `retarget_settings.py`: presets, config files and source files (tools/retarget_motion.py)
- resampling and trimming: `MotionClip.resample` / `trim` (clip.py), velocities recomputed.

This module keeps the public entry points (`retarget_motion`, `retarget_clip`,
`retarget_from_settings`) and re-exports the building blocks, so
`from ase_humanoid.motion.retarget import ...` reaches all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ase_humanoid.errors import ConfigError
from ase_humanoid.motion.ground_alignment import GeomSet, ground_shift, lowest_geom_height, robot_geoms
from ase_humanoid.motion.hinge_projection import (
    HINGE_MIN_BEND_DEG,
    HINGE_PLANE_REJECT_DEG,
    HINGE_PLANE_TRUST_DEG,
    project_hinges,
    robot_local_rotation,
)
from ase_humanoid.motion.joint_map import choose_joint_map, mirror_joint_map, resolve_joint_map
from ase_humanoid.motion.retarget_config import (
    GROUND_MODES,
    UP_AXES,
    Y_UP_TO_Z_UP,
    RetargetConfig,
    source_to_target_rotation,
    up_rotation,
)
from ase_humanoid.motion.retarget_settings import (
    CONFIG_KEYS,
    PER_FORMAT_KEYS,
    PRESET_DIR,
    PROJECT_ROOT,
    SOURCE_FORMATS,
    TARGETS,
    check_resampled_size,
    load_retarget_settings,
    load_source,
    output_fps,
    per_format_value,
    preset_names,
    resolve_settings_path,
    source_format,
)
from ase_humanoid.motion.tpose import (
    SOURCE_TPOSE_MODES,
    TARGET_TPOSE_MODES,
    auto_source_tpose,
    global_to_local_rotation,
    humanoid_tpose,
    shortest_arc,
    target_tpose_local,
    transfer_rotations,
)
from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.robots.kinematics import dof_pos_to_local_rot, forward_kinematics, local_rot_to_dof_pos
from ase_humanoid.utils import rotations as rot

__all__ = [
    "CONFIG_KEYS", "GROUND_MODES", "HINGE_MIN_BEND_DEG", "HINGE_PLANE_REJECT_DEG", "HINGE_PLANE_TRUST_DEG",
    "PER_FORMAT_KEYS", "PRESET_DIR", "SOURCE_FORMATS", "SOURCE_TPOSE_MODES", "TARGETS", "TARGET_TPOSE_MODES",
    "UP_AXES", "Y_UP_TO_Z_UP", "GeomSet", "RetargetConfig", "RetargetResult", "auto_source_tpose",
    "choose_joint_map", "dof_round_trip_error", "global_to_local_rotation", "ground_shift", "humanoid_tpose",
    "joint_limit_report", "load_retarget_settings", "load_source", "lowest_geom_height", "mirror_joint_map",
    "preset_names", "project_hinges", "resolve_joint_map", "retarget_clip", "retarget_from_settings",
    "retarget_motion", "robot_geoms", "robot_local_rotation", "shortest_arc", "source_format",
    "source_to_target_rotation", "transfer_rotations",
]


def joint_limit_report(robot: RobotDescription, dof_pos: torch.Tensor, tolerance_deg: float = 1.0) -> dict:
    """Per-DoF limit violations of `dof_pos [T, D]`: {dof name: (fraction of frames outside the
    range by more than tolerance, worst excess in degrees)}, only DoFs that violate."""
    lower = robot.dof_limits_lower.to(dof_pos)
    upper = robot.dof_limits_upper.to(dof_pos)
    excess = torch.maximum(lower - dof_pos, dof_pos - upper).clamp_min(0)  # [T, D]
    tol = math.radians(tolerance_deg)
    report = {}
    for d, name in enumerate(robot.dof_names):
        bad = excess[:, d] > tol
        if bad.any():
            report[name] = (float(bad.double().mean()), math.degrees(float(excess[:, d].max())))
    return report


@dataclass
class RetargetResult:
    """Output of `retarget_motion` on the target humanoid (float32).

    local_rotation [T, B, 4] (root entry = root global rotation), root_translation [T, 3],
    dof_pos [T, D], body_pos [T, B, 3], body_rot [T, B, 4], fps, ground_shift (metres added to
    the root height; its mean over frames), ground_drift (its range over frames: 0 but with
    ground="track"), limit_report (see joint_limit_report).
    """

    local_rotation: torch.Tensor
    root_translation: torch.Tensor
    dof_pos: torch.Tensor
    body_pos: torch.Tensor
    body_rot: torch.Tensor
    fps: float
    ground_shift: float
    limit_report: dict
    ground_drift: float = 0.0


def retarget_motion(
    src_names,
    src_global_rot: torch.Tensor,
    src_root_pos: torch.Tensor,
    src_tpose_names,
    src_tpose_global_rot: torch.Tensor,
    robot: RobotDescription,
    config: RetargetConfig,
    fps: float,
    tgt_tpose_local_rot: torch.Tensor | None = None,
    geoms: GeomSet | None = None,
) -> RetargetResult:
    """Retarget one source motion (already resampled and trimmed) onto `robot`.

    src_names [Js], src_global_rot [T, Js, 4], src_root_pos [T, 3] (source root joint world
    position, source units), src_tpose_names / src_tpose_global_rot [Jt, 4]: the source T-pose
    (matched to the clip by joint name; only mapped joints need to be present),
    tgt_tpose_local_rot [B, 4]: the target T-pose (default: identity, the MJCF rest pose).
    """
    src_names, tpose_names = list(src_names), list(src_tpose_names)
    src_idx, tgt_idx = resolve_joint_map(config.joint_map, src_names, robot.body_names)
    missing = [s for s in config.joint_map if s not in tpose_names]
    if missing:
        raise ConfigError(f"source T-pose lacks mapped joint(s) {missing}; it has: {', '.join(tpose_names)}")
    dtype = torch.float64
    src_global_rot = src_global_rot.to(dtype)
    tpose = torch.zeros(len(src_names), 4, dtype=dtype)
    tpose[:, 3] = 1.0
    for s in config.joint_map:
        tpose[src_names.index(s)] = src_tpose_global_rot[tpose_names.index(s)].to(dtype)
    if tgt_tpose_local_rot is None:
        tgt_tpose_local_rot = rot.quat_identity(robot.num_bodies, dtype=dtype)
    R = source_to_target_rotation(config, dtype)

    g = transfer_rotations(src_global_rot, tpose, tgt_tpose_local_rot.to(dtype), robot.parent_indices,
                           src_idx, tgt_idx, R)
    hinge_angle = None
    if config.project_hinges:
        g, hinge_angle = project_hinges(robot, g)
    local = robot_local_rotation(robot, g, hinge_angle)
    dof_pos = local_rot_to_dof_pos(robot, local)
    limit_report = joint_limit_report(robot, dof_pos)  # before any clamping: what the take asked for
    if config.clamp_limits:
        lower = robot.dof_limits_lower.to(dtype)
        upper = robot.dof_limits_upper.to(dtype)
        dof_pos = torch.minimum(torch.maximum(dof_pos, lower), upper)
        clamped = dof_pos_to_local_rot(robot, dof_pos)
        local = torch.cat([local[:, :1], clamped[:, 1:]], dim=1)  # the root keeps its rotation

    root_src = rot.quat_rotate(R.expand(src_root_pos.shape[0], 4), src_root_pos.to(dtype) * config.scale)
    identity = rot.quat_identity(local.shape[0], dtype=dtype)
    body_pos, body_rot = forward_kinematics(robot.parent_indices, robot.local_translation.to(dtype), local,
                                            root_src, identity)
    shift = ground_shift(robot, config, body_pos, body_rot, geoms, fps=fps).to(dtype)  # [T]
    root = root_src.clone()
    root[:, 2] += shift
    body_pos = body_pos.clone()
    body_pos[..., 2] += shift[:, None]

    f32 = lambda x: x.to(torch.float32)  # noqa: E731
    return RetargetResult(
        local_rotation=f32(local),
        root_translation=f32(root),
        dof_pos=f32(dof_pos),
        body_pos=f32(body_pos),
        body_rot=f32(body_rot),
        fps=float(fps),
        ground_shift=float(shift.mean()),
        ground_drift=float(shift.max() - shift.min()),
        limit_report=limit_report,
    )


def dof_round_trip_error(robot: RobotDescription, local_rot: torch.Tensor) -> float:
    """Largest angle (rad) between the local rotations and those rebuilt from their dof positions
    (0 when every body's rotation is exactly what its joints can do)."""
    local_rot = rot.quat_normalize(local_rot.double())
    dof = local_rot_to_dof_pos(robot, local_rot)
    rebuilt = dof_pos_to_local_rot(robot, dof)
    return float(rot.quat_angle_between(rebuilt[..., 1:, :], local_rot[..., 1:, :]).max())


def retarget_clip(
    source,
    robot: RobotDescription,
    config: RetargetConfig,
    source_tpose="first_frame",
    target_tpose="arms_out",
    tpose_up: str | None = None,
    fps: float | None = None,
    start: int = 0,
    end: int | None = None,
):
    """Retarget a source MotionClip onto `robot`; returns (MotionClip on the robot, RetargetResult).

    source_tpose: "first_frame" (frame 0 of the untrimmed source), "rest" (all local rotations
        identity), "auto" (see auto_source_tpose) or a MotionClip holding the T-pose (frame 0;
        joints matched by name) whose up axis is `tpose_up` (default: the source's).
    target_tpose: "arms_out", "rest" (see humanoid_tpose) or a MotionClip on the target's bodies
        (matched by name; bodies it lacks keep the identity).
    fps: output frame rate (default: the source's); start / end: frames of the resampled clip
        to keep (end exclusive, Python slice semantics), i.e. counted at the output rate.
    """
    from ase_humanoid.motion.clip import MotionClip
    from ase_humanoid.motion.skeleton import Skeleton

    dtype = torch.float64
    tgt_tpose_local = target_tpose_local(robot, target_tpose)
    names = list(source.skeleton.node_names)
    if isinstance(source_tpose, str):
        if source_tpose == "first_frame":
            tpose_names, tpose_global = names, source.global_rotation[0].to(dtype)
        elif source_tpose == "rest":
            tpose_names, tpose_global = names, rot.quat_identity(len(names), dtype=dtype)
        elif source_tpose == "auto":
            tpose_names, tpose_global = names, auto_source_tpose(source.skeleton, robot, config, tgt_tpose_local)
        else:
            raise ConfigError(f"retarget key 'tpose': '{source_tpose}' is neither a T-pose file nor one of "
                              f"{', '.join(SOURCE_TPOSE_MODES)}")
    else:
        tpose_names = list(source_tpose.skeleton.node_names)
        tpose_global = source_tpose.global_rotation[0].to(dtype)
        up = tpose_up or config.source_up
        if up not in UP_AXES:
            raise ConfigError(f"retarget key 'tpose_up': '{up}' is not one of {', '.join(UP_AXES)}")
        # Express the T-pose in the source's world axes.
        change = rot.quat_mul(rot.quat_inverse(up_rotation(config.source_up, dtype)), up_rotation(up, dtype))
        tpose_global = rot.quat_mul(change, tpose_global)

    clip = source.to(dtype=dtype)
    if fps is not None and float(fps) != clip.fps:
        check_resampled_size(clip, fps)
        clip = clip.resample(fps)
    clip = clip.trim(start, end)
    result = retarget_motion(names, clip.global_rotation, clip.global_translation[:, 0], tpose_names, tpose_global,
                             robot, config, clip.fps, tgt_tpose_local_rot=tgt_tpose_local)
    skeleton = Skeleton(robot.body_names, robot.parent_indices, robot.local_translation.to(torch.float32))
    out = MotionClip(skeleton, result.local_rotation, result.root_translation, clip.fps)
    return out, result


def retarget_from_settings(settings: dict):
    """Run a whole retargeting job from merged settings (see load_retarget_settings).

    Returns (MotionClip on the target humanoid, RetargetResult, RobotDescription). Does not
    write anything.
    """
    from ase_humanoid.motion.poselib_npy import load_poselib
    from ase_humanoid.robots.description import load_robot

    if not settings.get("source"):
        raise ConfigError("retarget key 'source' is missing: the motion file to retarget")
    fmt = source_format(settings["source"])
    target = settings.get("target", "amp_humanoid")
    if target not in TARGETS:
        raise ConfigError(f"retarget key 'target': '{target}' is not one of {', '.join(TARGETS)}")
    fps = output_fps(settings.get("fps"))  # before the source is read: a bad rate fails fast
    robot = load_robot(target)
    source = load_source(settings["source"], settings.get("asf"))
    config = RetargetConfig(
        joint_map=choose_joint_map(settings, source.skeleton.node_names),
        root_rotation=tuple(float(x) for x in settings.get("root_rotation", (0.0, 0.0, 0.0, 1.0))),
        scale=float(per_format_value(settings, "scale", fmt, 1.0)),
        root_height_offset=float(per_format_value(settings, "root_height_offset", fmt, 0.0)),
        ground=str(per_format_value(settings, "ground", fmt, "geoms")),
        source_up=str(per_format_value(settings, "source_up", fmt, "z")),
        project_hinges=bool(settings.get("project_hinges", True)),
        clamp_limits=bool(settings.get("clamp_limits", False)),
    )
    tpose = per_format_value(settings, "tpose", fmt, "first_frame")
    if isinstance(tpose, str) and tpose not in SOURCE_TPOSE_MODES:
        tpose = load_poselib(resolve_settings_path(tpose, PROJECT_ROOT), dtype=torch.float64)
    target_tpose = settings.get("target_tpose", "arms_out")
    if isinstance(target_tpose, str) and target_tpose not in TARGET_TPOSE_MODES:
        target_tpose = load_poselib(resolve_settings_path(target_tpose, PROJECT_ROOT), dtype=torch.float64)
    tpose_up = per_format_value(settings, "tpose_up", fmt, None)
    start = int(settings.get("start") or 0)
    end = settings.get("end")
    clip, result = retarget_clip(source, robot, config, source_tpose=tpose, target_tpose=target_tpose,
                                 tpose_up=tpose_up, fps=fps, start=start,
                                 end=int(end) if end is not None else None)
    return clip, result, robot
