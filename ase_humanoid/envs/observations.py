"""Policy and AMP observations as pure functions of body / joint states (ASE layout).

Everything is expressed in the root's *heading frame*: the world frame turned about z by the
root's heading (yaw), so observations do not change when the character turns or moves on the
ground plane. The same functions serve the simulator (env observations) and the MotionLib
(demo observations), which is what makes the discriminator's two inputs comparable.

Policy observation, B bodies (root first), size 1 + 3 (B - 1) + 6 B + 3 B + 3 B = 15 B - 2
(223 for the 15-body AMP humanoid, 253 for the 17-body sword-and-shield humanoid):
    root height | non-root body positions relative to the root | every body's rotation as
    tan-norm with the heading removed | body linear velocities | body angular velocities.
`policy_root_rotation="heading_free"` (default) treats the root's rotation like every other body
(heading removed, so the observation does not change when the character turns); `"world"` gives
the root's world rotation (heading kept), which is what the ASE release's policy observation
holds with its `localRootObs: True` (the setting of all its configs).

AMP observation per step, J joint groups, D DoFs, K key bodies, size 13 + 6 J + D + 3 K
(125 for the AMP humanoid with 4 key bodies, 140 for sword-and-shield with 6):
    root height | root rotation tan-norm (heading removed; world with local_root_obs=False, as
    the release's `localRootObs` does in its AMP observation) |
    root linear velocity | root angular velocity | per joint group the tan-norm of its local
    rotation (spherical: Rx Ry Rz of its three hinges; hinge: about its axis) | joint velocities
    (spherical: the child's angular velocity relative to its parent in the child frame; hinge:
    its rate) | key-body positions relative to the root.
"""

from __future__ import annotations

import math

import torch

from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.robots.kinematics import dof_pos_to_local_rot
from ase_humanoid.robots.mirror import (
    PSEUDO_REFLECTION,
    REFLECTION,
    RobotMirror,
    SignedPermutation,
)
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
    root_rotation: str = "heading_free",
) -> torch.Tensor:
    """Policy observation `[..., 15 B - 2]` from world body states.

    body_pos, body_lin_vel, body_ang_vel `[..., B, 3]`, body_rot `[..., B, 4]` (body 0 = root);
    root_rotation "heading_free" | "world": the root's tan-norm with or without its heading.
    """
    lead, num_bodies = body_pos.shape[:-2], body_pos.shape[-2]
    n = math.prod(lead)
    body_pos, body_rot = body_pos.reshape(n, num_bodies, 3), body_rot.reshape(n, num_bodies, 4)
    root_pos, root_rot = body_pos[:, 0], body_rot[:, 0]
    # Removing the heading from a rotation turns its tangent and normal axes like any vector, so
    # every term but the root height is a row of 3-vectors turned by one heading matrix per env:
    # relative positions (B - 1), tangent/normal pairs (2 B), linear and angular velocities (B, B).
    world_tan_norm = rot.quat_to_tan_norm(body_rot).reshape(n, 2 * num_bodies, 3)
    vectors = torch.cat([body_pos[:, 1:] - root_pos.unsqueeze(1), world_tan_norm,
                         body_lin_vel.reshape(n, num_bodies, 3), body_ang_vel.reshape(n, num_bodies, 3)], dim=1)
    local = rot.matmul_exact(vectors, rot.heading_frame_matrix(root_rot))  # [n, 5 B - 1, 3]
    if root_rotation == "world":  # the root's own rotation keeps its heading
        local[:, num_bodies - 1: num_bodies + 1] = world_tan_norm[:, :2]
    return torch.cat([root_pos[:, 2:3], local.reshape(n, 3 * (5 * num_bodies - 1))], dim=-1).reshape(*lead, 15 * num_bodies - 2)


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
    lead, num_joints, num_keys = root_pos.shape[:-1], joint_rot.shape[-2], key_body_pos.shape[-2]
    n = math.prod(lead)
    root_pos, root_rot = root_pos.reshape(n, 3), root_rot.reshape(n, 4)
    # As in policy_observation: the root's tangent/normal, velocities and key-body positions are
    # rows of 3-vectors turned into the heading frame by one matrix per env.
    root_tan_norm = rot.quat_to_tan_norm(root_rot).reshape(n, 2, 3)
    vectors = torch.cat([root_tan_norm, root_lin_vel.reshape(n, 1, 3), root_ang_vel.reshape(n, 1, 3),
                         key_body_pos.reshape(n, num_keys, 3) - root_pos.unsqueeze(1)], dim=1)
    local = rot.matmul_exact(vectors, rot.heading_frame_matrix(root_rot))  # [n, 4 + K, 3]
    if not local_root_obs:  # the root rotation keeps its heading
        local[:, :2] = root_tan_norm
    return torch.cat(
        [
            root_pos[:, 2:3],
            local[:, :4].reshape(n, 12),
            rot.quat_to_tan_norm(joint_rot.reshape(n, num_joints, 4)).reshape(n, 6 * num_joints),
            joint_vel.reshape(n, joint_vel.shape[-1]),
            local[:, 4:].reshape(n, 3 * num_keys),
        ],
        dim=-1,
    ).reshape(*lead, 13 + 6 * num_joints + joint_vel.shape[-1] + 3 * num_keys)


