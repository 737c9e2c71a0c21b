"""Hinge projection: make a transferred pose representable by the humanoid's joints.

Each 1-DoF joint (elbow, knee) can only rotate about its axis. The bend plane is recovered from the
parent and child bone directions and the parent (upper arm, thigh) takes the twist, so elbow/knee
and wrist/ankle positions stay where the rotation transfer put them and the hinge angle is exact.
Bodies without joints (AMP hands, sword, shield) get the identity local rotation.
"""

from __future__ import annotations

import math

import torch

from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.utils import rotations as rot


# Hinge projection: the bend plane of a limb is trusted when the limb is bent at least this much
# and the plane normal is within HINGE_PLANE_TRUST_DEG of the hinge axis the transfer produced;
# below that the projection blends smoothly toward the transferred hinge axis (straight limbs
# have no defined bend plane).
HINGE_MIN_BEND_DEG = 10.0
HINGE_PLANE_TRUST_DEG = 30.0
HINGE_PLANE_REJECT_DEG = 60.0


def unit(v: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """v [..., 3] scaled to unit length (zero vectors stay zero)."""
    return v / v.norm(dim=-1, keepdim=True).clamp_min(eps)


def _frame_rotation(u_from, v_from, u_to, v_to) -> torch.Tensor:
    """Rotation [..., 4] taking the orthonormal pair (u_from, v_from) onto (u_to, v_to)."""
    m_from = torch.stack([u_from, v_from, torch.linalg.cross(u_from, v_from, dim=-1)], dim=-1)
    m_to = torch.stack([u_to, v_to, torch.linalg.cross(u_to, v_to, dim=-1)], dim=-1)
    m_from = m_from.expand_as(m_to)
    return rot.quat_normalize(rot.matrix_to_quat(m_to @ m_from.transpose(-1, -2)))


def _twist_about(q: torch.Tensor, axis: torch.Tensor) -> torch.Tensor:
    """Angle [...] of the twist of q about the unit axis (swing-twist decomposition)."""
    return rot.normalize_angle(2.0 * torch.atan2((q[..., :3] * axis).sum(-1), q[..., 3]))


def limb_child(robot: RobotDescription, body: int) -> int | None:
    """The child of `body` farthest from it (the limb's continuation), or None for a leaf."""
    children = [b for b, p in enumerate(robot.parent_indices.tolist()) if p == body]
    if not children:
        return None
    lengths = robot.local_translation[children].norm(dim=-1)
    return children[int(lengths.argmax())]


def project_hinges(robot: RobotDescription, global_rot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Make every 1-DoF joint's local rotation a pure rotation about its axis.

    global_rot [T, B, 4] -> (global_rot [T, B, 4], hinge_angle [T, H]) for robot.hinge_body_ids.

    For a hinge body c with parent p and limb continuation h (the child of c farthest away):
    the transferred pose gives the parent bone direction d1 = g_p t_c and the child bone
    direction d2 = g_c t_h. A hinge about axis a bends the limb in the plane normal to a, so
    the world hinge axis is taken as the bend-plane normal (d1 x d2, oriented like the
    transferred axis g a) and the parent is re-oriented to carry t_c onto d1 and a onto that
    axis; the hinge angle is the signed angle from d1 to d2 about it. Both bone directions are
    kept, so the joint (elbow/knee) and the limb end (wrist/ankle) stay in place; what changes
    is the roll of the parent about its own bone (the forearm/shin twist folded into it). When
    the limb is nearly straight or bent across the hinge (no usable bend plane), the axis
    blends toward the transferred one and the off-plane part of the bend is dropped. The
    global rotations of all other bodies are unchanged. A leaf hinge keeps the twist part of
    its local rotation and gives the swing part to its parent (its own orientation is kept).
    """
    g = global_rot.clone()
    parents = robot.parent_indices.tolist()
    dtype = g.dtype
    angles = []
    for c, d in zip(robot.hinge_body_ids.tolist(), robot.hinge_dof_ids.tolist()):
        p = parents[c]
        a = unit(robot.dof_axes[d].to(dtype))
        t_c = robot.local_translation[c].to(dtype)
        h = limb_child(robot, c)
        t_h = robot.local_translation[h].to(dtype) if h is not None else None
        perpendicular = (
            t_h is not None and t_c.norm() > 1e-6 and t_h.norm() > 1e-6
            and abs(float(unit(t_c) @ a)) < 1e-3 and abs(float(unit(t_h) @ a)) < 1e-3
        )
        if not perpendicular:
            angles.append(_project_leaf_hinge(g, p, c, a))
            continue
        u_c, u_h = unit(t_c), unit(t_h)
        rest_angle = torch.atan2(torch.linalg.cross(u_c, u_h, dim=-1) @ a, u_c @ u_h)

        d1 = rot.quat_rotate(g[:, p], u_c.expand_as(g[:, p, :3]))
        d2 = rot.quat_rotate(g[:, c], u_h.expand_as(g[:, c, :3]))
        # The transferred hinge axis, from both sides of the joint, made perpendicular to d1.
        a_ref = rot.quat_rotate(g[:, c], a.expand_as(d1)) + rot.quat_rotate(g[:, p], a.expand_as(d1))
        a_ref = unit(a_ref - (a_ref * d1).sum(-1, keepdim=True) * d1)
        normal = torch.linalg.cross(d1, d2, dim=-1)
        sin_bend = normal.norm(dim=-1, keepdim=True)
        n_hat = normal / sin_bend.clamp_min(1e-12)
        agree = (n_hat * a_ref).sum(-1, keepdim=True)
        trust = ((agree.abs() - math.cos(math.radians(HINGE_PLANE_REJECT_DEG)))
                 / (math.cos(math.radians(HINGE_PLANE_TRUST_DEG)) - math.cos(math.radians(HINGE_PLANE_REJECT_DEG))))
        weight = trust.clamp(0, 1) * (sin_bend / math.sin(math.radians(HINGE_MIN_BEND_DEG))).clamp(0, 1)
        axis = unit(weight * torch.sign(agree) * n_hat + (1 - weight) * a_ref)
        axis = unit(axis - (axis * d1).sum(-1, keepdim=True) * d1)

        bend = torch.atan2((normal * axis).sum(-1), (d1 * d2).sum(-1))
        theta = rot.normalize_angle(bend - rest_angle)
        g_p = _frame_rotation(u_c, a, d1, axis)
        g[:, p] = g_p
        g[:, c] = rot.quat_mul(g_p, rot.quat_from_axis_angle(a.expand_as(d1), theta))
        angles.append(theta)
    if not angles:
        return g, torch.zeros(g.shape[0], 0, dtype=dtype, device=g.device)
    return g, torch.stack(angles, dim=-1)


def _project_leaf_hinge(g, p, c, a) -> torch.Tensor:
    """Swing-twist split of a hinge without a usable limb continuation; edits g in place."""
    local = rot.quat_mul(rot.quat_inverse(g[:, p]), g[:, c])
    theta = _twist_about(local, a)
    twist = rot.quat_from_axis_angle(a.expand(*theta.shape, 3), theta)
    swing = rot.quat_mul(local, rot.quat_inverse(twist))
    g[:, p] = rot.quat_normalize(rot.quat_mul(g[:, p], swing))
    g[:, c] = rot.quat_normalize(rot.quat_mul(g[:, p], twist))
    return theta


def robot_local_rotation(robot: RobotDescription, global_rot: torch.Tensor, hinge_angle: torch.Tensor | None = None):
    """Local rotations [T, B, 4] representable by the robot's joints, from global rotations.

    Bodies without joints get the identity (they follow their parent); hinge bodies get the
    exact axis rotation for `hinge_angle` [T, H] when given. Globals of descendants are
    preserved where their joints allow.
    """
    parents = robot.parent_indices.tolist()
    welded = set(range(1, robot.num_bodies)) - set(robot.dof_body_ids)
    hinge_slot = {b: k for k, b in enumerate(robot.hinge_body_ids.tolist())}
    hinge_axes = robot.dof_axes[robot.hinge_dof_ids].to(global_rot.dtype)
    local, actual = [], []
    for b, p in enumerate(parents):
        if p < 0:
            q = global_rot[:, b]
        elif b in welded:
            q = rot.quat_identity(global_rot.shape[0], dtype=global_rot.dtype, device=global_rot.device)
        elif b in hinge_slot and hinge_angle is not None:
            k = hinge_slot[b]
            q = rot.quat_from_axis_angle(hinge_axes[k].expand(global_rot.shape[0], 3), hinge_angle[:, k])
        else:
            q = rot.quat_mul(rot.quat_inverse(actual[p]), global_rot[:, b])
        q = rot.quat_normalize(q)
        local.append(q)
        actual.append(q if p < 0 else rot.quat_mul(actual[p], q))
    return torch.stack(local, dim=1)
