"""Size of `latest.pt` (everything for an exact resume) for AMP and ASE at their default buffer
sizes, with the demo buffer stored as keys (today's format) and as samples (the format before
compact checkpoints), measured in the same run; the replay buffer is filled to capacity.

    python benchmarks/checkpoint_size.py                     # both profiles, AMP and ASE
    python benchmarks/checkpoint_size.py --profiles cpu

Prints one JSON object: megabytes per (task, profile) and what the buffers hold.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(task: str, profile: str) -> dict:
    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.runner import Runner

    cfg = compose_config([f"task={task}", f"profile={profile}", "num_envs=16", "sim=mujoco", "device=cpu"])
    env = build_env(cfg)
    agent = build_agent(cfg, env)
    # A full replay buffer (its contents do not change the size): what a long run checkpoints.
    replay = agent.replay_buffer
    while not replay.is_full:
        replay.store(agent.demo_buffer.samples[: replay.capacity - len(replay)])
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(env, agent, tmp, config={}, max_epochs=1, save_every=0, quality_every=0)
        runner.obs = env.reset()
        runner.save(force=True)
        keys_mb = (Path(tmp) / "latest.pt").stat().st_size / 2**20
        agent.demo_buffer.has_keys = False  # the earlier format: demo samples in the checkpoint
        runner.save(force=True)
        samples_mb = (Path(tmp) / "latest.pt").stat().st_size / 2**20
    env.close()
    dim = agent.amp_obs_dim
    return {
        "task": task, "profile": profile, "amp_obs_dim": dim,
        "demo_buffer": agent.demo_buffer.capacity, "replay_buffer": replay.capacity,
        "latest_mb": round(keys_mb, 1), "latest_mb_with_demo_samples": round(samples_mb, 1),
        "replay_samples_mb": round(replay.capacity * dim * 4 / 2**20, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", default="cpu,paper")
    parser.add_argument("--tasks", default="HumanoidAMP,HumanoidASE")
    args = parser.parse_args(argv)
    results = [measure(task, profile) for profile in args.profiles.split(",") for task in args.tasks.split(",")]
    print(json.dumps({"checkpoints": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
