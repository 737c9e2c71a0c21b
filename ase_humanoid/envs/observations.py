"""Policy and AMP observations as pure functions of body / joint states (ASE layout).

Everything is expressed in the root's *heading frame*: the world frame turned about z by the
root's heading (yaw), so observations do not change when the character turns or moves on the
ground plane. The same functions serve the simulator (env observations) and the MotionLib
(demo observations), which is what makes the discriminator's two inputs comparable.

Policy observation, B bodies (root first), size 1 + 3 (B - 1) + 6 B + 3 B + 3 B = 15 B - 2
(223 for the 15-body AMP humanoid, 253 for the 17-body sword-and-shield humanoid):
    root height | non-root body positions relative to the root | every body's rotation as
    tan-norm with the heading removed | body linear velocities | body angular velocities.
`local_root_obs=True` (default) treats the root's rotation like every other body (heading
removed); `False` gives the root rotation in the world frame (heading kept), which is what the
ASE release's `localRootObs: False` does.

AMP observation per step, J joint groups, D DoFs, K key bodies, size 13 + 6 J + D + 3 K
(125 for the AMP humanoid with 4 key bodies, 140 for sword-and-shield with 6):
    root height | root rotation tan-norm (heading removed unless local_root_obs is False) |
    root linear velocity | root angular velocity | per joint group the tan-norm of its local
    rotation (spherical: Rx Ry Rz of its three hinges; hinge: about its axis) | joint velocities
    (spherical: the child's angular velocity relative to its parent in the child frame; hinge:
    its rate) | key-body positions relative to the root.
"""

from __future__ import annotations

import torch

from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.robots.kinematics import dof_pos_to_local_rot
from ase_humanoid.utils import rotations as rot


def policy_obs_size(num_bodies: int) -> int:
    """Length of the policy observation for a humanoid with `num_bodies` bodies."""
    return 15 * num_bodies - 2


def amp_obs_size(robot: RobotDescription, num_key_bodies: int) -> int:
    """Length of one step of the AMP observation."""
    return 13 + 6 * robot.num_joints + robot.num_dofs + 3 * num_key_bodies


def policy_observation(
    body_pos: torch.Tensor,
    body_rot: torch.Tensor,
    body_lin_vel: torch.Tensor,
    body_ang_vel: torch.Tensor,
    local_root_obs: bool = True,
) -> torch.Tensor:
    """Policy observation `[..., 15 B - 2]` from world body states.

    body_pos, body_lin_vel, body_ang_vel `[..., B, 3]`, body_rot `[..., B, 4]` (body 0 = root).
    """
    root_pos = body_pos[..., 0, :]
    root_rot = body_rot[..., 0, :]
    heading_inv = rot.calc_heading_quat_inv(root_rot).unsqueeze(-2)  # [..., 1, 4]
    num_bodies = body_pos.shape[-2]

    # One rotation call for all vector quantities: relative positions, linear and angular velocity.
    vectors = torch.cat([body_pos[..., 1:, :] - root_pos.unsqueeze(-2), body_lin_vel, body_ang_vel], dim=-2)
    local_vectors = rot.quat_rotate(heading_inv, vectors)
    local_pos = local_vectors[..., : num_bodies - 1, :]
    local_lin_vel = local_vectors[..., num_bodies - 1 : 2 * num_bodies - 1, :]
    local_ang_vel = local_vectors[..., 2 * num_bodies - 1 :, :]

    local_rot = rot.quat_mul(heading_inv, body_rot)
    if not local_root_obs:
        local_rot = torch.cat([root_rot.unsqueeze(-2), local_rot[..., 1:, :]], dim=-2)
    rot_obs = rot.quat_to_tan_norm(local_rot)  # [..., B, 6]

    lead = body_pos.shape[:-2]
    return torch.cat(
        [
            root_pos[..., 2:3],
            local_pos.reshape(*lead, 3 * (num_bodies - 1)),
            rot_obs.reshape(*lead, 6 * num_bodies),
            local_lin_vel.reshape(*lead, 3 * num_bodies),
            local_ang_vel.reshape(*lead, 3 * num_bodies),
        ],
        dim=-1,
    )


def joint_rotations(robot: RobotDescription, dof_pos: torch.Tensor) -> torch.Tensor:
    """Local rotation of each joint group `[..., J, 4]` from hinge angles `[..., D]`."""
    joint_body_ids = torch.as_tensor(robot.dof_body_ids, dtype=torch.long, device=dof_pos.device)
    return dof_pos_to_local_rot(robot, dof_pos).index_select(-2, joint_body_ids)


def amp_observation(
    root_pos: torch.Tensor,
    root_rot: torch.Tensor,
    root_lin_vel: torch.Tensor,
    root_ang_vel: torch.Tensor,
    joint_rot: torch.Tensor,
    joint_vel: torch.Tensor,
    key_body_pos: torch.Tensor,
    local_root_obs: bool = True,
) -> torch.Tensor:
    """One step of the AMP observation `[..., 13 + 6 J + D + 3 K]`.

    root_pos, root_lin_vel, root_ang_vel `[..., 3]` (world frame), root_rot `[..., 4]`,
    joint_rot `[..., J, 4]` (local rotation of each joint group, `joint_rotations`),
    joint_vel `[..., D]` (joint-velocity convention, see
    `robots.kinematics.joint_vel_from_dof_vel`), key_body_pos `[..., K, 3]` (world).
    """
    heading_inv = rot.calc_heading_quat_inv(root_rot)  # [..., 4]
    root_rot_obs = rot.quat_mul(heading_inv, root_rot) if local_root_obs else root_rot

    vectors = torch.cat([root_lin_vel.unsqueeze(-2), root_ang_vel.unsqueeze(-2),
                         key_body_pos - root_pos.unsqueeze(-2)], dim=-2)  # [..., 2 + K, 3]
    local_vectors = rot.quat_rotate(heading_inv.unsqueeze(-2), vectors)

    lead = root_pos.shape[:-1]
    num_joints, num_keys = joint_rot.shape[-2], key_body_pos.shape[-2]
    return torch.cat(
        [
            root_pos[..., 2:3],
            rot.quat_to_tan_norm(root_rot_obs),
            local_vectors[..., 0, :],
            local_vectors[..., 1, :],
            rot.quat_to_tan_norm(joint_rot).reshape(*lead, 6 * num_joints),
            joint_vel,
            local_vectors[..., 2:, :].reshape(*lead, 3 * num_keys),
        ],
        dim=-1,
    )


def flatten_amp_history(history: torch.Tensor) -> torch.Tensor:
    """`[N, steps, per_step]` (newest first) -> `[N, steps * per_step]`."""
    return history.reshape(history.shape[0], history.shape[1] * history.shape[2])
