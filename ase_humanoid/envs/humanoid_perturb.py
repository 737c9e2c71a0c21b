"""`HumanoidPerturb`: projectiles thrown at the humanoid, the robustness test of a trained controller.

Two projectiles live in every world as free boxes:
  `projectile_small`  0.1 m cube, 1 kg (density 1000 kg/m^3)
  `projectile_large`  0.4 m cube, 2 kg (density 31.25 kg/m^3: a light but bulky crate)
Every `throw_interval` (60) control steps of an episode one of them is thrown, alternating small
and large: it starts 4-5 m from the torso in a random horizontal direction, 0-1 m above the torso,
and flies at 30-40 m/s aimed at the torso's position at launch (the launch velocity makes up for
the gravity drop over the flight time). `flight_steps` (30) control steps after its throw a
projectile is parked again: at rest on the floor 100 m away, out of reach. Early termination is
off by default (a fall is part of the test); the reward is 0.
"""

from __future__ import annotations

import math

import torch

from ase_humanoid.envs.config import HumanoidPerturbConfig
from ase_humanoid.envs.humanoid import Humanoid
from ase_humanoid.sim.base import PropSpec
from ase_humanoid.utils import rotations as rot
from ase_humanoid.utils.render import Marker

GRAVITY = 9.81
PROJECTILES = (
    PropSpec("projectile_small", "box", (0.05, 0.05, 0.05), 1000.0, rgba=(0.9, 0.5, 0.1, 1.0)),
    PropSpec("projectile_large", "box", (0.2, 0.2, 0.2), 31.25, rgba=(0.6, 0.4, 0.2, 1.0)),
)
PARK_DISTANCE = 100.0  # metres from the origin, along +x; projectiles are spaced 2 m apart in y
TARGET_BODY = "torso"


class HumanoidPerturb(Humanoid):
    """Humanoid under a schedule of projectile hits (see module docstring)."""

    config_class = HumanoidPerturbConfig

    def setup_task(self) -> None:
        self.projectiles = PROJECTILES
        self.target_body_id = self.robot.body_id(TARGET_BODY)
        # control step of each projectile's last throw in its episode; -1 = parked
        self.thrown_at = torch.full((self.cfg.num_envs, len(self.projectiles)), -1, dtype=torch.long,
                                    device=torch.device(self.cfg.device))

    def prop_specs(self) -> list[PropSpec]:
        return list(self.projectiles)

    # ---- schedule -----------------------------------------------------------------------------

    def reset_task(self, env_ids: torch.Tensor) -> None:
        for k in range(len(self.projectiles)):
            self._park(k, env_ids)

    def post_physics_step(self) -> None:
        super().post_physics_step()
        steps = self.episode_steps
        for k in range(len(self.projectiles)):
            landed = (self.thrown_at[:, k] >= 0) & (steps - self.thrown_at[:, k] >= self.cfg.flight_steps)
            self._park(k, landed.nonzero(as_tuple=False).flatten())
        throw_number = steps // self.cfg.throw_interval  # 1 for the first throw
        due = (steps % self.cfg.throw_interval == 0) & (throw_number > 0)
        for k in range(len(self.projectiles)):
            ids = (due & ((throw_number - 1) % len(self.projectiles) == k)).nonzero(as_tuple=False).flatten()
            self._throw(k, ids)

    def _park(self, k: int, env_ids: torch.Tensor) -> None:
        n = len(env_ids)
        if n == 0:
            return
        spec = self.projectiles[k]
        pos = torch.tensor([PARK_DISTANCE, 2.0 * k, spec.size[2]], device=self.device).expand(n, 3)
        zeros3 = torch.zeros(n, 3, device=self.device)
        self.sim.set_prop_state(spec.name, env_ids, pos, rot.quat_identity(n, device=self.device),
                                zeros3, zeros3)
        self.thrown_at[env_ids, k] = -1

    def _throw(self, k: int, env_ids: torch.Tensor) -> None:
        n = len(env_ids)
        if n == 0:
            return
        cfg, dev, g = self.cfg, self.device, self.generator

        def uniform(lo, hi):
            return lo + (hi - lo) * torch.rand(n, generator=g, device=dev)

        target = self.sim.state.body_pos[env_ids, self.target_body_id]  # [n, 3]
        azimuth = uniform(-math.pi, math.pi)
        distance = uniform(cfg.throw_distance_min, cfg.throw_distance_max)
        start = target + torch.stack([distance * torch.cos(azimuth), distance * torch.sin(azimuth),
                                      uniform(0.0, 1.0)], dim=-1)
        speed = uniform(cfg.throw_speed_min, cfg.throw_speed_max)
        offset = target - start
        flight_time = offset.norm(dim=-1) / speed  # [n]
        velocity = offset / flight_time.unsqueeze(-1)
        velocity[:, 2] += 0.5 * GRAVITY * flight_time  # lands on the target despite gravity
        zeros3 = torch.zeros(n, 3, device=dev)
        self.sim.set_prop_state(self.projectiles[k].name, env_ids, start,
                                rot.quat_identity(n, device=dev), velocity, zeros3)
        self.thrown_at[env_ids, k] = self.episode_steps[env_ids]

    def markers(self, env_id: int) -> list[Marker]:
        """The torso, the projectiles' target."""
        pos = self.sim.state.body_pos[env_id, self.target_body_id].detach().cpu().numpy()
        return [Marker(kind="sphere", pos=pos, size=(0.05, 0.05, 0.05), rgba=(1.0, 0.2, 0.2, 0.6))]