def humanoid_observations(
    body_pos: torch.Tensor,
    body_rot: torch.Tensor,
    body_lin_vel: torch.Tensor,
    body_ang_vel: torch.Tensor,
    joint_rot: torch.Tensor,
    joint_vel: torch.Tensor,
    key_body_ids: torch.Tensor,
    local_root_obs: bool = True,
    policy_root_rotation: str = "heading_free",
    root_ground_height: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The policy observation `[n, 15 B - 2]` and the AMP observation step `[n, 13 + 6 J + D + 3 K]`
    of the same states, equal to `policy_observation` and `amp_observation` of them, computed
    together: one heading matrix and one matmul turn the vectors of both (the env's step path).

    body_* `[n, B, ...]` world body states (body 0 = root), joint_rot `[n, J, 4]`,
    joint_vel `[n, D]`, key_body_ids `[K]` long; `local_root_obs` as in `amp_observation`,
    `policy_root_rotation` as `root_rotation` in `policy_observation`. `root_ground_height [n]`
    (terrain): the ground under each root, so both observations' root height is measured from it.
    """
    n, num_bodies = body_pos.shape[:2]
    root_pos, root_rot = body_pos[:, 0], body_rot[:, 0]
    world_tan_norm = rot.quat_to_tan_norm(body_rot).reshape(n, 2 * num_bodies, 3)
    rel_pos = body_pos - root_pos.unsqueeze(1)
    # Rows: relative positions (B - 1) | tangent/normal pairs (2 B) | linear velocities (B) |
    # angular velocities (B) | key-body positions (K). The AMP terms of the root are rows of it.
    vectors = torch.cat([rel_pos[:, 1:], world_tan_norm, body_lin_vel, body_ang_vel,
                         rel_pos.index_select(1, key_body_ids)], dim=1)
    local = rot.matmul_exact(vectors, rot.heading_frame_matrix(root_rot))
    root = slice(num_bodies - 1, num_bodies + 1)  # rows of the root's tangent and normal
    world_root_rows = world_tan_norm[:, :2].reshape(n, 6)
    root_rows = local[:, root].reshape(n, 6).clone() if local_root_obs else world_root_rows
    if policy_root_rotation == "world":  # the root's own rotation keeps its heading
        local[:, root] = world_tan_norm[:, :2]
    policy_rows = 5 * num_bodies - 1
    height = root_pos[:, 2:3] if root_ground_height is None else root_pos[:, 2:3] - root_ground_height.unsqueeze(-1)
    policy = torch.cat([height, local[:, :policy_rows].reshape(n, 3 * policy_rows)], dim=-1)
    lin, ang = 3 * num_bodies - 1, 4 * num_bodies - 1  # rows of the root's velocities
    amp = torch.cat([height, root_rows, local[:, lin], local[:, ang],
                     rot.quat_to_tan_norm(joint_rot).reshape(n, 6 * joint_rot.shape[1]), joint_vel,
                     local[:, policy_rows:].reshape(n, 3 * len(key_body_ids))], dim=-1)
    return policy, amp


def amp_obs_mirror(robot: RobotDescription, mirror: RobotMirror, key_body_ids: list[int],
                   steps: int = 1) -> SignedPermutation:
    """The AMP observation history `[steps * per_step]` of a mirrored humanoid as a signed
    permutation of the original's (`amp_observation`'s layout, per step)."""
    joint_bodies = list(robot.dof_body_ids)
    joints = torch.tensor([joint_bodies.index(int(mirror.body_partners[b])) for b in joint_bodies])
    keys = torch.tensor([list(key_body_ids).index(int(mirror.body_partners[k])) for k in key_body_ids])
    joint_tan_norm = torch.stack([2 * joints, 2 * joints + 1], dim=-1).reshape(-1)
    root = torch.zeros(1, dtype=torch.long)
    one_step = SignedPermutation.cat(
        SignedPermutation.identity(1),  # root height
        SignedPermutation.of_vectors(torch.tensor([0, 1]), REFLECTION),  # root tangent, normal
        SignedPermutation.of_vectors(root, REFLECTION),  # root linear velocity
        SignedPermutation.of_vectors(root, PSEUDO_REFLECTION),  # root angular velocity
        SignedPermutation.of_vectors(joint_tan_norm, REFLECTION),
        mirror.dofs,  # joint velocities: hinge rates, and ball joints' x, y, z like their hinges
        SignedPermutation.of_vectors(keys, REFLECTION),
    )
    return SignedPermutation.cat(*[one_step] * steps)


def flatten_amp_history(history: torch.Tensor) -> torch.Tensor:
    """`[N, steps, per_step]` (newest first) -> `[N, steps * per_step]`."""
    return history.reshape(history.shape[0], history.shape[1] * history.shape[2])
