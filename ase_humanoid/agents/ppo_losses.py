"""PPO's pieces as pure functions: GAE through timeouts, the Gaussian log-likelihood, the
clipped actor and critic losses, the action-bounds penalty and masked means. Shapes in the
docstrings (T steps, N envs, A action dims)."""

from __future__ import annotations

import math

import torch


def compute_gae(rewards: torch.Tensor, values: torch.Tensor, next_values: torch.Tensor,
                terminated: torch.Tensor, dones: torch.Tensor, gamma: float,
                lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over a rollout.

    All inputs `[T, N]`. `next_values[t]` is V of the observation reached at step t *before*
    any reset (the final observation of a truncated episode); it is ignored where
    `terminated[t]`, so terminations do not bootstrap but timeouts do. `dones` (terminated or
    truncated) stops the advantage recursion at episode boundaries.
    Returns (advantages [T, N], returns [T, N]).
    """
    not_terminated = 1.0 - terminated.to(rewards.dtype)
    not_done = 1.0 - dones.to(rewards.dtype)
    deltas = rewards + gamma * next_values * not_terminated - values
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):  # loop over time only; envs stay batched
        running = deltas[t] + gamma * lam * not_done[t] * running
        advantages[t] = running
    return advantages, advantages + values


def gaussian_log_prob(actions: torch.Tensor, mu: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """Log density of a diagonal Gaussian, summed over the last dim: `[n, A] -> [n]`."""
    z = (actions - mu) * torch.exp(-log_std)
    return (-0.5 * z.square() - log_std - 0.5 * math.log(2.0 * math.pi)).sum(-1)


def bounds_loss(mu: torch.Tensor, limit: float) -> torch.Tensor:
    """Squared excess of the action mean beyond +-limit, summed over action dims: `[n, A] -> [n]`."""
    high = (mu - limit).clamp_min(0.0).square()
    low = (mu + limit).clamp_max(0.0).square()
    return (high + low).sum(-1)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `x [n]` over the rows where `mask [n]` (bool) is set; 0 when none is."""
    weights = mask.to(x.dtype)
    return (x * weights).sum() / weights.sum().clamp_min(1.0)


def normalize_advantages(advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Advantages `[n]` shifted and scaled by the mean and std of the rows where `mask` is set
    (every row when none is)."""
    if not bool(mask.any()):
        mask = torch.ones_like(mask)
    selected = advantages[mask]
    std = selected.std() if selected.numel() > 1 else torch.zeros((), device=advantages.device)
    return (advantages - selected.mean()) / (std + 1e-8)


def ppo_actor_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor,
                   e_clip: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Clipped surrogate per sample `[n]` and whether the ratio was clipped `[n]`."""
    ratio = torch.exp(log_prob - old_log_prob)
    surr = advantages * ratio
    surr_clipped = advantages * ratio.clamp(1.0 - e_clip, 1.0 + e_clip)
    loss = torch.maximum(-surr, -surr_clipped)
    clipped = (ratio - 1.0).abs() > e_clip
    return loss, clipped


def critic_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor,
                e_clip: float, clip_value: bool) -> torch.Tensor:
    """Squared value error per sample `[n]`, optionally with the rl_games value clipping."""
    loss = (values - returns).square()
    if clip_value:
        clipped = old_values + (values - old_values).clamp(-e_clip, e_clip)
        loss = torch.maximum(loss, (clipped - returns).square())
    return loss
