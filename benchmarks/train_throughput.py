"""Training throughput: samples per second of a full epoch (rollout + update) and where the time
goes (simulation, observations/rewards, policy inference, recording, update), against stepping
the same env alone (random actions, no agent) measured in the same run.

    python benchmarks/train_throughput.py --json                       # HumanoidASE, 256 envs, CPU
    python benchmarks/train_throughput.py --task HumanoidAMP --json                  # CPU profile
    python benchmarks/train_throughput.py --task HumanoidAMP --json profile=paper    # the release's sizes
    python benchmarks/train_throughput.py --task HumanoidHeading --envs 128 --compare-amp-env-only --json

Prints one JSON object: samples_per_s, env_only_samples_per_s and their ratio. The first epoch
(warm-up) is excluded from the averages.

`--compare-amp-env-only` (hierarchical tasks): control steps per second of hierarchical training
(rollout + update; one high-level sample is `llc_steps` control steps) against plain HumanoidAMP
env-only stepping with the same number of envs (the target) and the hierarchical env's own
env-only stepping (LLC included), in interleaved rounds so that load from other processes affects
all three alike; reports medians over the rounds and the median of the per-round ratios. Without
`llc_checkpoint=...` the LLC is a freshly initialised ASE controller of the profile's sizes (a
speed measurement needs no trained one; a trained one falls less, so it resets less).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ase_humanoid  # noqa: E402,F401  (first: sets the OpenMP wait policy before torch loads, as train.py)


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
    parser.add_argument("--compare-amp-env-only", action="store_true",
                        help="hierarchical task: training control steps/s against HumanoidAMP env-only")
    parser.add_argument("--rounds", type=int, default=5, help="--compare-amp-env-only: interleaved rounds")
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
    if args.compare_amp_env_only:
        return compare_with_amp_env_only(args, overrides)
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


def compare_with_amp_env_only(args, overrides: list[str]) -> int:
    """Hierarchical training against plain HumanoidAMP env-only stepping (see module docstring)."""
    import statistics

    import torch

    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.runner import Runner

    cfg = compose_config(overrides)
    if cfg.train.algo != "hrl":
        raise SystemExit(f"--compare-amp-env-only needs a hierarchical task (train=hrl), not {cfg.train.algo}")
    with tempfile.TemporaryDirectory() as tmp:
        if not cfg.llc_checkpoint:
            overrides = [*overrides, f"llc_checkpoint={fresh_llc_checkpoint(overrides, Path(tmp))}"]
            cfg = compose_config(overrides)
        torch.set_num_threads(args.torch_threads or int(cfg.torch_threads))
        env = build_env(cfg)
        agent = build_agent(cfg, env)
        # Plain AMP with the same envs, simulator and threads (and the same profile).
        amp_cfg = compose_config([o for o in overrides if o.split("=", 1)[0] in
                                  ("num_envs", "sim", "device", "num_threads", "profile", "seed", "robot")]
                                 + ["task=HumanoidAMP"])
        amp_env = build_env(amp_cfg)
        llc_steps = env.llc_steps
        horizon = agent.config.horizon_length
        control_steps = horizon * llc_steps  # per env and epoch
        runner = Runner(env, agent, tmp, config={}, max_epochs=1, save_every=0, is_main=False,
                        update_threads=args.update_threads or int(cfg.update_threads), quality_every=0)
        runner.learn()  # warm-up epoch
        env_only_samples_per_s(amp_env, llc_steps)  # warm-up steps
        rates: dict[str, list[float]] = {"train": [], "amp_env_only": [], "hrl_env_only": []}
        update_share = []
        for _ in range(args.rounds):
            runner.obs = env.reset()  # the env-only steps moved the worlds on
            t0 = time.perf_counter()
            runner.collect_rollout()
            t1 = time.perf_counter()
            runner.update_agent()
            t2 = time.perf_counter()
            rates["train"].append(control_steps * env.num_envs / (t2 - t0))
            update_share.append((t2 - t1) / (t2 - t0))
            rates["amp_env_only"].append(env_only_samples_per_s(amp_env, control_steps))
            rates["hrl_env_only"].append(llc_steps * env_only_samples_per_s(env, horizon))
    env.close()
    amp_env.close()
    median = {k: statistics.median(v) for k, v in rates.items()}
    result = {
        "task": args.task, "envs": env.num_envs, "profile": str(cfg.profile), "rounds": args.rounds,
        "llc": {"actor_units": list(env.llc.ase_config.actor_units), "disc_units": list(env.llc.ase_config.disc_units),
                "num_amp_obs_steps": int(env.num_amp_obs_steps), "llc_steps": llc_steps},
        "high_level": {k: agent.config.to_dict()[k] for k in ("actor_units", "critic_units", "mini_epochs",
                                                                "minibatch_size", "horizon_length")},
        "train_control_steps_per_s": median["train"],
        "train_high_level_samples_per_s": median["train"] / llc_steps,
        "hrl_env_only_control_steps_per_s": median["hrl_env_only"],
        "amp_env_only_control_steps_per_s": median["amp_env_only"],
        "ratio_train_to_amp_env_only": statistics.median(
            t / a for t, a in zip(rates["train"], rates["amp_env_only"])),
        "ratio_hrl_env_only_to_amp_env_only": statistics.median(
            h / a for h, a in zip(rates["hrl_env_only"], rates["amp_env_only"])),
        "update_share": statistics.median(update_share),
        "per_round": rates,
        "torch_threads": torch.get_num_threads(), "update_threads": runner.update_threads,
        "mujoco_threads": int(cfg.num_threads),
    }
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


def fresh_llc_checkpoint(overrides: list[str], folder: Path) -> Path:
    """An untrained ASE controller's run checkpoint (`folder/llc.pt`) with the sizes the profile in
    `overrides` gives ASE pre-training (CPU profile: 512-256, 2-frame AMP history; paper: the
    release's), as `train.py task=HumanoidASE` would write it at epoch 0."""
    import torch
    from omegaconf import OmegaConf

    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config

    keep = ("sim", "device", "num_threads", "profile", "robot")
    cfg = compose_config([o for o in overrides if o.split("=", 1)[0] in keep]
                         + ["task=HumanoidASE", "num_envs=2", "task.env.fall_pool_size=2",
                            "train.params.horizon_length=2", "train.params.amp_obs_demo_buffer_size=64",
                            "train.params.amp_replay_buffer_size=64", "train.params.amp_batch_size=16"])
    env = build_env(cfg)
    state = {"agent": build_agent(cfg, env).state_dict(), "config": OmegaConf.to_container(cfg, resolve=True)}
    env.close()
    path = folder / "llc.pt"
    torch.save(state, path)
    return path


if __name__ == "__main__":
    sys.exit(main())
