"""What a perfect policy would score on Heading's and Location's metrics, given how fast it moves.

    python benchmarks/task_ceiling.py --json
    python benchmarks/task_ceiling.py --location-speeds 1 1.5 2 3 --heading-turn-rates 1 2 4

Both tasks redraw their goal every `change_steps_min`-`change_steps_max` control steps, so part
of every metric is the time any character needs to answer a new goal. This replays each task's
goal schedule (its config in cfg/task/, the env's goal timer: a goal drawn with k lasts exactly k
control steps, the last one ends with the episode) for an ideal character and scores it as the
env does (`HumanoidTask.add_metric` per goal period or per step):

* Location: a point that moves straight at the target at `speed` from the first step of each
  goal, never overshooting (no acceleration, no turning time). `success_rate` is the share of
  goal periods that end within `success_distance` of the target, `final_distance` their mean
  distance then (the env's `task/success_rate`, `task/final_distance`).
* Heading, two models of an ideal character. The release's task draws the travel direction and
  the facing independently (and pays facing only 0.3 of the reward), so a character need not turn
  its body to change where it goes:
  - turn rate: always moving at the goal's target speed along its facing, which turns toward
    the target direction at `turn_rate` rad/s (a character that must face where it goes);
  - acceleration: its ground velocity moves straight toward the goal's (target speed along the
    target direction) by at most `accel` m/s^2 (a character that redirects its velocity, sidestepping
    and turning as it likes).
  Each episode starts at the target speed in a random direction. `direction_error` and
  `speed_error` are the per-step means of `rewards.heading_errors`.

These are upper bounds for a real character, which also has to start, stop and keep its balance.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.envs.tasks.rewards import heading_errors  # noqa: E402
from ase_humanoid.paths import CFG_DIR  # noqa: E402
from ase_humanoid.sim.base import PHYSICS_DT  # noqa: E402


def task_settings(task: str) -> dict:
    """The task's `env:` block of cfg/task/<task>.yaml (goal timer, episode length, targets)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.load(CFG_DIR / "task" / f"{task}.yaml"))["env"]


def control_dt(settings: dict) -> float:
    """Seconds per control step (`Humanoid.control_dt`)."""
    return settings["control_substeps"] * PHYSICS_DT


def draw_countdowns(n: int, settings: dict, generator: torch.Generator) -> torch.Tensor:
    """`[n]` control steps each new goal lasts, uniform in [change_steps_min, change_steps_max]."""
    return torch.randint(settings["change_steps_min"], settings["change_steps_max"] + 1, (n,), generator=generator)


def goal_schedule(steps_to_change: torch.Tensor, settings: dict, generator: torch.Generator) -> torch.Tensor:
    """Advance the env's goal timer one control step: `[N]` bool, the goals due for a redraw now
    (steps_to_change <= 0); those get a new countdown in [change_steps_min, change_steps_max], and
    every countdown moves one step (in place, as `HumanoidTask.pre_physics_step`)."""
    due = steps_to_change <= 0
    fresh = draw_countdowns(len(steps_to_change), settings, generator)
    steps_to_change.copy_(torch.where(due, fresh, steps_to_change) - 1)
    return due


def location_ceiling(speed: float, settings: dict, num_episodes: int = 20_000, seed: int = 0) -> dict:
    """Location's metrics for a point moving at `speed` m/s straight at each target."""
    g = torch.Generator().manual_seed(seed)
    n, dist_max = num_episodes, settings["target_dist_max"]
    pos = torch.zeros(n, 2, dtype=torch.float64)

    def draw(count):
        return dist_max * (2.0 * torch.rand(count, 2, generator=g, dtype=torch.float64) - 1.0)

    target = pos + draw(n)
    steps_to_change = draw_countdowns(n, settings, g)
    final_distances = []
    max_step = speed * control_dt(settings)
    for _ in range(settings["max_episode_length"]):
        due = goal_schedule(steps_to_change, settings, g)
        if due.any():
            final_distances.append((target[due] - pos[due]).norm(dim=-1))
            target[due] = pos[due] + draw(int(due.sum()))
        diff = target - pos
        dist = diff.norm(dim=-1, keepdim=True)
        pos = pos + diff * (torch.clamp(dist, max=max_step) / dist.clamp_min(1e-12))
    final_distances.append((target - pos).norm(dim=-1))  # the goal the episode ends on
    final = torch.cat(final_distances)
    return {"speed_m_s": speed, "success_rate": round(float((final < settings["success_distance"]).double().mean()), 4),
            "final_distance_m": round(float(final.mean()), 3), "goal_periods": int(final.numel())}


