"""AMP on the walk clip for a fixed wall-clock budget: does the policy learn to walk?

    python benchmarks/learn_amp_walk.py --minutes 60     # CPU: the CPU training profile
    python benchmarks/learn_amp_walk.py --minutes 5 --sim mujoco_warp --device cuda --envs 4096
    python benchmarks/learn_amp_walk.py --minutes 60 profile=paper   # any train.py override

Trains exactly as train.py does (same profile choice, thread split and checkpoint cadence).
Writes <out>/learn_amp_walk.json (the curve: wall time, epoch, samples, episode length, fall
rate, motion quality, style reward, discriminator accuracies) and <out>/learn_amp_walk.png, and
prints the summary as one JSON object: first and last 10 % of the run, and the last 10 minutes.
The run folder (config.yaml, checkpoints, TensorBoard) is <out>/run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_throughput.cpu_description

CURVE_KEYS = {
    "episode_length": "episode/length",
    "fall_rate": "episode/fall_rate",
    "style_reward": "train/disc_reward_mean",
    "disc_agent_acc": "train/disc_agent_acc",
    "disc_demo_acc": "train/disc_demo_acc",
    "samples_per_s": "perf/samples_per_s",
    "key_body_error_cm": "quality/key_body_error_cm",
    "root_speed": "quality/root_speed",
}
PANELS = (("episode_length", "episode length (control steps)"), ("fall_rate", "fall rate"),
          ("key_body_error_cm", "key-body distance to the dataset (cm)"), ("style_reward", "style reward"))


class CurveLogger:
    """Collects the curve in memory and forwards to the normal TensorBoard logger."""

    def __init__(self, inner, start: float):
        self.inner, self.start, self.points = inner, start, []

    def log(self, epoch, global_step, stats):
        self.inner.log(epoch, global_step, stats)
        point = {"seconds": time.perf_counter() - self.start, "epoch": epoch, "samples": global_step}
        point.update({k: stats[v] for k, v in CURVE_KEYS.items() if v in stats})
        self.points.append(point)

    def close(self):
        self.inner.close()


def plot(points, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [p["seconds"] / 60 for p in points]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(18, 4))
    for ax, (key, label) in zip(axes, PANELS):
        xs = [m for m, p in zip(minutes, points) if key in p]
        ax.plot(xs, [p[key] for p in points if key in p])
        ax.set_xlabel("wall-clock minutes")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    fig.suptitle("AMP, walk clip")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--envs", type=int, default=None, help="default: the machine's auto choice")
    parser.add_argument("--sim", default="auto")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default="runs/learn_amp_walk")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("overrides", nargs="*", help="extra train.py overrides")
    args = parser.parse_args(argv)

    from omegaconf import OmegaConf
    from train_throughput import cpu_description

    from ase_humanoid.app import describe_profile
    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.run_dir import check_writable, existing_run_files
    from ase_humanoid.runner import Runner
    from ase_humanoid.utils.logger import TrainingLogger

    out = Path(args.out)
    run_dir = out / "run"
    if existing_run_files(run_dir):  # the curve and metrics.jsonl must come from this run alone
        parser.error(f"{run_dir} already holds a run: give a new --out or delete it")
    check_writable(run_dir)
    overrides = ["task=HumanoidAMP", "motion_file=motions/amp_humanoid/amp_humanoid_walk.npy",
                 f"sim={args.sim}", f"device={args.device}", f"seed={args.seed}", "max_epochs=1000000",
                 *args.overrides]
    if args.envs:
        overrides.append(f"num_envs={args.envs}")
    cfg = compose_config(overrides)
    import torch

    torch.set_num_threads(int(cfg.torch_threads))  # as train.py does
    env = build_env(cfg)
    agent = build_agent(cfg, env)
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    print(describe_profile(cfg), flush=True)
    runner = Runner(env, agent, run_dir, OmegaConf.to_container(cfg, resolve=True),
                    max_epochs=int(cfg.max_epochs), save_every=int(cfg.save_every),
                    checkpoint_every=int(cfg.checkpoint_every), update_threads=int(cfg.update_threads),
                    adapt_update_threads=bool(cfg.adapt_update_threads),
                    quality_every=int(cfg.quality_every), quality_envs=int(cfg.quality_envs))
    start = time.perf_counter()
    console = TrainingLogger(run_dir, cfg.max_epochs)
    console.stop_time = console.time_source() + args.minutes * 60.0  # "left" counts down the budget
    logger = CurveLogger(console, start)
    try:
        runner.learn(logger, time_budget_s=args.minutes * 60.0)
    finally:
        logger.close()
        env.close()
    points = logger.points
    tenth = max(1, len(points) // 10)
    first, last = points[:tenth], points[-tenth:]
    end = points[-1]["seconds"] if points else 0.0
    last_10_min = [p for p in points if p["seconds"] >= end - 600.0]
    summary = {
        "minutes": args.minutes, "envs": env.num_envs, "sim": cfg.sim.name, "device": str(cfg.device),
        "profile": str(cfg.profile), "epochs": runner.epoch, "samples": runner.global_step,
        "samples_per_s": runner.global_step / end if end else None,
        "checkpoint": str(run_dir / "latest.pt"),
        "checkpoint_mb": _size_mb(run_dir / "latest.pt"), "cpu": cpu_description(),
    }
    for key in CURVE_KEYS:
        summary[f"first_{key}"] = _mean(first, key)
        summary[f"final_{key}"] = _mean(last, key)
    summary["last_10_min_episode_length"] = _mean(last_10_min, "episode_length")
    summary["last_10_min_fall_rate"] = _mean(last_10_min, "fall_rate")
    summary["last_10_min_key_body_error_cm"] = _mean(last_10_min, "key_body_error_cm")
    (out / "learn_amp_walk.json").write_text(json.dumps({"summary": summary, "curve": points}, indent=1))
    plot(points, out / "learn_amp_walk.png")
    print(json.dumps(summary))
    return 0


def _size_mb(path: Path) -> float | None:
    return round(path.stat().st_size / 2**20, 1) if path.exists() else None


def _mean(points, key):
    values = [p[key] for p in points if key in p]
    return sum(values) / len(values) if values else None


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
