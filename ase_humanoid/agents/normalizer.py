"""Running mean / variance normaliser (exact parallel combination of batch moments)."""

from __future__ import annotations

import torch
from torch import nn

from ase_humanoid.utils.distributed import all_reduce_moments


class RunningMeanStd(nn.Module):
    """Tracks the mean and (population) variance of everything passed to `update`.

    Statistics are kept in float64 so that after any sequence of batches they equal the mean and
    variance of all samples seen, as numpy would compute them over the concatenation.
    Shapes: `update(x [n, *shape])`, `normalize(x [..., *shape])`.
    """

    def __init__(self, shape: int | tuple[int, ...], eps: float = 1e-5, clip: float | None = None):
        super().__init__()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.eps = eps
        self.clip = clip
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    # Rows per float64 block in `update`: a whole rollout's float64 copy and its square (2 x 15 MB
    # for 8192 x 223 observations) cost more in fresh memory than in arithmetic; a reused block
    # cuts the normalisers' time in an AMP epoch on 2 cores from about 22 to 6-9 ms.
    BLOCK_ROWS = 1024

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold a batch `[n, *shape]` into the running statistics."""
        x = x.reshape(-1, *self.mean.shape).reshape(-1, self.mean.numel())
        total = torch.zeros(x.shape[1], dtype=torch.float64, device=x.device)
        total_sq = torch.zeros_like(total)
        block = torch.empty((min(self.BLOCK_ROWS, x.shape[0]), x.shape[1]), dtype=torch.float64, device=x.device)
        for rows in x.split(self.BLOCK_ROWS):
            rows64 = block[:rows.shape[0]].copy_(rows)
            total += rows64.sum(dim=0)
            total_sq += rows64.square_().sum(dim=0)
        total, total_sq = total.view_as(self.mean), total_sq.view_as(self.mean)
        n = torch.tensor(float(x.shape[0]), dtype=torch.float64, device=x.device)
        # Under torch.distributed every rank folds in the moments of all ranks' batches.
        all_reduce_moments(n, total, total_sq)
        if n == 0:
            return
        batch_mean = total / n
        batch_var = (total_sq / n - batch_mean.square()).clamp_min(0.0)
        total = self.count + n
        delta = batch_mean - self.mean
        # Chan et al. parallel variance: combine the two sums of squared deviations
        m2 = self.var * self.count + batch_var * n + delta.square() * self.count * n / total
        self.mean.add_(delta * n / total)
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    @torch.no_grad()
    def symmetrize(self, mirror) -> None:
        """Make the statistics those of the samples seen together with their mirror images:
        `mirror` maps a vector `[*shape]` to its image by a signed permutation of its entries
        (robots.mirror.SignedPermutation). Afterwards normalising a mirror image gives the mirror
        image of the normalised vector exactly, so a policy can mirror normalised observations."""
        mirrored_mean = mirror(self.mean)
        mirrored_var = mirror(self.var).abs()  # variances permute; their signs do not flip
        self.var.copy_(0.5 * (self.var + mirrored_var) + 0.25 * (self.mean - mirrored_mean).square())
        self.mean.copy_(0.5 * (self.mean + mirrored_mean))

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """(x - mean) / sqrt(var + eps), clamped to +-clip when set; keeps x's dtype."""
        mean = self.mean.to(x.dtype)
        std = torch.sqrt(self.var + self.eps).to(x.dtype)
        y = (x - mean) / std
        if self.clip is not None:
            y = y.clamp(-self.clip, self.clip)
        return y

    def denormalize(self, y: torch.Tensor) -> torch.Tensor:
        """Inverse of `normalize`; y is first clamped to +-clip when set (a value normaliser
        then never returns a value further than clip std from the mean, as rl_games')."""
        if self.clip is not None:
            y = y.clamp(-self.clip, self.clip)
        return y * torch.sqrt(self.var + self.eps).to(y.dtype) + self.mean.to(y.dtype)
