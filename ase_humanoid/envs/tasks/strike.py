"""`HumanoidStrike`: knock over a standing target with the striking bodies.

The target is a real free rigid body in every world (`PropSpec` "target"): a 0.4 x 0.4 x 1.8 m
box of density 30 kg/m^3 (8.64 kg). At every reset it stands upright on the floor in a uniform
direction from the root, turned by a uniform yaw, at rest: with probability `target_near_prob`
(0.5) `target_dist_min`-`target_near_dist_max` (0.5-1.5 m) away, otherwise
`target_dist_min`-`target_dist_max` (0.5-10 m), as in the ASE release.

Task observation (15): the target's ground offset from the root and its height above the floor
(3), its rotation as tan-norm (6), its linear (3) and angular (3) velocity, all in the root's
heading frame.
Reward: `rewards.strike_reward` (0.6 tilt + 0.4 approach speed; 1 on every step the target lies
down). Knocking the target over does not end the episode: the policy keeps earning 1 per step
while it stays down, so striking beats any amount of standing near it (standing earns 0).
The episode ends with
  * failure: the target is pushed while a body other than the striking ones (right hand and
    forearm; plus the sword on the sword-and-shield humanoid) and the feet touches anything
    (`rewards.strike_forbidden_contact` on the per-body and the target's contact forces),
  * a fall, as in every humanoid env, or the time limit.
Metrics per finished episode: `task/success_rate` (the target went down and the episode did not
end in a failure), `task/failure_rate`, `task/time_to_success` (seconds to the first knock-down,
successful episodes only).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ase_humanoid.envs.config import _check
from ase_humanoid.envs.tasks import rewards
from ase_humanoid.envs.tasks.common import HumanoidTask, TaskEnvConfig, random_yaw, sphere_marker
from ase_humanoid.envs.terrain_placement import highest_ground
from ase_humanoid.errors import ConfigError
from ase_humanoid.sim.base import PropSpec
from ase_humanoid.utils import rotations as rot
from ase_humanoid.utils.render import Marker

TARGET = PropSpec("target", "box", (0.2, 0.2, 0.9), 30.0, rgba=(0.8, 0.6, 0.2, 1.0))
"""The strike target: half-extents 0.2, 0.2, 0.9 m (0.4 x 0.4 x 1.8 m box), 30 kg/m^3."""

DEFAULT_STRIKE_BODIES = {
    "amp_humanoid": ["right_hand", "right_lower_arm"],
    "sword_shield": ["sword", "right_hand", "right_lower_arm"],
}


@dataclass
class HumanoidStrikeConfig(TaskEnvConfig):
    target_dist_min: float = 0.5  # m from the root (ground plane)
    target_dist_max: float = 10.0
    target_near_prob: float = 0.5  # probability of a near target, drawn up to target_near_dist_max
    target_near_dist_max: float = 1.5
    # bodies allowed to hit the target; None: right hand and forearm (+ sword when present)
    strike_bodies: list[str] | None = None

    def validate(self) -> None:
        super().validate()
        _check(0.0 < self.target_dist_min <= self.target_dist_max, "target_dist_min",
               f"need 0 < target_dist_min <= target_dist_max, got "
               f"{self.target_dist_min}, {self.target_dist_max}")
        _check(0.0 <= self.target_near_prob <= 1.0, "target_near_prob",
               f"must be in [0, 1], got {self.target_near_prob}")
        _check(self.target_dist_min <= self.target_near_dist_max, "target_near_dist_max",
               f"need target_dist_min <= target_near_dist_max, got "
               f"{self.target_dist_min}, {self.target_near_dist_max}")


class HumanoidStrike(HumanoidTask):
    """Strike task (see module docstring)."""

    config_class = HumanoidStrikeConfig
    task_obs_size = 15
    resamples_goals = False

    def setup_task(self) -> None:
        super().setup_task()
        cfg = self.cfg
        n, dev = cfg.num_envs, torch.device(cfg.device)
        names = cfg.strike_bodies
        if names is None:
            names = DEFAULT_STRIKE_BODIES.get(self.robot.name, ["right_hand", "right_lower_arm"])
        unknown = [b for b in names if b not in self.robot.body_names]
        if unknown:
            raise ConfigError(f"env config key 'strike_bodies': {unknown} are not bodies of "
                              f"{self.robot.name}; bodies: {self.robot.body_names}")
        self.strike_body_names = list(names)
        allowed = torch.zeros(self.robot.num_bodies, dtype=torch.bool, device=dev)
        allowed[[self.robot.body_id(b) for b in names]] = True
        allowed[list(self.robot.contact_body_ids)] = True  # the feet stand on the floor
        self.allowed_contact_mask = allowed  # [B]
        # outcome of the last step (before any reset), recomputed every step
        self.knocked_down = torch.zeros(n, dtype=torch.bool, device=dev)  # target down now
        self.failed = torch.zeros(n, dtype=torch.bool, device=dev)  # forbidden contact this step
        # control step of the episode at which the target first went down; -1: not yet
        self.down_at_step = torch.full((n,), -1, dtype=torch.long, device=dev)

    def prop_specs(self) -> list[PropSpec]:
        return [TARGET]

    @property
    def target_state(self):
        """The target's `PropState` (pos, rot, lin_vel, ang_vel, contact_force, in_contact)."""
        return self.sim.prop_state(TARGET.name)

    # ---- goals --------------------------------------------------------------------------------

    def sample_goals(self, env_ids: torch.Tensor) -> None:
        cfg, n, g, dev = self.cfg, len(env_ids), self.generator, self.device
        near = torch.rand(n, generator=g, device=dev) < cfg.target_near_prob
        dist_max = torch.where(near, cfg.target_near_dist_max, cfg.target_dist_max)
        distance = cfg.target_dist_min + (dist_max - cfg.target_dist_min) * torch.rand(n, generator=g, device=dev)
        azimuth = random_yaw(n, g, dev)
        xy = self.sim.state.root_pos[env_ids, :2] + distance.unsqueeze(-1) * torch.stack(
            [torch.cos(azimuth), torch.sin(azimuth)], dim=-1)
        self.place_target(env_ids, xy, random_yaw(n, g, dev))
        self.down_at_step[env_ids] = -1

    def place_target(self, env_ids: torch.Tensor, xy: torch.Tensor, yaw: torch.Tensor) -> None:
        """Stand the target upright at rest at ground position `xy [k, 2]`, turned by `yaw [k]`."""
        n = len(env_ids)
        # on terrain, on the highest ground under its footprint (flat ground: z = 0)
        base = torch.zeros(n, device=self.device) if self.terrain is None else highest_ground(
            self.ground, xy.float(), max(TARGET.size[:2]))
        pos = torch.cat([xy.float(), (base + TARGET.size[2]).unsqueeze(-1)], dim=-1)
        axis = torch.tensor([0.0, 0.0, 1.0], device=self.device).expand(n, 3)
        zeros = torch.zeros(n, 3, device=self.device)
        self.sim.set_prop_state(TARGET.name, env_ids, pos, rot.quat_from_axis_angle(axis, yaw.float()),
                                zeros, zeros)

    # ---- observation, reward, termination -----------------------------------------------------

    def compute_task_obs(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        ids = slice(None) if env_ids is None else env_ids
        s, t = self.sim.state, self.target_state
        return rewards.strike_obs(s.root_pos[ids], s.root_rot[ids], t.pos[ids], t.rot[ids],
                                  t.lin_vel[ids], t.ang_vel[ids])

    def compute_task_reward(self) -> torch.Tensor:
        s, t = self.sim.state, self.target_state
        return rewards.strike_reward(s.root_pos, self.root_vel_xy(), t.pos, t.rot)

    def compute_task_termination(self) -> torch.Tensor:
        """Failures only: a knocked-down target keeps paying until the episode times out."""
        s, t = self.sim.state, self.target_state
        self.knocked_down = rewards.strike_success(t.rot)
        first_down = self.knocked_down & (self.down_at_step < 0)
        self.down_at_step = torch.where(first_down, self.episode_steps, self.down_at_step)
        # The first step after a reset can carry contact impulses from the teleport.
        self.failed = rewards.strike_forbidden_contact(t.contact_force, s.contact_forces,
                                                       self.allowed_contact_mask) & (self.episode_steps > 1)
        return self.failed

    def end_goal_period(self, env_ids: torch.Tensor) -> None:
        success = (self.down_at_step[env_ids] >= 0) & ~self.failed[env_ids]
        self.add_metric("success_rate", success.float())
        self.add_metric("failure_rate", self.failed[env_ids].float())
        if bool(success.any()):
            self.add_metric("time_to_success", self.down_at_step[env_ids[success]].float() * self.control_dt)

    def markers(self, env_id: int) -> list[Marker]:
        top = self.target_state.pos[env_id].detach().cpu().numpy().copy()
        top[2] += TARGET.size[2] + 0.2
        color = (0.2, 1.0, 0.2, 0.9) if bool(self.knocked_down[env_id]) else (1.0, 0.2, 0.2, 0.9)
        return [sphere_marker(top, 0.08, color)]
