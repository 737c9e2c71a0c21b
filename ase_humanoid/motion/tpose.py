"""T-pose alignment: the reference poses in which source and target look alike, and the
transfer of each source joint's rotation relative to its T-pose onto the target's T-pose.

For every mapped joint, the source rotation relative to its T-pose in the world frame,
delta(t) = R g_src(t) g_src_tpose^-1 R^-1 (R: source -> target axes), is applied to the target
body's T-pose orientation: g_tgt(t) = delta(t) g_tgt_tpose. Unmapped target bodies keep their
T-pose rotation relative to their parent.
"""

from __future__ import annotations

import torch

from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.motion.hinge_projection import limb_child, unit
from ase_humanoid.motion.joint_map import resolve_joint_map
from ase_humanoid.motion.retarget_config import RetargetConfig, source_to_target_rotation
from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.robots.kinematics import forward_kinematics
from ase_humanoid.utils import rotations as rot


SOURCE_TPOSE_MODES = ("first_frame", "rest", "auto")
TARGET_TPOSE_MODES = ("arms_out", "rest")


def transfer_rotations(
    src_global_rot: torch.Tensor,
    src_tpose_global_rot: torch.Tensor,
    tgt_tpose_local_rot: torch.Tensor,
    tgt_parents: torch.Tensor,
    src_idx: torch.Tensor,
    tgt_idx: torch.Tensor,
    root_rotation: torch.Tensor,
) -> torch.Tensor:
    """Target global rotations `[T, B, 4]` from source global rotations.

    src_global_rot [T, Js, 4], src_tpose_global_rot [Js, 4], tgt_tpose_local_rot [B, 4] (the
    target T-pose; the target root's entry is its global rotation), tgt_parents [B] (parents
    first), src_idx / tgt_idx [M] (mapped pairs), root_rotation [4]. Mapped bodies get
    delta * g_tgt_tpose with delta = R g_src g_src_tpose^-1 R^-1; the others follow their parent
    with their T-pose local rotation.
    """
    R = root_rotation.to(src_global_rot)
    delta = rot.quat_mul(src_global_rot[:, src_idx], rot.quat_inverse(src_tpose_global_rot[src_idx]))
    delta = rot.quat_mul(rot.quat_mul(R, delta), rot.quat_inverse(R))  # [T, M, 4]

    parents = [int(p) for p in tgt_parents]
    tpose_local = tgt_tpose_local_rot.to(src_global_rot)
    tpose_global = _chain_global(parents, tpose_local.unsqueeze(0))[0]  # [B, 4]
    mapped = {int(b): m for m, b in enumerate(tgt_idx)}
    T = src_global_rot.shape[0]
    out = []
    for b, p in enumerate(parents):
        if b in mapped:
            out.append(rot.quat_mul(delta[:, mapped[b]], tpose_global[b]))
        elif p < 0:
            out.append(tpose_global[b].expand(T, 4))
        else:
            out.append(rot.quat_mul(out[p], tpose_local[b]))
    return rot.quat_normalize(torch.stack(out, dim=1))


def _chain_global(parents: list[int], local_rot: torch.Tensor) -> torch.Tensor:
    """Global rotations [..., B, 4] from local ones (root entry = its global rotation)."""
    out = []
    for b, p in enumerate(parents):
        out.append(local_rot[..., b, :] if p < 0 else rot.quat_mul(out[p], local_rot[..., b, :]))
    return torch.stack(out, dim=-2)


def global_to_local_rotation(parents, global_rot: torch.Tensor) -> torch.Tensor:
    """Local rotations [..., B, 4] (root entry = its global rotation) from global ones."""
    parents = [int(p) for p in parents]
    local = [global_rot[..., b, :] if p < 0 else
             rot.quat_mul(rot.quat_inverse(global_rot[..., p, :]), global_rot[..., b, :])
             for b, p in enumerate(parents)]
    return rot.quat_normalize(torch.stack(local, dim=-2))


