"""What an exact-resume checkpoint costs for AMP and ASE at their default buffer sizes, with the
replay buffer full: the size of `latest.pt`, the replay journal beside it, and the bytes and
seconds one steady-state checkpoint writes (one epoch's rollout offered to the full replay
buffer, which keeps `amp_replay_keep_prob` of it). Measured in the same run for today's format
(replay journal, demo buffer as keys), the replay buffer inside latest.pt
(`amp_replay_journal=false`), and the format before compact checkpoints (demo samples too).

    python benchmarks/checkpoint_size.py                     # both profiles, AMP and ASE
    python benchmarks/checkpoint_size.py --profiles cpu

Prints one JSON object. The rollout offered per epoch is horizon_length x the profile's default
num_envs (the env itself is built with 16 worlds: its size does not change the checkpoint).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MB = 2**20
# (label, config keys): today's format, then the replay buffer inside latest.pt, then the format
# before compact checkpoints (demo samples stored too).
VARIANTS = (("journal", ["train.params.amp_replay_journal=true"]),
            ("all_in_latest", ["train.params.amp_replay_journal=false"]),
            ("all_in_latest_demo_samples", ["train.params.amp_replay_journal=false"]))


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def journal_file_bytes(runner) -> tuple[str | None, int]:
    """(current journal file name, its size) or (None, 0) without a journal."""
    journal = runner.agent.replay_journal
    if journal is None or journal.path is None or not journal.path.exists():
        return None, 0
    return journal.path.name, journal.path.stat().st_size


def steady_state_checkpoint(runner, rollout_rows: int, generator: torch.Generator) -> dict:
    """Offer one epoch's rollout to the full replay buffer, then checkpoint: bytes written
    (latest.pt is rewritten whole; the journal grows by its new records, or a new generation
    starts with a snapshot) and seconds."""
    replay = runner.agent.replay_buffer
    replay.insert(torch.randn(rollout_rows, replay.samples.shape[1], generator=generator), generator)
    name_before, size_before = journal_file_bytes(runner)
    start = time.perf_counter()
    runner.save(force=True)
    seconds = time.perf_counter() - start
    name_after, size_after = journal_file_bytes(runner)
    journal_written = size_after - (size_before if name_after == name_before else 0)
    latest = (runner.run_dir / "latest.pt").stat().st_size
    replay_dir = runner.run_dir / "replay"
    return {"latest_mb": latest / MB, "written_mb": (latest + journal_written) / MB, "save_s": seconds,
            "journal_mb": folder_bytes(replay_dir) / MB if replay_dir.exists() else 0.0}


def measure(task: str, profile: str, checkpoints: int) -> dict:
    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.runner import Runner

    base = [f"task={task}", f"profile={profile}", "sim=mujoco", "device=cpu"]
    default_envs = int(compose_config(base).num_envs)
    result = {"task": task, "profile": profile}
    for label, keys in VARIANTS:
        cfg = compose_config([*base, "num_envs=16", *keys])
        env = build_env(cfg)
        agent = build_agent(cfg, env)
        replay = agent.replay_buffer
        generator = torch.Generator().manual_seed(0)
        while not replay.is_full:  # a long run's buffer (its values do not change the size)
            replay.store(torch.randn(min(65536, replay.capacity - len(replay)), replay.samples.shape[1],
                                     generator=generator))
        if label == "all_in_latest_demo_samples":
            agent.demo_buffer.has_keys = False  # the format before compact checkpoints
        rollout_rows = agent.config.horizon_length * default_envs
        with tempfile.TemporaryDirectory() as tmp:
            runner = Runner(env, agent, tmp, config={}, max_epochs=1, save_every=0, quality_every=0)
            runner.obs = env.reset()
            runner.save(force=True)  # the first checkpoint writes the whole buffer either way
            steps = [steady_state_checkpoint(runner, rollout_rows, generator) for _ in range(checkpoints)]
        env.close()
        result[label] = {
            "latest_mb": round(steps[-1]["latest_mb"], 1),
            "replay_journal_mb": round(steps[-1]["journal_mb"], 1),
            "written_per_checkpoint_mb": round(sum(s["written_mb"] for s in steps) / len(steps), 2),
            "save_s": round(sum(s["save_s"] for s in steps) / len(steps), 3),
        }
        result.update({"amp_obs_dim": agent.amp_obs_dim, "demo_buffer": agent.demo_buffer.capacity,
                       "replay_buffer": replay.capacity, "replay_samples_mb": round(replay.samples.nbytes / MB, 1),
                       "rollout_rows_per_epoch": rollout_rows,
                       "replay_rows_kept_per_epoch": round(rollout_rows * agent.config.amp_replay_keep_prob)})
    for label, _ in VARIANTS[1:]:
        result[f"write_ratio_vs_{label}"] = round(result[label]["written_per_checkpoint_mb"]
                                                  / max(result["journal"]["written_per_checkpoint_mb"], 1e-9), 1)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", default="cpu,paper")
    parser.add_argument("--tasks", default="HumanoidAMP,HumanoidASE")
    parser.add_argument("--checkpoints", type=int, default=3, help="steady-state checkpoints averaged")
    args = parser.parse_args(argv)
    results = [measure(task, profile, args.checkpoints)
               for profile in args.profiles.split(",") for task in args.tasks.split(",")]
    print(json.dumps({"checkpoints": results}))
    return 0


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
