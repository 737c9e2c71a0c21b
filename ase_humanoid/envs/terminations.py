"""Episode-end conditions as pure functions of batched state tensors."""

from __future__ import annotations

import torch

CONTACT_FORCE_THRESHOLD = 0.1
"""Newtons; a body with a larger net contact force (any component) counts as touching something.
Not exactly zero so that solver noise of a body resting near another does not count."""


def fall_termination(
    contact_forces: torch.Tensor,
    body_pos: torch.Tensor,
    termination_heights: torch.Tensor,
    non_contact_mask: torch.Tensor,
    episode_steps: torch.Tensor,
    force_threshold: float = CONTACT_FORCE_THRESHOLD,
    body_heights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Early termination `[N]` bool: the humanoid has fallen.

    An env has fallen when some body that may not touch anything (`non_contact_mask [B]`, i.e.
    everything but the feet) carries a contact force and some such body is below its
    termination height (`termination_heights [B]`, metres). Never fires on the first step of an
    episode (`episode_steps [N]`, the number of control steps taken), because a reset pose may
    start in contact.

    contact_forces `[N, B, 3]` (world, net per body), body_pos `[N, B, 3]`. `body_heights [N, B]`:
    the bodies' heights above the ground under them (terrain); None: their z (the plane z = 0).
    """
    touching = (contact_forces.abs() > force_threshold).any(dim=-1) & non_contact_mask  # [N, B]
    heights = body_pos[..., 2] if body_heights is None else body_heights
    too_low = (heights < termination_heights) & non_contact_mask  # [N, B]
    fallen = touching.any(dim=-1) & too_low.any(dim=-1)
    return fallen & (episode_steps > 1)


def timeout(episode_steps: torch.Tensor, max_episode_length: int) -> torch.Tensor:
    """Truncation `[N]` bool: the episode has run `max_episode_length` control steps."""
    return episode_steps >= max_episode_length


def nonfinite_envs(*tensors: torch.Tensor) -> torch.Tensor:
    """`[N]` bool: envs with a NaN or inf anywhere in any of `tensors` (each `[N, ...]`).

    One sum per env: NaN and inf propagate through it (a sum beyond the float range also counts,
    and such a state is broken anyway).
    """
    flat = torch.cat([t.flatten(start_dim=1) for t in tensors], dim=-1)
    return ~torch.isfinite(flat.sum(dim=-1))
