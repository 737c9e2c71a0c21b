"""`HumanoidPerturb`: projectiles thrown at the humanoid, the robustness test of a trained controller.

The schedule, sizes, masses and aim are the ASE release's (all config keys):
  * every world holds one free box per entry of `projectile_kinds` (13 by default): `small`
    0.2 m cubes of density 200 kg/m^3 (1.6 kg) and `large` 0.5 m cubes of density 100 kg/m^3
    (12.5 kg);
  * projectile k is launched `projectile_intervals[k]` control steps after projectile k - 1 (the
    first after the episode start): a burst of 11 small ones by step 128, a large one at 188 and
    a small one at 488; the schedule repeats every 489 steps of a longer episode;
  * a launch starts 4-5 m from the root in a uniform ground direction, at a height uniform in
    0.25-2 m, and flies at 30-40 m/s towards the torso, its direction perturbed by 0.1 N(0, 1)
    per axis before normalising, plus the torso's ground velocity (no gravity correction).
`flight_steps` (30) control steps after its launch a projectile is parked: at rest on the floor
100 m away, out of reach (the release leaves it lying where it fell). Early termination is off
by default, so an episode runs on after a fall (as in the release) and `episode/fall_rate` stays
0; what the test measures is `task/fall_rate` (`task_metrics()`, printed by `test=true`): the
fraction of finished episodes in which the humanoid fell at some point, by the same criterion
that ends an episode elsewhere (`terminations.fall_termination`). The reward is 0.
"""

from __future__ import annotations

import math

import torch

from ase_humanoid.envs.config import HumanoidPerturbConfig
from ase_humanoid.envs.humanoid import Humanoid
from ase_humanoid.envs.terminations import fall_termination
from ase_humanoid.envs.terrain_placement import body_heights_above
from ase_humanoid.sim.base import PropSpec
from ase_humanoid.utils import rotations as rot
from ase_humanoid.utils.render import Marker

PARK_DISTANCE = 100.0  # metres from the origin, along +x; projectiles are spaced 2 m apart in y
TARGET_BODY = "torso"
PROJECTILE_COLORS = {"small": (0.9, 0.5, 0.1, 1.0), "large": (0.6, 0.4, 0.2, 1.0)}


def projectile_specs(kinds: list[str], sizes: dict[str, float], densities: dict[str, float]) -> list[PropSpec]:
    """One box `PropSpec` per entry of `kinds`, named projectile_<k>; `sizes` are edge lengths (m)."""
    return [PropSpec(f"projectile_{k}", "box", (0.5 * sizes[kind],) * 3, densities[kind],
                     rgba=PROJECTILE_COLORS[kind]) for k, kind in enumerate(kinds)]


def launch_steps(intervals: list[int]) -> list[int]:
    """Episode step of each launch: the running sum of `intervals` ([60, 7, ...] -> [60, 67, ...])."""
    steps, total = [], 0
    for interval in intervals:
        total += interval
        steps.append(total)
    return steps


