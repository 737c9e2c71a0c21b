"""Batched humanoid kinematics in the simulator's DoF coordinates (MuJoCo hinge angles).

A spherical joint is three hinges about the child's x, y, z axes at its origin, so its local
rotation is Rx(a) Ry(b) Rz(c) (intrinsic Euler XYZ); a single hinge rotates about its axis. Body
frames have identity rest orientation, so a body's pose in its parent is (local_translation,
local_rot). Everything works on float32 or float64 tensors with any leading batch shape; the
robot's tensors are cast to the input's dtype and device.
"""

from __future__ import annotations

import torch

from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.utils import rotations as rot

# Below this |cos(b)| (b within ~0.6 deg of +-90 deg, Euler gimbal lock) the Euler-rate inverse
# divides by a clamped cos(b) instead: the result stays finite (rates at most ~100x the angular
# speed) and is exact everywhere else.
GIMBAL_COS_EPS = 1e-2


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
    parents = [int(p) for p in parent_indices]
    offsets = local_translation.to(dtype=local_rot.dtype, device=local_rot.device)
    body_pos = [root_pos]
    body_rot = [rot.quat_mul(root_rot, local_rot[..., 0, :])]
    for b in range(1, len(parents)):
        p = parents[b]
        body_pos.append(body_pos[p] + rot.quat_rotate(body_rot[p], offsets[b].expand_as(body_pos[p])))
        body_rot.append(rot.quat_mul(body_rot[p], local_rot[..., b, :]))
    return torch.stack(body_pos, dim=-2), torch.stack(body_rot, dim=-2)


def dof_pos_to_local_rot(robot: RobotDescription, dof_pos: torch.Tensor) -> torch.Tensor:
    """Hinge angles [..., D] -> local body rotations [..., B, 4] (identity for root and welded bodies)."""
    axes = robot.dof_axes.to(dtype=dof_pos.dtype, device=dof_pos.device)
    dof_quat = rot.quat_from_axis_angle(axes.expand(*dof_pos.shape, 3), dof_pos)  # [..., D, 4]
    local_rot = rot.quat_identity((*dof_pos.shape[:-1], robot.num_bodies), dtype=dof_pos.dtype, device=dof_pos.device)
    sph = robot.spherical_dof_ids.to(dof_pos.device)
    if sph.numel():
        q = rot.quat_mul(rot.quat_mul(dof_quat[..., sph[:, 0], :], dof_quat[..., sph[:, 1], :]), dof_quat[..., sph[:, 2], :])
        local_rot[..., robot.spherical_body_ids.to(dof_pos.device), :] = q
    if robot.hinge_dof_ids.numel():
        local_rot[..., robot.hinge_body_ids.to(dof_pos.device), :] = dof_quat[..., robot.hinge_dof_ids.to(dof_pos.device), :]
    return local_rot


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
        m = rot.quat_to_matrix(local_rot[..., robot.spherical_body_ids.to(device), :])  # [..., S, 3, 3]
        first = _euler_xyz_from_matrix(m)  # [..., S, 3]
        second = rot.normalize_angle(first * torch.tensor([1.0, -1.0, 1.0], dtype=dtype, device=device)
                                     + torch.tensor([torch.pi, torch.pi, torch.pi], dtype=dtype, device=device))
        lo, hi = lower[sph], upper[sph]  # [S, 3]
        use_second = _limit_violation(second, lo, hi) < _limit_violation(first, lo, hi)
        dof_pos[..., sph] = torch.where(use_second.unsqueeze(-1), second, first)

    hinge = robot.hinge_dof_ids.to(device)
    if hinge.numel():
        q = local_rot[..., robot.hinge_body_ids.to(device), :]  # [..., H, 4]
        axes = robot.dof_axes.to(dtype=dtype, device=device)[hinge]  # [H, 3]
        angle = 2.0 * torch.atan2((q[..., :3] * axes).sum(-1), q[..., 3])
        dof_pos[..., hinge] = rot.normalize_angle(angle)
    return dof_pos


