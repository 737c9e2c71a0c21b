"""Task rewards and task observations as small pure batched functions.

Formulas follow the ASE paper's task definitions (heading, location, reach, strike). Every
function takes world-frame tensors with a leading batch dimension `[N, ...]` and returns `[N]`
(rewards) or `[N, k]` (observations). The *heading frame* is the world frame turned about z by
the root's yaw, as in the humanoid observations.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ase_humanoid.utils import rotations as rot

UP = (0.0, 0.0, 1.0)


# ---- shared helpers -------------------------------------------------------------------------

def facing_direction_xy(root_rot: torch.Tensor) -> torch.Tensor:
    """Unit ground-plane direction `[N, 2]` of the root's heading (its rotated x axis)."""
    heading = rot.calc_heading(root_rot)
    return torch.stack([torch.cos(heading), torch.sin(heading)], dim=-1)


def to_heading_frame(root_rot: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """World vectors `[N, 3]` (or `[N, k, 3]`) expressed in the root's heading frame."""
    heading_inv = rot.calc_heading_quat_inv(root_rot)
    if vectors.dim() == root_rot.dim() + 1:
        heading_inv = heading_inv.unsqueeze(-2)
    return rot.quat_rotate(heading_inv, vectors)


def xy_to_heading_frame(root_rot: torch.Tensor, vectors_xy: torch.Tensor) -> torch.Tensor:
    """Ground-plane vectors `[N, 2]` expressed in the root's heading frame `[N, 2]`."""
    padded = F.pad(vectors_xy, (0, 1))
    return to_heading_frame(root_rot, padded)[..., :2]


def approach_speed_reward(direction_speed: torch.Tensor, target_speed: float | torch.Tensor,
                          err_scale: float) -> torch.Tensor:
    """exp(-err_scale * max(target_speed - v_dir, 0)^2), 0 when not moving toward (`v_dir <= 0`).

    Speeds at or above the target are not penalised. `direction_speed [N]` -> `[N]`.
    """
    err = torch.clamp_min(target_speed - direction_speed, 0.0)
    reward = torch.exp(-err_scale * err.square())
    return torch.where(direction_speed <= 0.0, torch.zeros_like(reward), reward)


# ---- heading ----------------------------------------------------------------------------------

def heading_reward(root_vel_xy: torch.Tensor, root_rot: torch.Tensor, target_dir: torch.Tensor,
                   target_speed: torch.Tensor, target_facing: torch.Tensor) -> torch.Tensor:
    """0.7 exp(-0.25 ((v* - v_dir)^2 + 0.1 |v_tan|^2)) + 0.3 max(facing . facing*, 0).

    root_vel_xy `[N, 2]` ground velocity, root_rot `[N, 4]`, target_dir / target_facing `[N, 2]`
    unit, target_speed `[N]`. The direction term is 0 when moving away (v_dir <= 0).
    """
    dir_speed = (root_vel_xy * target_dir).sum(-1)
    tangent = root_vel_xy - dir_speed.unsqueeze(-1) * target_dir
    err = (target_speed - dir_speed).square() + 0.1 * tangent.square().sum(-1)
    dir_reward = torch.exp(-0.25 * err)
    dir_reward = torch.where(dir_speed <= 0.0, torch.zeros_like(dir_reward), dir_reward)
    facing_reward = torch.clamp_min((facing_direction_xy(root_rot) * target_facing).sum(-1), 0.0)
    return 0.7 * dir_reward + 0.3 * facing_reward


def heading_errors(root_vel_xy: torch.Tensor, target_dir: torch.Tensor,
                   target_speed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The Heading metrics `[N]` each: direction error (radians between the ground velocity and
    the target direction) and speed error |v* - v_dir| (m/s). Shapes as in `heading_reward`."""
    dir_speed = (root_vel_xy * target_dir).sum(-1)
    cross = target_dir[:, 0] * root_vel_xy[:, 1] - target_dir[:, 1] * root_vel_xy[:, 0]
    return torch.atan2(cross, dir_speed).abs(), (target_speed - dir_speed).abs()


def heading_obs(root_rot: torch.Tensor, target_dir: torch.Tensor, target_speed: torch.Tensor,
                target_facing: torch.Tensor) -> torch.Tensor:
    """`[N, 5]`: target direction (2), speed (1), facing (2); directions in the heading frame."""
    local_dir = xy_to_heading_frame(root_rot, target_dir)
    local_facing = xy_to_heading_frame(root_rot, target_facing)
    return torch.cat([local_dir, target_speed.unsqueeze(-1), local_facing], dim=-1)


# ---- location ---------------------------------------------------------------------------------

LOCATION_NEAR_SQ_DIST = 0.5  # within sqrt(0.5) m the velocity and facing terms are full


def location_reward(root_pos: torch.Tensor, root_vel_xy: torch.Tensor, root_rot: torch.Tensor,
                    target_xy: torch.Tensor, target_speed: float = 1.0) -> torch.Tensor:
    """0.5 exp(-0.5 d^2) + 0.4 exp(-4 max(v* - v_dir, 0)^2) + 0.1 max(facing . dir, 0).

    root_pos `[N, 3]`, root_vel_xy `[N, 2]`, root_rot `[N, 4]`, target_xy `[N, 2]`. Velocity and
    facing terms are 1 within sqrt(0.5) m of the target (d^2 < 0.5).
    """
    diff = target_xy - root_pos[..., :2]
    sq_dist = diff.square().sum(-1)
    pos_reward = torch.exp(-0.5 * sq_dist)
    direction = F.normalize(diff, dim=-1)
    vel_reward = approach_speed_reward((direction * root_vel_xy).sum(-1), target_speed, 4.0)
    facing_reward = torch.clamp_min((facing_direction_xy(root_rot) * direction).sum(-1), 0.0)
    near = sq_dist < LOCATION_NEAR_SQ_DIST
    ones = torch.ones_like(pos_reward)
    vel_reward = torch.where(near, ones, vel_reward)
    facing_reward = torch.where(near, ones, facing_reward)
    return 0.5 * pos_reward + 0.4 * vel_reward + 0.1 * facing_reward


def location_obs(root_pos: torch.Tensor, root_rot: torch.Tensor, target_xy: torch.Tensor) -> torch.Tensor:
    """`[N, 2]`: target position relative to the root in the heading frame."""
    return xy_to_heading_frame(root_rot, target_xy - root_pos[..., :2])


# ---- reach ------------------------------------------------------------------------------------

def reach_reward(effector_pos: torch.Tensor, target_pos: torch.Tensor) -> torch.Tensor:
    """exp(-4 |target - effector|^2), `[N, 3], [N, 3] -> [N]`; 1 at the target."""
    return torch.exp(-4.0 * (target_pos - effector_pos).square().sum(-1))


def reach_obs(root_pos: torch.Tensor, root_rot: torch.Tensor, target_pos: torch.Tensor) -> torch.Tensor:
    """`[N, 3]`: target position relative to the root in the heading frame."""
    return to_heading_frame(root_rot, target_pos - root_pos)


# ---- strike -----------------------------------------------------------------------------------

STRIKE_SUCCESS_UP_DOT = 0.2  # target's up axis . world up below this (tilted ~78 deg): knocked down
CONTACT_FORCE_THRESHOLD = 1.0  # N


def target_up_dot(target_rot: torch.Tensor) -> torch.Tensor:
    """Cosine of the target's tilt: its up axis dotted with world up, `[N, 4] -> [N]`."""
    up = torch.tensor(UP, dtype=target_rot.dtype, device=target_rot.device).expand(*target_rot.shape[:-1], 3)
    return rot.quat_rotate(target_rot, up)[..., 2]


def strike_success(target_rot: torch.Tensor) -> torch.Tensor:
    """`[N]` bool: the target is tilted past ~78 degrees (up . target_up < 0.2)."""
    return target_up_dot(target_rot) < STRIKE_SUCCESS_UP_DOT


def strike_reward(root_pos: torch.Tensor, root_vel_xy: torch.Tensor, target_pos: torch.Tensor,
                  target_rot: torch.Tensor, target_speed: float = 1.0) -> torch.Tensor:
    """0.6 max(1 - up . target_up, 0) + 0.4 approach, and 1 on every step the target lies down.

    approach = exp(-4 max(1 - v_dir, 0)^2) (speed toward the target capped at `target_speed`,
    0 when not moving toward it), wherever the character is: standing next to an upright
    target earns nothing, so only knocking it over pays (as in the ASE release).
    root_pos / target_pos `[N, 3]`, root_vel_xy `[N, 2]`, target_rot `[N, 4]` -> `[N]`.
    """
    up_dot = target_up_dot(target_rot)
    tilt_reward = torch.clamp_min(1.0 - up_dot, 0.0)
    direction = F.normalize(target_pos[..., :2] - root_pos[..., :2], dim=-1)
    approach = approach_speed_reward((direction * root_vel_xy).sum(-1), target_speed, 4.0)
    reward = 0.6 * tilt_reward + 0.4 * approach
    return torch.where(up_dot < STRIKE_SUCCESS_UP_DOT, torch.ones_like(reward), reward)


def strike_forbidden_contact(target_contact_force: torch.Tensor, body_contact_forces: torch.Tensor,
                             allowed_body_mask: torch.Tensor,
                             threshold: float = CONTACT_FORCE_THRESHOLD) -> torch.Tensor:
    """`[N]` bool failure: the target is pushed sideways (|F_xy| > threshold on any axis) while a
    body outside `allowed_body_mask` (striking bodies and feet) has contact.

    target_contact_force `[N, 3]`, body_contact_forces `[N, B, 3]`, allowed_body_mask `[B]` bool.
    A target resting on the floor has only a vertical contact force, so it does not count.
    """
    target_touched = (target_contact_force[..., :2].abs() > threshold).any(-1)
    other = body_contact_forces.abs() > threshold  # [N, B, 3]
    other_touching = (other.any(-1) & ~allowed_body_mask).any(-1)
    return target_touched & other_touching


def strike_obs(root_pos: torch.Tensor, root_rot: torch.Tensor, target_pos: torch.Tensor,
               target_rot: torch.Tensor, target_lin_vel: torch.Tensor,
               target_ang_vel: torch.Tensor) -> torch.Tensor:
    """`[N, 15]`: target position (3: ground offset from the root, and the target's own height
    above the floor, as the release observes it), rotation as tan-norm (6), linear (3) and
    angular (3) velocity, all in the root's heading frame."""
    heading_inv = rot.calc_heading_quat_inv(root_rot)
    offset = torch.cat([target_pos[..., :2] - root_pos[..., :2], target_pos[..., 2:3]], dim=-1)
    vectors = torch.stack([offset, target_lin_vel, target_ang_vel], dim=-2)
    local = rot.quat_rotate(heading_inv.unsqueeze(-2), vectors)
    local_rot = rot.quat_to_tan_norm(rot.quat_mul(heading_inv, target_rot))
    return torch.cat([local[..., 0, :], local_rot, local[..., 1, :], local[..., 2, :]], dim=-1)
