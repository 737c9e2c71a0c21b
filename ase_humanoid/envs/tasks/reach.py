"""`HumanoidReach`: bring the reach body (right hand; the sword on the sword-and-shield humanoid,
from `reach_body` in cfg/robot/<name>.yaml) to a 3-D target.

The effector point is the reach body's origin plus `reach_offset` (metres, in the body frame;
default none). On the sword-and-shield humanoid the sword body's origin already *is* the blade
tip: its blade box spans x in [-0.68, 0] of the sword frame (assets/mjcf), so no offset is needed.

Targets are placed up to `target_dist_max` (default 1 m) from the root along x and along y, at a
height uniform in [target_height_min, target_height_max] (default 0.2-2.0 m), and redrawn every
`change_steps_min`-`change_steps_max` control steps (default 50-100). Task observation (3): the
target relative to the root in the heading frame. Reward: `rewards.reach_reward`.
Metric: `task/distance`, effector-to-target distance (m) per control step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ase_humanoid.envs.config import _check
from ase_humanoid.envs.tasks import rewards
from ase_humanoid.envs.tasks.common import HumanoidTask, TaskEnvConfig, sphere_marker
from ase_humanoid.errors import ConfigError
from ase_humanoid.utils import rotations as rot
from ase_humanoid.utils.render import Marker


@dataclass
class HumanoidReachConfig(TaskEnvConfig):
    change_steps_min: int = 50
    change_steps_max: int = 100
    target_dist_max: float = 1.0  # m, along x and along y from the root
    target_height_min: float = 0.2  # m
    target_height_max: float = 2.0
    reach_body: str | None = None  # None: the robot's reach_body (cfg/robot/<name>.yaml)
    reach_offset: tuple | None = None  # [3] point on the reach body, body frame; None: origin

    def validate(self) -> None:
        super().validate()
        _check(self.target_dist_max >= 0, "target_dist_max", f"must be >= 0, got {self.target_dist_max}")
        _check(0.0 <= self.target_height_min <= self.target_height_max, "target_height_min",
               f"need 0 <= target_height_min <= target_height_max, got "
               f"{self.target_height_min}, {self.target_height_max}")
        if self.reach_offset is not None:
            offset = list(self.reach_offset)
            _check(len(offset) == 3 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                            for v in offset),
                   "reach_offset", f"must be three numbers (metres, body frame), got {self.reach_offset}")


class HumanoidReach(HumanoidTask):
    """Reach task (see module docstring)."""

    config_class = HumanoidReachConfig
    task_obs_size = 3

    def setup_task(self) -> None:
        super().setup_task()
        cfg = self.cfg
        n, dev = cfg.num_envs, torch.device(cfg.device)
        name = cfg.reach_body or self.robot.reach_body_name
        if name is None:
            raise ConfigError(f"env config key 'reach_body': robot {self.robot.name!r} names no reach "
                              "body; set reach_body to one of its bodies")
        if name not in self.robot.body_names:
            raise ConfigError(f"env config key 'reach_body': {name!r} is not a body of {self.robot.name}; "
                              f"bodies: {self.robot.body_names}")
        self.reach_body_id = self.robot.body_id(name)
        self.reach_offset = torch.tensor(list(cfg.reach_offset or (0.0, 0.0, 0.0)),
                                         dtype=torch.float32, device=dev)
        self.target_pos = torch.zeros(n, 3, device=dev)

    def effector_pos(self) -> torch.Tensor:
        """World position `[N, 3]` of the effector point (reach body origin + offset)."""
        s = self.sim.state
        body_rot = s.body_rot[:, self.reach_body_id]
        return s.body_pos[:, self.reach_body_id] + rot.quat_rotate(body_rot, self.reach_offset.expand_as(
            s.body_pos[:, self.reach_body_id]))

    def sample_goals(self, env_ids: torch.Tensor) -> None:
        cfg, n = self.cfg, len(env_ids)
        rand = torch.rand(n, 3, generator=self.generator, device=self.device)
        target = torch.empty(n, 3, device=self.device)
        target[:, :2] = self.sim.state.root_pos[env_ids, :2] + cfg.target_dist_max * (2.0 * rand[:, :2] - 1.0)
        target[:, 2] = cfg.target_height_min + (cfg.target_height_max - cfg.target_height_min) * rand[:, 2]
        target[:, 2] += self.ground.height_at(target[:, :2])  # heights above the ground (terrain)
        self.target_pos[env_ids] = target

    def set_goals(self, env_ids: torch.Tensor, target_pos: torch.Tensor) -> None:
        """Set targets `[k, 3]` (world) explicitly."""
        self.target_pos[env_ids] = target_pos.float()

    def compute_task_obs(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        ids = slice(None) if env_ids is None else env_ids
        s = self.sim.state
        return rewards.reach_obs(s.root_pos[ids], s.root_rot[ids], self.target_pos[ids])

    def compute_task_reward(self) -> torch.Tensor:
        effector = self.effector_pos()
        self.add_metric("distance", (self.target_pos - effector).norm(dim=-1))
        return rewards.reach_reward(effector, self.target_pos)

    def markers(self, env_id: int) -> list[Marker]:
        return [sphere_marker(self.target_pos[env_id].detach().cpu().numpy(), 0.05, (1.0, 0.2, 0.2, 0.9)),
                sphere_marker(self.effector_pos()[env_id].detach().cpu().numpy(), 0.03, (0.2, 1.0, 0.2, 0.9))]
