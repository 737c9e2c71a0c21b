"""What the goal-directed task envs share: goal timers, root velocity over a control step,
evaluation metrics and marker helpers.

`HumanoidTask` is the base `Humanoid` plus
  * `prev_root_pos [N, 3]`: the root position before the current control step; the ground
    velocity the rewards use is the root's displacement over the step / dt (smoother than the
    instantaneous velocity at the last physics substep),
  * a goal timer: every env draws a new goal after randint[change_steps_min, change_steps_max]
    control steps (`sample_goals(ids)`), and at every reset,
  * metric accumulators (sums and counts kept on the device, read by `task_metrics()`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ase_humanoid.envs.config import HumanoidEnvConfig, _check
from ase_humanoid.envs.humanoid import Humanoid
from ase_humanoid.utils.render import Marker


@dataclass
class TaskEnvConfig(HumanoidEnvConfig):
    """Base humanoid settings plus the goal resampling interval (control steps)."""

    state_init: str = "Default"  # standing, as in the ASE release
    change_steps_min: int = 100
    change_steps_max: int = 200

    def validate(self) -> None:
        super().validate()
        _check(1 <= self.change_steps_min <= self.change_steps_max, "change_steps_min",
               f"need 1 <= change_steps_min <= change_steps_max, got "
               f"{self.change_steps_min}, {self.change_steps_max}")


class HumanoidTask(Humanoid):
    """Base of the heading / location / reach / strike envs (see module docstring).

    Subclasses implement `sample_goals(env_ids)` and may override `end_goal_period(env_ids)`
    (record metrics of goals that are about to be replaced) and `resamples_goals`.
    """

    config_class = TaskEnvConfig
    resamples_goals = True  # False: a goal lasts the whole episode (strike)

    def setup_task(self) -> None:
        n, dev = self.cfg.num_envs, torch.device(self.cfg.device)
        self.prev_root_pos = torch.zeros(n, 3, device=dev)
        self.steps_to_change = torch.zeros(n, dtype=torch.long, device=dev)
        self.goal_steps = torch.zeros(n, dtype=torch.long, device=dev)  # steps on the current goal
        self._metric_sums: dict[str, torch.Tensor] = {}
        self._metric_counts: dict[str, torch.Tensor] = {}

    # ---- goals --------------------------------------------------------------------------------

    def sample_goals(self, env_ids: torch.Tensor) -> None:
        raise NotImplementedError

    def end_goal_period(self, env_ids: torch.Tensor) -> None:
        """Record metrics of the goals of `env_ids [k]` (all have been pursued >= 1 step)."""

    def _new_goals(self, env_ids: torch.Tensor) -> None:
        self.sample_goals(env_ids)
        self.goal_steps[env_ids] = 0
        if self.resamples_goals:
            cfg = self.cfg
            self.steps_to_change[env_ids] = torch.randint(
                cfg.change_steps_min, cfg.change_steps_max + 1, (len(env_ids),),
                generator=self.generator, device=self.device)

    def reset_task(self, env_ids: torch.Tensor) -> None:
        pursued = env_ids[self.goal_steps[env_ids] > 0]
        if len(pursued):
            self.end_goal_period(pursued)
        self.prev_root_pos[env_ids] = self.sim.state.root_pos[env_ids]
        self._new_goals(env_ids)

    def restart_episodes(self, env_ids: torch.Tensor) -> torch.Tensor:
        self.goal_steps[env_ids] = 0  # a discarded episode start records no goal metrics
        return super().restart_episodes(env_ids)

    def pre_physics_step(self, actions: torch.Tensor) -> None:
        super().pre_physics_step(actions)
        self.prev_root_pos = self.sim.state.root_pos.clone()
        if self.resamples_goals:
            due = (self.steps_to_change <= 0).nonzero(as_tuple=False).flatten()
            if len(due):
                self.end_goal_period(due[self.goal_steps[due] > 0])
                self._new_goals(due)
            self.steps_to_change -= 1  # a goal drawn with k lasts exactly k control steps

    def post_physics_step(self) -> None:
        super().post_physics_step()
        self.goal_steps += 1

    def root_vel_xy(self) -> torch.Tensor:
        """Ground velocity of the root over the last control step `[N, 2]` (m/s)."""
        return (self.sim.state.root_pos[:, :2] - self.prev_root_pos[:, :2]) / self.control_dt

    # ---- metrics ------------------------------------------------------------------------------

    def add_metric(self, name: str, values: torch.Tensor) -> None:
        """Fold `values [k]` into the running mean of metric `name` (no host sync)."""
        values = values.detach().float().reshape(-1)
        if name not in self._metric_sums:
            self._metric_sums[name] = torch.zeros((), device=self.device)
            self._metric_counts[name] = torch.zeros((), device=self.device)
        self._metric_sums[name] += values.sum()
        self._metric_counts[name] += values.numel()

    def task_metrics(self) -> dict[str, float]:
        """Means of the task metrics since the last call (`task/<name>`), then cleared."""
        out = {}
        for name, total in self._metric_sums.items():
            count = float(self._metric_counts[name])
            if count > 0:
                out[f"task/{name}"] = float(total) / count
        self._metric_sums, self._metric_counts = {}, {}
        return out


# ---- small helpers ------------------------------------------------------------------------

def uniform(n: int, low: float, high: float, generator: torch.Generator,
            device: torch.device) -> torch.Tensor:
    """`[n]` uniform in [low, high)."""
    return low + (high - low) * torch.rand(n, generator=generator, device=device)


def unit_vectors_xy(angle: torch.Tensor) -> torch.Tensor:
    """`[n] -> [n, 2]` (cos, sin)."""
    return torch.stack([torch.cos(angle), torch.sin(angle)], dim=-1)


def random_yaw(n: int, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """`[n]` uniform angles in [-pi, pi)."""
    return uniform(n, -math.pi, math.pi, generator, device)


def arrow_marker(origin: np.ndarray, direction: np.ndarray, length: float,
                 rgba: tuple[float, float, float, float], radius: float = 0.02) -> Marker:
    """An arrow marker from `origin [3]` along `direction [3]` (normalised here)."""
    z = np.asarray(direction, dtype=np.float64)
    z = z / max(np.linalg.norm(z), 1e-9)
    helper = np.array([0.0, 0.0, 1.0]) if abs(z[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return Marker(kind="arrow", pos=np.asarray(origin, dtype=np.float64),
                  size=(radius, radius, length), rgba=rgba, mat=np.stack([x, y, z], axis=1))


def sphere_marker(pos: np.ndarray, radius: float, rgba: tuple[float, float, float, float]) -> Marker:
    return Marker(kind="sphere", pos=np.asarray(pos, dtype=np.float64), size=(radius, radius, radius),
                  rgba=rgba)
