"""Training throughput: samples per second of a full epoch (rollout + update) and where the time
goes (simulation, observations/rewards, policy inference, recording, update), against stepping
the same env alone (random actions, no agent) measured in the same run.

    python benchmarks/train_throughput.py --json                       # HumanoidASE, 256 envs, CPU
    python benchmarks/train_throughput.py --task HumanoidAMP --json                  # CPU profile
    python benchmarks/train_throughput.py --task HumanoidAMP --json profile=paper    # the release's sizes

Prints one JSON object: samples_per_s, env_only_samples_per_s and their ratio. The first epoch
(warm-up) is excluded from the averages.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="HumanoidASE")
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs after one warm-up epoch")
    parser.add_argument("--sim", default="mujoco")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="MuJoCo threads (default: all cores)")
    parser.add_argument("--torch-threads", type=int, default=None, help="torch threads while stepping envs")
    parser.add_argument("--update-threads", type=int, default=None, help="torch threads during the update")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("overrides", nargs="*", help="extra train.py overrides, e.g. train.params.mini_epochs=2")
    args = parser.parse_args(argv)

    import torch

    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.runner import Runner

    overrides = [f"task={args.task}", f"num_envs={args.envs}", f"sim={args.sim}", f"device={args.device}",
                 *args.overrides]
    if args.threads:
        overrides.append(f"num_threads={args.threads}")
    cfg = compose_config(overrides)
    # As train.py does, unless --torch-threads says otherwise.
    torch.set_num_threads(args.torch_threads or int(cfg.torch_threads))
    env = build_env(cfg)
    agent = build_agent(cfg, env)

    # Time the physics separately from the rest of env.step (observations, rewards, resets).
    sim_time = {"s": 0.0}
    sim_step = env.sim.step

    def timed_step(*a, **k):
        t0 = time.perf_counter()
        sim_step(*a, **k)
        sim_time["s"] += time.perf_counter() - t0

    env.sim.step = timed_step
    with tempfile.TemporaryDirectory() as run_dir:
        runner = Runner(env, agent, run_dir, config={}, max_epochs=1, save_every=0, is_main=False,
                        update_threads=args.update_threads or int(cfg.update_threads))
        runner.learn()  # one warm-up epoch (first-call allocations, demo buffer already filled)
        env_only = env_only_samples_per_s(env, args.epochs * agent.config.horizon_length)
        runner.obs = env.reset()  # the env-only steps moved the worlds on
        totals = {"sim": 0.0, "obs_reward_reset": 0.0, "inference": 0.0, "record": 0.0, "update": 0.0}
        t_start = time.perf_counter()
        for _ in range(args.epochs):
            sim_time["s"] = 0.0
            timings = runner.collect_rollout()
            t0 = time.perf_counter()
            runner.update_agent()
            totals["update"] += time.perf_counter() - t0
            totals["sim"] += sim_time["s"]
            totals["obs_reward_reset"] += timings["time/sim_and_obs"] - sim_time["s"]
            totals["inference"] += timings["time/inference"]
            totals["record"] += timings["time/record"]
        elapsed = time.perf_counter() - t_start
    env.close()
    samples = args.epochs * agent.config.horizon_length * env.num_envs
    result = {
        "task": args.task, "algo": cfg.train.algo, "envs": env.num_envs, "sim": cfg.sim.name,
        "device": str(cfg.device), "epochs": args.epochs, "horizon_length": agent.config.horizon_length,
        "profile": str(cfg.profile), "samples_per_s": samples / elapsed,
        "env_only_samples_per_s": env_only, "ratio_to_env_only": samples / elapsed / env_only,
        "seconds_per_epoch": elapsed / args.epochs,
        "share": {k: v / elapsed for k, v in totals.items()},
        "torch_threads": torch.get_num_threads(), "update_threads": runner.update_threads,
        "mujoco_threads": int(cfg.num_threads),
    }
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


def env_only_samples_per_s(env, steps: int) -> float:
    """Samples per second of `env.step` alone: actions ~ N(0, 0.3) (random-policy-like falls and
    resets), so the ratio to training throughput shows what the agent costs."""
    import torch

    generator = torch.Generator(device=env.device).manual_seed(0)
    shape = (env.num_envs, env.action_space.shape[-1])
    env.reset()
    t0 = time.perf_counter()
    for _ in range(steps):
        env.step(0.3 * torch.randn(shape, generator=generator, device=env.device))
    return steps * env.num_envs / (time.perf_counter() - t0)


if __name__ == "__main__":
    sys.exit(main())
