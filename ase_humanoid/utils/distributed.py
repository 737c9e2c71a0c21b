"""torch.distributed helpers: one process per GPU (or per CPU group), launched by torchrun.

Each rank steps its own envs with its own seed; gradients of every optimiser are averaged
across ranks before each step and normaliser statistics are combined (see
agents/normalizer.py), so all ranks hold identical networks. Rank 0 logs and saves.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", 0))


def init_from_env(device: str) -> tuple[int, int]:
    """Initialise the process group when launched by torchrun; returns (rank, world_size)."""
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    if world_size <= 1:
        return 0, 1
    if not dist.is_initialized():
        # torch.distributed.nn.functional binds `group=group.WORLD` as default arguments when it
        # is first imported; after init that is the default group, which then outlives
        # destroy_process_group with its gloo worker threads, and a worker freeing a tensor
        # while the interpreter exits aborts the process ("terminate called without an active
        # exception"). torch.optim imports it lazily (via torch._dynamo), so import it first.
        import torch.distributed.nn  # noqa: F401
        backend = "nccl" if device.startswith("cuda") else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local_rank())
        dist.init_process_group(backend=backend)
    return dist.get_rank(), dist.get_world_size()


def shutdown() -> None:
    """Leave the process group together: a barrier first, so that no rank tears its gloo
    connections down while another still uses them (that aborts the other process)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def broadcast_module_(module: torch.nn.Module, src: int = 0) -> None:
    """Copy rank `src`'s parameters and buffers to every rank."""
    for tensor in list(module.parameters()) + list(module.buffers()):
        dist.broadcast(tensor.data, src=src)


def average_gradients_(params) -> None:
    """All-reduce (mean) the gradients of `params`, flattened into one buffer for fewer calls."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= dist.get_world_size()
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset:offset + n].view_as(g))
        offset += n


def wrap_agent_for_distributed(agent) -> None:
    """Make `agent` train in lock-step with the other ranks.

    Parameters start equal (broadcast from rank 0); after every backward pass the agent calls
    `grad_sync`, which averages gradients across ranks before clipping and the optimiser step,
    so they stay equal. Normalisers combine their batch moments across ranks by themselves.
    """
    for module in [v for v in vars(agent).values() if isinstance(v, torch.nn.Module)]:
        broadcast_module_(module)
    agent.grad_sync = lambda params: average_gradients_(list(params))


def all_reduce_moments(count: torch.Tensor, total: torch.Tensor, total_sq: torch.Tensor) -> None:
    """Sum per-rank sample count, sum and sum of squares in place (normaliser statistics)."""
    if not is_distributed():
        return
    packed = torch.cat([count.reshape(1), total.reshape(-1), total_sq.reshape(-1)])
    dist.all_reduce(packed, op=dist.ReduceOp.SUM)
    count.copy_(packed[0])
    n = total.numel()
    total.copy_(packed[1:1 + n].view_as(total))
    total_sq.copy_(packed[1 + n:].view_as(total_sq))
