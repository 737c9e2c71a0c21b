"""Worker for tests/test_distributed.py, launched by torchrun: trains a tiny ASE agent for two
epochs under torch.distributed (gloo) and has rank 0 record whether every rank ended with the
same parameters and normaliser statistics, and whether leaving the process group joined gloo's
threads (OS threads before init and after shutdown): a group kept alive past
destroy_process_group lets a gloo worker free a tensor while the interpreter exits, which aborts
the process at random."""

import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.builders import build_agent, build_env  # noqa: E402
from ase_humanoid.config import compose_config  # noqa: E402
from ase_humanoid.runner import Runner  # noqa: E402
from ase_humanoid.utils import distributed  # noqa: E402


def flat_state(agent) -> torch.Tensor:
    tensors = [p.detach().reshape(-1).double() for p in agent.model.parameters()]
    tensors += [b.detach().reshape(-1).double() for b in agent.obs_norm.buffers()]
    tensors += [b.detach().reshape(-1).double() for b in agent.amp_norm.buffers()]
    return torch.cat(tensors)


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def main(out: str, overrides: list[str]) -> None:
    torch.set_num_threads(1)
    threads_before_init = os_threads()
    cfg = compose_config(overrides)
    rank, world_size = distributed.init_from_env("cpu")
    env = build_env(cfg, rank)
    agent = build_agent(cfg, env, rank)
    distributed.wrap_agent_for_distributed(agent)
    runner = Runner(env, agent, Path(out).parent / f"rank{rank}", config={}, max_epochs=2, is_main=False)
    runner.learn()
    mine = flat_state(agent)
    gathered = [torch.zeros_like(mine) for _ in range(world_size)]
    dist.all_gather(gathered, mine)
    # Different seeds per rank: their envs really differ, so equality comes from the syncing.
    first_obs = runner.obs[0].double()
    obs_gathered = [torch.zeros_like(first_obs) for _ in range(world_size)]
    dist.all_gather(obs_gathered, first_obs)
    result = {
        "world_size": world_size,
        "max_param_diff": max(float((g - gathered[0]).abs().max()) for g in gathered),
        "obs_differ": bool((obs_gathered[0] - obs_gathered[1]).abs().max() > 0),
        "epochs": runner.epoch,
    }
    env.close()
    distributed.shutdown()
    if rank == 0:
        result.update(threads_before_init=threads_before_init, threads_after_shutdown=os_threads())
        Path(out).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