def launch_states(target_pos: torch.Tensor, target_vel_xy: torch.Tensor, root_xy: torch.Tensor,
                  distance: torch.Tensor, azimuth: torch.Tensor, height: torch.Tensor, speed: torch.Tensor,
                  aim_noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Start position `[n, 3]` and velocity `[n, 3]` of projectiles aimed at `target_pos [n, 3]`.

    The start is `distance [n]` from `root_xy [n, 2]` in direction `azimuth [n]`, at `height [n]`;
    the direction to the target plus `aim_noise [n, 3]` is normalised, scaled by `speed [n]`, and
    the target's ground velocity `target_vel_xy [n, 2]` is added (so a moving target is led).
    """
    start = torch.cat([root_xy + distance.unsqueeze(-1) * torch.stack([torch.cos(azimuth), torch.sin(azimuth)], -1),
                       height.unsqueeze(-1)], dim=-1)
    direction = torch.nn.functional.normalize(target_pos - start + aim_noise, dim=-1)
    velocity = speed.unsqueeze(-1) * direction
    velocity[:, :2] += target_vel_xy
    return start, velocity


class HumanoidPerturb(Humanoid):
    """Humanoid under the release's schedule of projectile hits (see module docstring)."""

    config_class = HumanoidPerturbConfig

    def setup_task(self) -> None:
        cfg, dev = self.cfg, torch.device(self.cfg.device)
        sizes = {"small": cfg.small_projectile_size, "large": cfg.large_projectile_size}
        densities = {"small": cfg.small_projectile_density, "large": cfg.large_projectile_density}
        self.projectiles = projectile_specs(cfg.projectile_kinds, sizes, densities)
        self.target_body_id = self.robot.body_id(TARGET_BODY)
        steps = launch_steps(cfg.projectile_intervals)
        self.launch_steps = torch.tensor(steps, dtype=torch.long, device=dev)  # [K]
        self.schedule_period = steps[-1] + 1  # as the release: step % (last launch + 1)
        # control step of each projectile's last launch in its episode; -1 = parked
        self.thrown_at = torch.full((cfg.num_envs, len(self.projectiles)), -1, dtype=torch.long, device=dev)
        self.has_fallen = torch.zeros(cfg.num_envs, dtype=torch.bool, device=dev)  # in this episode
        self.steps_run = torch.zeros(cfg.num_envs, dtype=torch.long, device=dev)  # 0: nothing to report
        self._fall_sum = torch.zeros((), device=dev)
        self._fall_count = torch.zeros((), device=dev)

    def prop_specs(self) -> list[PropSpec]:
        return list(self.projectiles)

    # ---- schedule -----------------------------------------------------------------------------

    def reset_task(self, env_ids: torch.Tensor) -> None:
        ran = self.steps_run[env_ids] > 0  # episodes that ended (not the first reset)
        self._fall_sum += (self.has_fallen[env_ids] & ran).sum()
        self._fall_count += ran.sum()
        self.has_fallen[env_ids] = False
        self.steps_run[env_ids] = 0
        for k in range(len(self.projectiles)):
            self._park(k, env_ids)

    def task_metrics(self) -> dict[str, float]:
        """`task/fall_rate` of the episodes finished since the last call (then cleared)."""
        count = float(self._fall_count)
        out = {"task/fall_rate": float(self._fall_sum) / count} if count > 0 else {}
        self._fall_sum.zero_()
        self._fall_count.zero_()
        return out

    def post_physics_step(self) -> None:
        super().post_physics_step()
        s = self.sim.state
        self.steps_run += 1
        heights = None if self.terrain is None else body_heights_above(s.body_pos, self.ground_under_bodies(s))
        self.has_fallen |= fall_termination(s.contact_forces, s.body_pos, self.termination_heights,
                                            self.non_contact_mask, self.episode_steps, body_heights=heights)
        steps = self.episode_steps.unsqueeze(-1)  # [N, 1]
        landed = (self.thrown_at >= 0) & (steps - self.thrown_at >= self.cfg.flight_steps)  # [N, K]
        due = (steps % self.schedule_period) == self.launch_steps  # [N, K]
        # One host sync for the common case of nothing to do; the loops run over projectiles
        # (13), never over envs.
        busy = torch.stack([landed.any(0), due.any(0)])  # [2, K]
        if not bool(busy.any()):
            return
        busy = busy.tolist()
        for k in range(len(self.projectiles)):
            if busy[0][k]:
                self._park(k, landed[:, k].nonzero(as_tuple=False).flatten())
            if busy[1][k]:
                self._launch(k, due[:, k].nonzero(as_tuple=False).flatten())

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

    def _launch(self, k: int, env_ids: torch.Tensor) -> None:
        n = len(env_ids)
        if n == 0:
            return
        cfg, dev, g = self.cfg, self.device, self.generator

        def uniform(lo, hi):
            return lo + (hi - lo) * torch.rand(n, generator=g, device=dev)

        s = self.sim.state
        start, velocity = launch_states(
            s.body_pos[env_ids, self.target_body_id], s.body_lin_vel[env_ids, self.target_body_id, :2],
            s.root_pos[env_ids, :2], uniform(cfg.throw_distance_min, cfg.throw_distance_max),
            uniform(-math.pi, math.pi), uniform(cfg.throw_height_min, cfg.throw_height_max),
            uniform(cfg.throw_speed_min, cfg.throw_speed_max),
            cfg.aim_noise * torch.randn(n, 3, generator=g, device=dev))
        zeros3 = torch.zeros(n, 3, device=dev)
        self.sim.set_prop_state(self.projectiles[k].name, env_ids, start,
                                rot.quat_identity(n, device=dev), velocity, zeros3)
        self.thrown_at[env_ids, k] = self.episode_steps[env_ids]

    def markers(self, env_id: int) -> list[Marker]:
        """The torso, the projectiles' target."""
        pos = self.sim.state.body_pos[env_id, self.target_body_id].detach().cpu().numpy()
        return [Marker(kind="sphere", pos=pos, size=(0.05, 0.05, 0.05), rgba=(1.0, 0.2, 0.2, 0.6))]
