"""The AMP observation history of every env: the last `steps` AMP frames, newest first.

Kept as a ring over the step axis: `frames [N, steps, per_step]` with the newest frame at slot
`newest` and older ones following it (wrapping), so each control step writes one frame in place
and reading the newest-first history is two contiguous block copies; no shifting copy of the
whole history per step. Pure functions over (frames, newest): the env keeps both as its own
attributes, which is what its checkpoints store.
"""

from __future__ import annotations

import torch


def ring_slots(steps: int, device) -> torch.Tensor:
    """`[steps, steps]` long: [newest slot, age] -> the slot holding the frame `age` steps old."""
    return torch.tensor([[(newest + k) % steps for k in range(steps)] for newest in range(steps)],
                        dtype=torch.long, device=device)


def push_frame(frames: torch.Tensor, newest: int, frame: torch.Tensor) -> int:
    """Write `frame [N, per_step]` as every env's newest (over the oldest) in place; returns the
    new `newest` slot."""
    newest = (newest - 1) % frames.shape[1]
    frames[:, newest] = frame
    return newest


def write_histories(frames: torch.Tensor, slots: torch.Tensor, newest: int, env_ids: torch.Tensor,
                    history: torch.Tensor) -> None:
    """Replace in place the whole history of `env_ids [n]` with `history [n, steps, per_step]`
    (newest first); `slots` from `ring_slots`."""
    frames[env_ids.unsqueeze(1), slots[newest].unsqueeze(0)] = history.to(frames.dtype)


def newest_first(frames: torch.Tensor, newest: int) -> torch.Tensor:
    """The histories `[N, steps, per_step]` newest first (a new tensor)."""
    steps = frames.shape[1]
    history = torch.empty_like(frames)  # two row-block copies: faster than torch.cat here
    history[:, : steps - newest] = frames[:, newest:]
    history[:, steps - newest:] = frames[:, :newest]
    return history
