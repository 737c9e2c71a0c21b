"""Batched humanoid kinematics in the simulator's DoF coordinates (MuJoCo hinge angles).

A spherical joint is three hinges about the child's x, y, z axes at its origin, so its local
rotation is Rx(a) Ry(b) Rz(c) (intrinsic Euler XYZ); a single hinge rotates about its axis. Body
frames have identity rest orientation, so a body's pose in its parent is (local_translation,
local_rot). Everything works on float32 or float64 tensors with any leading batch shape; the
robot's tensors are cast to the input's dtype and device.
"""

from __future__ import annotations

import functools
import math

import torch

from ase_humanoid.robots.articulation import (  # noqa: F401  (re-exported: the one-pass kinematics)
    ArticulationState,
    articulation_state,
    body_state_from_qpos,
    joint_local_rotations,
    joint_rates,
)
from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.robots.tree import TreeLevels, broadcast_lead, joint_rows, tree_levels
from ase_humanoid.utils import rotations as rot

# Below this |cos(b)| (b within ~0.6 deg of +-90 deg, Euler gimbal lock) the Euler-rate inverse
# divides by a clamped cos(b) instead: the result stays finite (rates at most ~100x the angular
# speed) and is exact everywhere else.
GIMBAL_COS_EPS = 1e-2


def _to_level_order(x: torch.Tensor, levels: TreeLevels) -> torch.Tensor:
    """[n, B, k] in body order -> [B, n, k] in level order (contiguous)."""
    return x.transpose(0, 1).index_select(0, levels.order)


def _from_level_order(x: torch.Tensor, levels: TreeLevels, lead: tuple) -> torch.Tensor:
    """[B, n, k] in level order -> [*lead, B, k] in body order. A transposed view of a body-major
    tensor (one cheap row gather; a contiguous env-major copy would cost several times more)."""
    return x.index_select(0, levels.body_slots).transpose(0, 1).reshape(*lead, x.shape[0], x.shape[-1])


def _parents(x: torch.Tensor, parent_rows) -> torch.Tensor:
    """Rows of the level above (`x [L_above, n, k]`) for each body of a level (see TreeLevels)."""
    return x if parent_rows is None else x.index_select(0, parent_rows)


def _fk_level_order(levels: TreeLevels, offsets: torch.Tensor, local_rot: torch.Tensor,
                    root_pos: torch.Tensor, root_rot: torch.Tensor):
    """Forward kinematics in level order: offsets [B, 3], local_rot [B, n, 4] (both level order),
    root_pos [n, 3], root_rot [n, 4] -> body_pos [B, n, 3], body_rot [B, n, 4] (level order) and,
    per level l >= 1, the positions of its bodies' parents ([L_l, n, 3], or [1, n, 3] to broadcast)."""
    level_rot = rot.quat_mul(root_rot, local_rot[0]).unsqueeze(0)  # [1, n, 4]
    level_pos = root_pos.unsqueeze(0)  # [1, n, 3]
    all_pos, all_rot, parent_pos = [level_pos], [level_rot], []
    for (start, stop), parent_rows in zip(levels.level_rows[1:], levels.parent_rows):
        parent_rot = _parents(level_rot, parent_rows)
        parent_pos.append(_parents(level_pos, parent_rows))
        level_pos = parent_pos[-1] + rot.quat_rotate(parent_rot, offsets[start:stop].unsqueeze(1))
        level_rot = rot.quat_mul(parent_rot, local_rot[start:stop])
        all_pos.append(level_pos)
        all_rot.append(level_rot)
    return torch.cat(all_pos, dim=0), torch.cat(all_rot, dim=0), parent_pos


