"""Where a Heading policy's errors come from: direction and speed error by time since its goal
last changed (a new direction needs a turn, the start needs a walk to get going).

    python benchmarks/heading_errors.py pretrained/heading_amp_humanoid.pt --json
    python benchmarks/heading_errors.py ~/runs/heading_flat/latest.pt --envs 64 --seconds 20

Runs the checkpoint's deterministic policy as `train.py test=true` does (standing starts, the
task's goal timer, `--seed`) on `--envs` worlds for `--seconds` of simulated time, and bins the
per-step errors the task logs (`task/direction_error`, `task/speed_error`) and the root's ground
speed by the control steps spent on the current goal. A hierarchical policy is sampled once per
high-level step (every `llc_steps` control steps), a flat one (`train=amp_task`) every control
step. Extra arguments are train.py overrides.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ase_humanoid  # noqa: E402,F401  (sets the OpenMP wait policy before torch loads)

GOAL_STEP_BINS = (0, 15, 30, 60, 90, 120, None)
"""Bin edges in control steps on the current goal (30 per second); None: open-ended."""


def task_env(env):
    """The Heading env itself, inside a hierarchical wrapper or not."""
    while not hasattr(env, "goal_steps"):
        env = env.env
    return env


def step_errors(heading_env):
    """Per env: (direction error [N] rad, speed error [N] m/s, ground speed [N] m/s), the first
    two as the task's metrics (`rewards.heading_errors`)."""
    from ase_humanoid.envs.tasks.rewards import heading_errors

    vel = heading_env.root_vel_xy()
    direction, speed_error = heading_errors(vel, heading_env.target_dir, heading_env.target_speed)
    return direction, speed_error, vel.norm(dim=-1)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a Heading policy: run checkpoint, run folder or shipped model")
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=20.0, help="simulated seconds per world")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("overrides", nargs="*", help="train.py overrides")
    args = parser.parse_intermixed_args(argv)

    import torch

    from ase_humanoid.errors import ConfigError
    from ase_humanoid.evaluate import checkpoint_test_config, load_policy

    cfg, _ = checkpoint_test_config(args.checkpoint, [f"num_envs={args.envs}", f"seed={args.seed}", *args.overrides])
    if cfg.task.name != "HumanoidHeading":
        raise ConfigError(f"{args.checkpoint}: a {cfg.task.name} policy; this measures HumanoidHeading ones")
    torch.manual_seed(args.seed)
    env, agent = load_policy(cfg)
    heading = task_env(env)
    control_steps_per_step = getattr(env, "llc_steps", 1)
    steps = max(1, round(args.seconds / heading.dt / control_steps_per_step))
    edges = [e if e is not None else float("inf") for e in GOAL_STEP_BINS]
    sums = torch.zeros(len(edges) - 1, 4, dtype=torch.float64)  # count, direction, speed error, speed
    obs = env.reset()
    with torch.no_grad():
        for _ in range(steps):
            obs, *_ = env.step(agent.act(obs, deterministic=True)["actions"])
            direction, speed_error, speed = step_errors(heading)
            on_goal = heading.goal_steps.double()
            for k in range(len(edges) - 1):
                inside = (on_goal >= edges[k]) & (on_goal < edges[k + 1])
                sums[k] += torch.stack([inside.sum().double(), direction[inside].sum().double(),
                                        speed_error[inside].sum().double(), speed[inside].sum().double()])
    total = sums.sum(0)
    result = {
        "checkpoint": str(args.checkpoint), "envs": args.envs, "seconds": args.seconds, "seed": args.seed,
        "sampled_every_control_steps": control_steps_per_step,
        "direction_error": float(total[1] / total[0]), "speed_error": float(total[2] / total[0]),
        "root_speed": float(total[3] / total[0]),
        "by_goal_steps": [
            {"goal_steps": [GOAL_STEP_BINS[k], GOAL_STEP_BINS[k + 1]], "share": float(row[0] / total[0]),
             "direction_error": float(row[1] / row[0]), "speed_error": float(row[2] / row[0]),
             "root_speed": float(row[3] / row[0])}
            for k, row in enumerate(sums) if row[0] > 0],
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"all: direction error {result['direction_error']:.3f} rad, speed error {result['speed_error']:.3f} m/s, "
              f"root speed {result['root_speed']:.2f} m/s")
        for row in result["by_goal_steps"]:
            low, high = row["goal_steps"]
            print(f"  {low:>3}-{high if high is not None else '':<4} steps on the goal ({row['share']:.0%}): "
                  f"direction {row['direction_error']:.3f} rad, speed error {row['speed_error']:.3f} m/s, "
                  f"root speed {row['root_speed']:.2f} m/s")
    return result


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