def joint_vel_from_dof_vel(robot: RobotDescription, dof_pos: torch.Tensor, dof_vel: torch.Tensor) -> torch.Tensor:
    """Hinge rates [..., D] -> joint velocities [..., D].

    Spherical group: the child's angular velocity relative to its parent in the child frame,
    E(b, c) [a', b', c']; hinge: its rate (unchanged).
    """
    joint_vel = dof_vel.clone()
    sph = robot.spherical_dof_ids.to(dof_vel.device)
    if sph.numel():
        rates = _euler_rate_matrix(dof_pos[..., sph])  # [..., S, 3, 3]
        joint_vel[..., sph] = (rates @ dof_vel[..., sph].unsqueeze(-1)).squeeze(-1)
    return joint_vel


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
    joint_vel = joint_vel_from_dof_vel(robot, dof_pos, dof_vel)
    device, dtype = dof_vel.device, dof_vel.dtype
    rel = torch.zeros(*dof_vel.shape[:-1], robot.num_bodies, 3, dtype=dtype, device=device)
    sph = robot.spherical_dof_ids.to(device)
    if sph.numel():
        rel[..., robot.spherical_body_ids.to(device), :] = joint_vel[..., sph]
    hinge = robot.hinge_dof_ids.to(device)
    if hinge.numel():
        axes = robot.dof_axes.to(dtype=dtype, device=device)[hinge]
        rel[..., robot.hinge_body_ids.to(device), :] = joint_vel[..., hinge].unsqueeze(-1) * axes
    return rel


def body_state_from_qpos(
    robot: RobotDescription,
    root_pos: torch.Tensor,
    root_rot: torch.Tensor,
    root_lin_vel: torch.Tensor,
    root_ang_vel: torch.Tensor,
    dof_pos: torch.Tensor,
    dof_vel: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """World-frame body states from root and DoF state; equals MuJoCo's own kinematics.

    root_pos, root_lin_vel, root_ang_vel [..., 3] (world frame, at the root origin), root_rot [..., 4],
    dof_pos, dof_vel [..., D]. Returns body_pos [..., B, 3], body_rot [..., B, 4],
    body_lin_vel [..., B, 3], body_ang_vel [..., B, 3]: velocities in world frame at each body origin.
    """
    local_rot = dof_pos_to_local_rot(robot, dof_pos)
    body_pos, body_rot = forward_kinematics(robot.parent_indices, robot.local_translation, local_rot, root_pos, root_rot)
    rel_world = rot.quat_rotate(body_rot, local_angular_velocity(robot, dof_pos, dof_vel))  # [..., B, 3]

    # Hinges sit at body origins, so a child's origin moves with its parent's rigid motion only.
    parents = [int(p) for p in robot.parent_indices]
    ang_vel = [root_ang_vel]
    lin_vel = [root_lin_vel]
    for b in range(1, len(parents)):
        p = parents[b]
        ang_vel.append(ang_vel[p] + rel_world[..., b, :])
        lever = body_pos[..., b, :] - body_pos[..., p, :]
        lin_vel.append(lin_vel[p] + torch.linalg.cross(ang_vel[p], lever, dim=-1))
    return body_pos, body_rot, torch.stack(lin_vel, dim=-2), torch.stack(ang_vel, dim=-2)


def _euler_xyz_from_matrix(m: torch.Tensor) -> torch.Tensor:
    """R = Rx(a) Ry(b) Rz(c) [..., 3, 3] -> (a, b, c) [..., 3] with b in [-pi/2, pi/2]."""
    a = torch.atan2(-m[..., 1, 2], m[..., 2, 2])
    b = torch.atan2(m[..., 0, 2], torch.sqrt(m[..., 0, 0] ** 2 + m[..., 0, 1] ** 2))
    c = torch.atan2(-m[..., 0, 1], m[..., 0, 0])
    # atan2 returns (-pi, pi]; wrap to [-pi, pi) like the other branch so limits at -pi hold.
    return rot.normalize_angle(torch.stack([a, b, c], dim=-1))


def _euler_rate_matrix(angles: torch.Tensor) -> torch.Tensor:
    """E [..., 3, 3] with child-frame relative angular velocity = E @ (a', b', c') for Rx(a) Ry(b) Rz(c)."""
    b, c = angles[..., 1], angles[..., 2]
    cos_b, sin_b, cos_c, sin_c = torch.cos(b), torch.sin(b), torch.cos(c), torch.sin(c)
    zero, one = torch.zeros_like(b), torch.ones_like(b)
    return torch.stack(
        [
            torch.stack([cos_b * cos_c, sin_c, zero], -1),
            torch.stack([-cos_b * sin_c, cos_c, zero], -1),
            torch.stack([sin_b, zero, one], -1),
        ],
        dim=-2,
    )


def _limit_violation(angles: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor) -> torch.Tensor:
    """Sum over the last dim of how far angles lie outside [lower, upper]."""
    return ((lower - angles).clamp_min(0) + (angles - upper).clamp_min(0)).sum(-1)