def heading_replay(settings: dict, num_episodes: int, seed: int, start, move) -> tuple[float, float]:
    """Mean direction and speed error per step of Heading's goal schedule for an ideal character:
    `start(angles, target_speed)` gives its initial state after the first goals are drawn
    (`angles(n)` draws n directions), and
    `move(state, target_dir [n, 2], target_speed [n]) -> (state, ground velocity [n, 2])` one
    control step of it."""
    g = torch.Generator().manual_seed(seed)
    n = num_episodes

    def angles(count):
        return 2.0 * math.pi * torch.rand(count, generator=g, dtype=torch.float64)

    def speeds(count):
        low, high = settings["target_speed_min"], settings["target_speed_max"]
        return low + (high - low) * torch.rand(count, generator=g, dtype=torch.float64)

    target, target_speed = angles(n), speeds(n)
    state = start(angles, target_speed)
    steps_to_change = draw_countdowns(n, settings, g)
    direction_sum = speed_sum = 0.0
    episode_length = settings["max_episode_length"]
    for _ in range(episode_length):
        due = goal_schedule(steps_to_change, settings, g)
        if due.any():
            count = int(due.sum())
            target[due], target_speed[due] = angles(count), speeds(count)
        target_dir = torch.stack([target.cos(), target.sin()], dim=-1)
        state, vel = move(state, target_dir, target_speed)
        direction_error, speed_error = heading_errors(vel, target_dir, target_speed)
        direction_sum += float(direction_error.sum())
        speed_sum += float(speed_error.sum())
    steps = n * episode_length
    return direction_sum / steps, speed_sum / steps


def heading_ceiling(turn_rate: float, settings: dict, num_episodes: int = 20_000, seed: int = 0) -> dict:
    """Heading's metrics for a character at the target speed turning at `turn_rate` rad/s."""
    max_turn = turn_rate * control_dt(settings)

    def move(facing, target_dir, target_speed):
        target = torch.atan2(target_dir[:, 1], target_dir[:, 0])
        off = torch.remainder(target - facing + math.pi, 2.0 * math.pi) - math.pi  # in [-pi, pi)
        facing = facing + off.clamp(-max_turn, max_turn)
        return facing, target_speed[:, None] * torch.stack([facing.cos(), facing.sin()], dim=-1)

    direction, speed = heading_replay(settings, num_episodes, seed, lambda angles, speed: angles(len(speed)), move)
    return {"turn_rate_rad_s": turn_rate, "direction_error_rad": round(direction, 3), "speed_error_m_s": round(speed, 3)}


def heading_accel_ceiling(accel: float, settings: dict, num_episodes: int = 20_000, seed: int = 0) -> dict:
    """Heading's metrics for a character whose ground velocity changes at most `accel` m/s^2."""
    max_dv = accel * control_dt(settings)

    def start(angles, target_speed):  # under way at the target speed, in a random direction
        a = angles(len(target_speed))
        return target_speed[:, None] * torch.stack([a.cos(), a.sin()], dim=-1)

    def move(vel, target_dir, target_speed):
        dv = target_speed[:, None] * target_dir - vel
        norm = dv.norm(dim=-1, keepdim=True)
        vel = vel + dv * (torch.clamp(norm, max=max_dv) / norm.clamp_min(1e-12))
        return vel, vel

    direction, speed = heading_replay(settings, num_episodes, seed, start, move)
    return {"accel_m_s2": accel, "direction_error_rad": round(direction, 3), "speed_error_m_s": round(speed, 3)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--location-speeds", type=float, nargs="+", default=[0.8, 1.0, 1.5, 2.0, 3.0])
    parser.add_argument("--heading-turn-rates", type=float, nargs="+", default=[0.5, 1.0, 1.07, 1.5, 2.0, 4.0])
    parser.add_argument("--heading-accels", type=float, nargs="+", default=[1.0, 1.5, 2.0, 3.0])
    parser.add_argument("--episodes", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    location, heading = task_settings("HumanoidLocation"), task_settings("HumanoidHeading")
    result = {
        "location": [location_ceiling(v, location, args.episodes, args.seed) for v in args.location_speeds],
        "heading": [heading_ceiling(w, heading, args.episodes, args.seed) for w in args.heading_turn_rates],
        "heading_accel": [heading_accel_ceiling(a, heading, args.episodes, args.seed) for a in args.heading_accels],
        "episodes": args.episodes,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for row in result["location"]:
            print(f"Location, moving at {row['speed_m_s']:.1f} m/s: success {row['success_rate']:.3f}, "
                  f"final distance {row['final_distance_m']:.2f} m")
        for row in result["heading"]:
            print(f"Heading, turning at {row['turn_rate_rad_s']:.2f} rad/s: direction error "
                  f"{row['direction_error_rad']:.3f} rad, speed error {row['speed_error_m_s']:.3f} m/s")
        for row in result["heading_accel"]:
            print(f"Heading, redirecting its velocity at {row['accel_m_s2']:.1f} m/s^2: direction error "
                  f"{row['direction_error_rad']:.3f} rad, speed error {row['speed_error_m_s']:.3f} m/s")
    return result


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
