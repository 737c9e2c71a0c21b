"""A trained high-level task policy against random latents on its own low-level controller,
the same episodes for both.

    python benchmarks/task_policy.py pretrained/heading_amp_humanoid.pt --episodes 128 --seed 1234 --json
    python benchmarks/task_policy.py ~/runs/heading/latest.pt --no-random

Evaluates CHECKPOINT as `train.py test=true checkpoint=CHECKPOINT` does (deterministic policy,
`--episodes` episodes on `--envs` worlds, seed `--seed`; the task is the checkpoint's), then the
random-latent policy of `hrl_random_policy.py` on the LLC the checkpoint carries, with the same
seed (task and robot are the checkpoint's). Prints one line of statistics per policy; `--json` prints
`{"trained": {...}, "random": {...}}` (the task metrics, fall rate, episode length...).
Extra arguments are train.py overrides (e.g. `task.env.target_speed_min=1.0`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ase_humanoid  # noqa: E402,F401  (sets the OpenMP wait policy before torch loads)


def require_task_policy(path: str, state: dict) -> None:
    """CheckpointError unless the checkpoint `state` (loaded from `path`) is a hierarchical task policy."""
    from ase_humanoid.errors import CheckpointError

    if not ((state.get("config") or {}).get("task") or {}).get("name"):
        raise CheckpointError(f"{path}: the checkpoint records no task (not a run checkpoint of this project?)")
    if (state.get("agent") or {}).get("algo") != "HRLAgent":
        raise CheckpointError(f"{path}: not a hierarchical task policy (algo {state['agent'].get('algo')!r})")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="an HRL run checkpoint, run folder or shipped task policy")
    parser.add_argument("--episodes", type=int, default=128)
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1234, help="a seed the policy was not trained with")
    parser.add_argument("--no-random", action="store_true", help="skip the random-latent baseline")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("overrides", nargs="*", help="train.py overrides")
    args = parser.parse_intermixed_args(argv)

    import torch

    from ase_humanoid.evaluate import checkpoint_test_config, evaluate

    # test=true with the checkpoint's task and robot, so that the random-latent run below builds
    # the env its LLC was trained on
    cfg, state = checkpoint_test_config(args.checkpoint, [f"test_episodes={args.episodes}", f"num_envs={args.envs}",
                                                          f"seed={args.seed}", *args.overrides])
    require_task_policy(args.checkpoint, state)
    task, robot_override = cfg.task.name, [f"robot={cfg.robot.name}"]
    torch.set_num_threads(int(cfg.torch_threads))
    torch.manual_seed(args.seed)
    result = {"task": task, "checkpoint": str(args.checkpoint), "episodes": args.episodes, "seed": args.seed,
              "trained": evaluate(cfg)}
    if not args.no_random:
        import hrl_random_policy

        # the LLC inside the checkpoint, so both policies drive the same controller
        result["random"] = hrl_random_policy.main(["--task", task, "--episodes", str(args.episodes), "--envs",
                                                   str(args.envs), "--seed", str(args.seed), *robot_override,
                                                   f"llc_checkpoint={args.checkpoint}", *args.overrides])
    if args.json:
        print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
