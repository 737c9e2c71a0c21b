"""`HumanoidLocation`: walk to a target position on the ground.

Targets are placed up to `target_dist_max` (default 10 m) from the root along x and along y
(uniform in the square around it) and redrawn every `change_steps_min`-`change_steps_max`
control steps (default 100-200). Task observation (2): the target relative to the root in the
heading frame. Reward: `rewards.location_reward` (target speed 1 m/s).
Metrics at the end of each target period (redraw or episode end): `task/final_distance` (m) and
`task/success_rate` (final distance < `success_distance`, default 0.5 m).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ase_humanoid.envs.config import _check
from ase_humanoid.envs.tasks import rewards
from ase_humanoid.envs.tasks.common import HumanoidTask, TaskEnvConfig, sphere_marker
from ase_humanoid.utils.render import Marker


@dataclass
class HumanoidLocationConfig(TaskEnvConfig):
    target_dist_max: float = 10.0  # m, along x and along y
    target_speed: float = 1.0  # m/s
    success_distance: float = 0.5  # m

    def validate(self) -> None:
        super().validate()
        _check(self.target_dist_max > 0, "target_dist_max", f"must be > 0, got {self.target_dist_max}")
        _check(self.target_speed > 0, "target_speed", f"must be > 0, got {self.target_speed}")
        _check(self.success_distance > 0, "success_distance", f"must be > 0, got {self.success_distance}")


class HumanoidLocation(HumanoidTask):
    """Location task (see module docstring)."""

    config_class = HumanoidLocationConfig
    task_obs_size = 2

    def setup_task(self) -> None:
        super().setup_task()
        n, dev = self.cfg.num_envs, torch.device(self.cfg.device)
        self.target_xy = torch.zeros(n, 2, device=dev)
        self.last_distance = torch.zeros(n, device=dev)

    def sample_goals(self, env_ids: torch.Tensor) -> None:
        offset = 2.0 * torch.rand(len(env_ids), 2, generator=self.generator, device=self.device) - 1.0
        self.target_xy[env_ids] = self.sim.state.root_pos[env_ids, :2] + self.cfg.target_dist_max * offset

    def set_goals(self, env_ids: torch.Tensor, target_xy: torch.Tensor) -> None:
        """Set target positions `[k, 2]` (world) explicitly."""
        self.target_xy[env_ids] = target_xy.float()

    def compute_task_obs(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        ids = slice(None) if env_ids is None else env_ids
        s = self.sim.state
        return rewards.location_obs(s.root_pos[ids], s.root_rot[ids], self.target_xy[ids])

    def compute_task_reward(self) -> torch.Tensor:
        s = self.sim.state
        self.last_distance = (self.target_xy - s.root_pos[:, :2]).norm(dim=-1)
        return rewards.location_reward(s.root_pos, self.root_vel_xy(), s.root_rot, self.target_xy,
                                       self.cfg.target_speed)

    def end_goal_period(self, env_ids: torch.Tensor) -> None:
        dist = self.last_distance[env_ids]
        self.add_metric("final_distance", dist)
        self.add_metric("success_rate", (dist < self.cfg.success_distance).float())

    def markers(self, env_id: int) -> list[Marker]:
        pos = torch.cat([self.target_xy[env_id], torch.tensor([0.05], device=self.device)])
        return [sphere_marker(pos.detach().cpu().numpy(), 0.15, (1.0, 0.2, 0.2, 0.8))]

    def describe(self, env_id: int) -> str:
        return f"distance to target {float(self.last_distance[env_id]):.2f} m"
