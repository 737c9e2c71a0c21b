"""What an env reset is made of: humanoid states, their kinematics, and the AMP history each
new episode starts with, planned for a batch of envs before anything is written to the simulator.

Resets are drawn as plain dicts of tensors (`STATE_FIELDS`, `KINEMATICS_FIELDS`, `amp_history`,
`policy_obs`, all with the same leading dim) so that draws can be made ahead of time in a pool,
sliced and merged; `plan_from_draws` turns them into a `ResetPlan` for specific envs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ase_humanoid.robots.articulation import ArticulationState
from ase_humanoid.utils import rotations as rot

DEFAULT_ROOT_HEIGHT = 0.89
"""Root height (m) of the `Default` standing pose: identity rotation, all DoFs at zero."""


@dataclass
class RobotStates:
    """Humanoid states for a batch of n envs (world frame, xyzw), as `set_robot_state` takes them."""

    root_pos: torch.Tensor  # [n, 3]
    root_rot: torch.Tensor  # [n, 4]
    root_lin_vel: torch.Tensor  # [n, 3]
    root_ang_vel: torch.Tensor  # [n, 3]
    dof_pos: torch.Tensor  # [n, D]
    dof_vel: torch.Tensor  # [n, D]

    def as_tuple(self) -> tuple:
        return (self.root_pos, self.root_rot, self.root_lin_vel, self.root_ang_vel, self.dof_pos, self.dof_vel)


@dataclass
class ResetPlan:
    """New humanoid states for envs being reset, with the AMP history each starts with.

    Envs being reset but left out of the plan (ASE recovery episodes) keep their state and
    their AMP history. `kinematics` (body states of `states`) and `policy_obs` (their humanoid
    policy observation), computed where the states are made, often in batches ahead of time,
    spare the simulator and the step recomputing them; None: they are computed when needed.
    """

    env_ids: torch.Tensor  # [n] long
    states: RobotStates  # [n]
    amp_history: torch.Tensor  # [n, steps, per_step], newest (the new state itself) first
    kinematics: ArticulationState | None = None  # [n]
    policy_obs: torch.Tensor | None = None  # [n, 15 B - 2]


STATE_FIELDS = ("root_pos", "root_rot", "root_lin_vel", "root_ang_vel", "dof_pos", "dof_vel")
KINEMATICS_FIELDS = ("body_pos", "body_rot", "body_lin_vel", "body_ang_vel", "joint_rot", "joint_vel")


def merge_draws(count: int, parts: list[tuple[torch.Tensor, dict]]) -> dict:
    """One batch of `count` draws from `parts`: (rows [k] long, draws with k rows each), the rows
    of all parts together covering 0 .. count - 1 once. Every part has the same fields."""
    merged = {}
    for name, first in parts[0][1].items():
        out = torch.empty((count, *first.shape[1:]), dtype=first.dtype, device=first.device)
        for rows, draws in parts:
            out.index_copy_(0, rows, draws[name])
        merged[name] = out
    return merged


def standing_states(n: int, num_dofs: int, device) -> RobotStates:
    """`n` standing poses: root at DEFAULT_ROOT_HEIGHT, identity rotation, zero DoFs, at rest."""
    root_pos = torch.zeros(n, 3, device=device)
    root_pos[:, 2] = DEFAULT_ROOT_HEIGHT
    zeros3 = torch.zeros(n, 3, device=device)
    dofs = torch.zeros(n, num_dofs, device=device)
    return RobotStates(root_pos, rot.quat_identity(n, device=device), zeros3, zeros3, dofs, dofs)


def plan_from_draws(env_ids: torch.Tensor, draws: dict) -> ResetPlan:
    """The plan that resets `env_ids [n]` into `draws` (n rows of every field)."""
    states = RobotStates(*(draws[name] for name in STATE_FIELDS))
    kinematics = ArticulationState(*(draws[name] for name in KINEMATICS_FIELDS))
    return ResetPlan(env_ids, states, draws["amp_history"], kinematics, draws["policy_obs"])