def shortest_arc(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Smallest rotation [..., 4] taking direction u [..., 3] onto direction v [..., 3]
    (opposite directions: a half turn about an axis perpendicular to u)."""
    u, v = unit(u), unit(v)
    axis = torch.linalg.cross(u, v, dim=-1)
    sin, cos = axis.norm(dim=-1), (u * v).sum(-1)
    fallback = torch.linalg.cross(u, torch.tensor([1.0, 0.0, 0.0], dtype=u.dtype).expand_as(u), dim=-1)
    fallback = torch.where(fallback.norm(dim=-1, keepdim=True) < 1e-6,
                           torch.linalg.cross(u, torch.tensor([0.0, 1.0, 0.0], dtype=u.dtype).expand_as(u), dim=-1),
                           fallback)
    axis = torch.where(sin.unsqueeze(-1) < 1e-9, fallback, axis)
    return rot.quat_from_axis_angle(unit(axis), torch.atan2(sin, cos))


def humanoid_tpose(robot: RobotDescription, mode: str = "arms_out", arm_bodies=None) -> torch.Tensor:
    """Local rotations [B, 4] of the target's T-pose.

    "rest": the MJCF rest pose (arms hanging). "arms_out": the rest pose with each arm body
    (default: the bodies named '*upper_arm') turned so its bone points straight out sideways,
    toward the side it hangs on: a T-pose like the mocap ones.
    """
    if mode not in TARGET_TPOSE_MODES:
        raise ConfigError(f"retarget key 'target_tpose': '{mode}' is neither a T-pose file nor one of "
                          f"{', '.join(TARGET_TPOSE_MODES)}")
    local = rot.quat_identity(robot.num_bodies, dtype=torch.float64)
    if mode == "rest":
        return local
    arms = [n for n in robot.body_names if n.endswith("upper_arm")] if arm_bodies is None else list(arm_bodies)
    for name in arms:
        b = robot.body_id(name)
        child = limb_child(robot, b)
        if child is None:
            raise ModelError(f"{robot.mjcf_path}: T-pose arm body '{name}' has no child to point sideways")
        bone = robot.local_translation[child].double()
        side = 1.0 if float(robot.local_translation[b, 1]) >= 0 else -1.0
        local[b] = shortest_arc(bone, torch.tensor([0.0, side, 0.0], dtype=torch.float64))
    return local


def auto_source_tpose(
    src_skeleton, robot: RobotDescription, config: RetargetConfig, tgt_tpose_local: torch.Tensor
) -> torch.Tensor:
    """A source T-pose [Js, 4] (global rotations, source frame) built from the skeleton's rest
    pose (all local rotations identity): each mapped joint with exactly one mapped child is
    turned so its bone (joint -> that child) points like the target's bone in the target T-pose;
    limb ends (no mapped child) turn with their mapped parent; branching joints stay. For sources whose rest pose is only roughly a T-pose (CMU: legs splayed 20 deg) and that
    have no T-pose frame."""
    names = list(src_skeleton.node_names)
    src_idx, tgt_idx = resolve_joint_map(config.joint_map, names, robot.body_names)
    dtype = torch.float64
    J = len(names)
    rest_rot = rot.quat_identity(J, dtype=dtype)
    rest_pos, _ = forward_kinematics(src_skeleton.parent_indices, src_skeleton.local_translation.to(dtype),
                                     rest_rot, torch.zeros(3, dtype=dtype), rot.quat_identity((), dtype=dtype))
    tgt_pos, _ = forward_kinematics(robot.parent_indices, robot.local_translation.to(dtype), tgt_tpose_local.to(dtype),
                                    torch.zeros(3, dtype=dtype), rot.quat_identity((), dtype=dtype))
    R_inv = rot.quat_inverse(source_to_target_rotation(config, dtype))
    tgt_parents = robot.parent_indices.tolist()
    mapped_tgt = {int(t): int(s) for s, t in zip(src_idx, tgt_idx)}

    def mapped_parent(t: int):
        p = tgt_parents[t]
        while p >= 0 and p not in mapped_tgt:
            p = tgt_parents[p]
        return p

    children = {t: [c for c in mapped_tgt if mapped_parent(c) == t] for t in mapped_tgt}
    tpose = rest_rot.clone()
    for t in sorted(mapped_tgt):  # parents before children
        s = mapped_tgt[t]
        if len(children[t]) == 1:
            c = children[t][0]
            src_bone = rest_pos[mapped_tgt[c]] - rest_pos[s]
            tgt_bone = rot.quat_rotate(R_inv, tgt_pos[c] - tgt_pos[t])
            if src_bone.norm() > 1e-9 and tgt_bone.norm() > 1e-9:
                tpose[s] = shortest_arc(src_bone, tgt_bone)
        elif not children[t] and mapped_parent(t) >= 0:
            # An end (hand, foot, head) turns with its limb, keeping its rest pose relative to it.
            tpose[s] = tpose[mapped_tgt[mapped_parent(t)]]
    return tpose


def target_tpose_local(robot: RobotDescription, target_tpose) -> torch.Tensor:
    if isinstance(target_tpose, str):
        return humanoid_tpose(robot, target_tpose)
    local = rot.quat_identity(robot.num_bodies, dtype=torch.float64)
    tp_names = list(target_tpose.skeleton.node_names)
    if tp_names[0] != robot.body_names[0]:
        raise ConfigError(f"target T-pose root '{tp_names[0]}' is not the humanoid's root '{robot.body_names[0]}'")
    tp_local = target_tpose.local_rotation[0].to(torch.float64)
    for b, name in enumerate(robot.body_names):
        if name in tp_names:
            local[b] = tp_local[tp_names.index(name)]
    return local
