"""`HumanoidHeading`: travel in a target direction at a target speed while facing a target
direction (the two directions independent and uniform on the circle).

Goals are redrawn every `change_steps_min`-`change_steps_max` control steps (default 100-200):
direction and facing uniform in [-pi, pi), speed uniform in [target_speed_min, target_speed_max]
(default 1.5-1.6 m/s). Task observation (5): target direction (2) and facing (2) in the root's
heading frame, and the target speed (1). Reward: `rewards.heading_reward`.
Metrics: `task/speed_error` |v* - v_dir| (m/s) and `task/direction_error` (radians between the
ground velocity and the target direction), per control step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ase_humanoid.envs.config import _check
from ase_humanoid.envs.tasks import rewards
from ase_humanoid.envs.tasks.common import (
    HumanoidTask,
    TaskEnvConfig,
    arrow_marker,
    random_yaw,
    uniform,
    unit_vectors_xy,
)
from ase_humanoid.utils.render import Marker


@dataclass
class HumanoidHeadingConfig(TaskEnvConfig):
    target_speed_min: float = 1.5  # m/s
    target_speed_max: float = 1.6

    def validate(self) -> None:
        super().validate()
        _check(0.0 <= self.target_speed_min <= self.target_speed_max, "target_speed_min",
               f"need 0 <= target_speed_min <= target_speed_max, got "
               f"{self.target_speed_min}, {self.target_speed_max}")


class HumanoidHeading(HumanoidTask):
    """Heading task (see module docstring)."""

    config_class = HumanoidHeadingConfig
    task_obs_size = 5

    def setup_task(self) -> None:
        super().setup_task()
        n, dev = self.cfg.num_envs, torch.device(self.cfg.device)
        self.target_dir = torch.zeros(n, 2, device=dev)
        self.target_dir[:, 0] = 1.0
        self.target_facing = self.target_dir.clone()
        self.target_speed = torch.zeros(n, device=dev)

    def sample_goals(self, env_ids: torch.Tensor) -> None:
        n, g, dev = len(env_ids), self.generator, self.device
        self.target_dir[env_ids] = unit_vectors_xy(random_yaw(n, g, dev))
        self.target_facing[env_ids] = unit_vectors_xy(random_yaw(n, g, dev))
        self.target_speed[env_ids] = uniform(n, self.cfg.target_speed_min, self.cfg.target_speed_max, g, dev)

    def set_goals(self, env_ids: torch.Tensor, direction: torch.Tensor, speed: torch.Tensor,
                  facing: torch.Tensor) -> None:
        """Set goals explicitly: direction / facing `[k, 2]` (normalised here), speed `[k]`."""
        self.target_dir[env_ids] = torch.nn.functional.normalize(direction.float(), dim=-1)
        self.target_facing[env_ids] = torch.nn.functional.normalize(facing.float(), dim=-1)
        self.target_speed[env_ids] = speed.float()

    def compute_task_obs(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        ids = slice(None) if env_ids is None else env_ids
        return rewards.heading_obs(self.sim.state.root_rot[ids], self.target_dir[ids],
                                   self.target_speed[ids], self.target_facing[ids])

    def compute_task_reward(self) -> torch.Tensor:
        vel = self.root_vel_xy()
        reward = rewards.heading_reward(vel, self.sim.state.root_rot, self.target_dir,
                                        self.target_speed, self.target_facing)
        direction_error, speed_error = rewards.heading_errors(vel, self.target_dir, self.target_speed)
        self.add_metric("speed_error", speed_error)
        self.add_metric("direction_error", direction_error)
        return reward

    def markers(self, env_id: int) -> list[Marker]:
        root = self.sim.state.root_pos[env_id].detach().cpu().numpy()
        direction = np.append(self.target_dir[env_id].detach().cpu().numpy(), 0.0)
        facing = np.append(self.target_facing[env_id].detach().cpu().numpy(), 0.0)
        base = root * np.array([1.0, 1.0, 0.0]) + np.array([0.0, 0.0, 0.05])
        speed = float(self.target_speed[env_id])
        return [arrow_marker(base, direction, 0.5 * speed, (1.0, 0.2, 0.2, 0.8)),
                arrow_marker(base + np.array([0.0, 0.0, 1.0]), facing, 0.5, (0.2, 0.4, 1.0, 0.8))]

    def describe(self, env_id: int) -> str:
        return f"target speed {float(self.target_speed[env_id]):.2f} m/s"
