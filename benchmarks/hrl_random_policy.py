"""The baseline a trained high-level policy must beat: a hierarchical task driven by random
latents on the same low-level controller.

    python benchmarks/hrl_random_policy.py --task HumanoidHeading                       # shipped LLC
    python benchmarks/hrl_random_policy.py --task HumanoidLocation llc_checkpoint=runs/ase1/latest.pt

Every high-level step (llc_steps control steps) each env gets a fresh random unit latent, as a
high-level policy whose actions are uniform in [-1, 1]^64 would give it; the episodes run
through the same loop as `train.py test=true` and print the same statistics and task metrics
(one JSON object with --json). Extra arguments are train.py overrides.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ase_humanoid  # noqa: E402,F401  (sets the OpenMP wait policy before torch loads)


class RandomLatentPolicy:
    """`act(obs [N, D], deterministic) -> {"actions": [N, latent_dim]}`, uniform in [-1, 1]."""

    def __init__(self, latent_dim: int, seed: int, device):
        import torch

        self.latent_dim, self.device = latent_dim, device
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def act(self, obs, deterministic: bool = True) -> dict:
        import torch

        actions = torch.rand((obs.shape[0], self.latent_dim), generator=self.generator, device=self.device)
        return {"actions": 2.0 * actions - 1.0}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="HumanoidHeading")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("overrides", nargs="*", help="train.py overrides (llc_checkpoint=..., task.env.*)")
    args = parser.parse_args(argv)

    import torch

    from ase_humanoid.builders import build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.evaluate import run_episodes

    cfg = compose_config([f"task={args.task}", "train=hrl", "test=true", f"test_episodes={args.episodes}",
                          f"num_envs={args.envs}", f"seed={args.seed}", *args.overrides])
    torch.set_num_threads(int(cfg.torch_threads))
    env = build_env(cfg)
    policy = RandomLatentPolicy(env.action_space.shape[-1], args.seed, env.device)
    # run_episodes prints its key=value summary; with --json stdout holds only the JSON object
    with contextlib.redirect_stdout(sys.stderr if args.json else sys.stdout):
        stats = run_episodes(env, policy, cfg)
    env.close()
    result = {"task": args.task, "policy": "random latents", "llc_checkpoint": cfg.llc_checkpoint, **stats}
    if args.json:
        print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