def forward_kinematics(
    parent_indices: torch.Tensor,
    local_translation: torch.Tensor,
    local_rot: torch.Tensor,
    root_pos: torch.Tensor,
    root_rot: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """World body poses from local rotations.

    parent_indices [B] (-1 for the root, parents before children), local_translation [B, 3],
    local_rot [..., B, 4], root_pos [..., 3], root_rot [..., 4].
    Returns body_pos [..., B, 3], body_rot [..., B, 4].

    The root is at root_pos with rotation root_rot * local_rot[..., 0, :]: pass identity
    local_rot[..., 0, :] (as dof_pos_to_local_rot does) with the root's world rotation in root_rot,
    or an identity root_rot when the clip stores the root rotation in local_rot[..., 0, :].
    """
    device, dtype = local_rot.device, local_rot.dtype
    levels = tree_levels(parent_indices, device)
    num_bodies = local_rot.shape[-2]
    lead = broadcast_lead(local_rot[..., 0, :], root_pos, root_rot)
    n = math.prod(lead)
    local_rot = _to_level_order(local_rot.expand(*lead, num_bodies, 4).reshape(n, num_bodies, 4), levels)
    offsets = local_translation.to(dtype=dtype, device=device).index_select(0, levels.order)
    body_pos, body_rot, _ = _fk_level_order(levels, offsets, local_rot, root_pos.expand(*lead, 3).reshape(n, 3),
                                            root_rot.expand(*lead, 4).reshape(n, 4))
    return _from_level_order(body_pos, levels, lead), _from_level_order(body_rot, levels, lead)


def dof_pos_to_local_rot(robot: RobotDescription, dof_pos: torch.Tensor) -> torch.Tensor:
    """Hinge angles [..., D] -> local body rotations [..., B, 4] (identity for root and welded bodies)."""
    rows = joint_rows(robot, range(robot.num_bodies), dof_pos.device)
    return joint_local_rotations(robot, dof_pos).index_select(-2, rows)


def local_rot_to_dof_pos(robot: RobotDescription, local_rot: torch.Tensor) -> torch.Tensor:
    """Local body rotations [..., B, 4] -> hinge angles [..., D].

    Spherical joints: intrinsic Euler XYZ angles (a, b, c) with R = Rx(a) Ry(b) Rz(c). Of the two
    solutions (a, b, c) and (a + pi, pi - b, c + pi) (wrapped to [-pi, pi)) the one inside the
    joint limits is used, else the one with the smaller total limit violation (ties: the first,
    which has |b| <= pi/2). Hinges: the signed angle of the rotation's twist about the hinge axis.
    """
    device, dtype = local_rot.device, local_rot.dtype
    dof_pos = torch.zeros(*local_rot.shape[:-2], robot.num_dofs, dtype=dtype, device=device)
    lower = robot.dof_limits_lower.to(dtype=dtype, device=device)
    upper = robot.dof_limits_upper.to(dtype=dtype, device=device)

    sph = robot.spherical_dof_ids.to(device)
    if sph.numel():
        m = rot.quat_to_matrix(local_rot.index_select(-2, robot.spherical_body_ids.to(device)))  # [..., S, 3, 3]
        first = _euler_xyz_from_matrix(m)  # [..., S, 3]
        flip, shift = _euler_second_solution(dtype, device)
        second = rot.normalize_angle(first * flip + shift)
        lo, hi = lower[sph], upper[sph]  # [S, 3]
        use_second = _limit_violation(second, lo, hi) < _limit_violation(first, lo, hi)
        # index_copy_ on the flattened groups: the same writes as dof_pos[..., sph] = ...
        dof_pos.index_copy_(-1, sph.flatten(), torch.where(use_second.unsqueeze(-1), second, first).flatten(-2))

    hinge = robot.hinge_dof_ids.to(device)
    if hinge.numel():
        q = local_rot.index_select(-2, robot.hinge_body_ids.to(device))  # [..., H, 4]
        axes = robot.dof_axes.to(dtype=dtype, device=device)[hinge]  # [H, 3]
        angle = 2.0 * torch.atan2((q[..., :3] * axes).sum(-1), q[..., 3])
        dof_pos.index_copy_(-1, hinge, rot.normalize_angle(angle))
    return dof_pos


@functools.lru_cache(maxsize=16)
def _euler_second_solution(dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(1, -1, 1) and (pi, pi, pi) `[3]`: (a, b, c) -> (a + pi, pi - b, c + pi) before wrapping."""
    return (torch.tensor([1.0, -1.0, 1.0], dtype=dtype, device=device),
            torch.tensor([torch.pi, torch.pi, torch.pi], dtype=dtype, device=device))


def joint_vel_from_dof_vel(robot: RobotDescription, dof_pos: torch.Tensor, dof_vel: torch.Tensor) -> torch.Tensor:
    """Hinge rates [..., D] -> joint velocities [..., D].

    Spherical group: the child's angular velocity relative to its parent in the child frame,
    E(b, c) [a', b', c']; hinge: its rate (unchanged).
    """
    return joint_rates(robot, dof_pos, dof_vel)[1]


def dof_vel_from_joint_vel(robot: RobotDescription, dof_pos: torch.Tensor, joint_vel: torch.Tensor) -> torch.Tensor:
    """Joint velocities [..., D] (see joint_vel_from_dof_vel) -> hinge rates [..., D].

    Inverts E(b, c) in closed form; its determinant is cos(b), clamped to magnitude
    GIMBAL_COS_EPS near gimbal lock so the result stays finite (exact elsewhere).
    """
    dof_vel = joint_vel.clone()
    sph = robot.spherical_dof_ids.to(joint_vel.device)
    if sph.numel():
        angles, w = dof_pos[..., sph], joint_vel[..., sph]
        b, c = angles[..., 1], angles[..., 2]
        cos_b = torch.cos(b)
        sign = torch.where(cos_b < 0, -1.0, 1.0).to(cos_b.dtype)
        cos_b = sign * cos_b.abs().clamp_min(GIMBAL_COS_EPS)
        cos_c, sin_c = torch.cos(c), torch.sin(c)
        a_rate = (cos_c * w[..., 0] - sin_c * w[..., 1]) / cos_b
        b_rate = sin_c * w[..., 0] + cos_c * w[..., 1]
        c_rate = w[..., 2] - torch.sin(b) * a_rate
        dof_vel[..., sph] = torch.stack([a_rate, b_rate, c_rate], dim=-1)
    return dof_vel


def local_angular_velocity(robot: RobotDescription, dof_pos: torch.Tensor, dof_vel: torch.Tensor) -> torch.Tensor:
    """Each body's angular velocity relative to its parent, in its own frame: [..., B, 3] (0 for root/welded)."""
    rows = joint_rows(robot, range(robot.num_bodies), dof_vel.device)
    return joint_rates(robot, dof_pos, dof_vel)[0].index_select(-2, rows)


def _euler_xyz_from_matrix(m: torch.Tensor) -> torch.Tensor:
    """R = Rx(a) Ry(b) Rz(c) [..., 3, 3] -> (a, b, c) [..., 3] with b in [-pi/2, pi/2]."""
    a = torch.atan2(-m[..., 1, 2], m[..., 2, 2])
    b = torch.atan2(m[..., 0, 2], torch.sqrt(m[..., 0, 0] ** 2 + m[..., 0, 1] ** 2))
    c = torch.atan2(-m[..., 0, 1], m[..., 0, 0])
    # atan2 returns (-pi, pi]; wrap to [-pi, pi) like the other branch so limits at -pi hold.
    return rot.normalize_angle(torch.stack([a, b, c], dim=-1))


def _limit_violation(angles: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor) -> torch.Tensor:
    """Sum over the last dim of how far angles lie outside [lower, upper]."""
    return ((lower - angles).clamp_min(0) + (angles - upper).clamp_min(0)).sum(-1)
