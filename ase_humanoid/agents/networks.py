"""Actor, critic and discriminator networks for PPO, AMP and ASE.

Hidden layers keep torch's default weight initialisation with zero biases; output heads of the
discriminator, encoder and style embedding use small uniform weights, as in the ASE release.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

_ACTIVATIONS = {"relu": nn.ReLU, "elu": nn.ELU, "tanh": nn.Tanh, "silu": nn.SiLU}


def build_mlp(in_dim: int, units: list[int], activation: str) -> nn.Sequential:
    """Linear + activation for each width in `units`; output width is `units[-1]`."""
    layers: list[nn.Module] = []
    for width in units:
        linear = nn.Linear(in_dim, width)
        nn.init.zeros_(linear.bias)
        layers += [linear, _ACTIVATIONS[activation]()]
        in_dim = width
    return nn.Sequential(*layers)


def mlp_weights(mlp: nn.Sequential) -> list[torch.Tensor]:
    """Weight matrices (not biases) of the linear layers of `mlp`."""
    return [m.weight for m in mlp if isinstance(m, nn.Linear)]


def full_precision(linear: nn.Linear, h: torch.Tensor) -> torch.Tensor:
    """`linear(h)` in float32 even under autocast: with a bfloat16 update only the hidden layers
    round to bfloat16, while action means, values, logits and encodings keep float32 weights and
    outputs (PPO's probability ratios against the float32 rollout stay near 1)."""
    if not torch.is_autocast_enabled(h.device.type):
        return linear(h)
    with torch.autocast(h.device.type, enabled=False):
        return linear(h.float())


def _uniform_linear(in_dim: int, out_dim: int, scale: float) -> nn.Linear:
    linear = nn.Linear(in_dim, out_dim)
    nn.init.uniform_(linear.weight, -scale, scale)
    nn.init.zeros_(linear.bias)
    return linear


class GaussianActor(nn.Module):
    """Action mean from an MLP; log-std a per-dimension constant (fixed unless learnable).

    `forward(obs [n, obs_dim]) -> mu [n, action_dim]`.
    """

    def __init__(self, obs_dim: int, action_dim: int, units: list[int], activation: str,
                 init_log_std: float, learn_log_std: bool):
        super().__init__()
        self.mlp = build_mlp(obs_dim, units, activation)
        self.mu = nn.Linear(units[-1], action_dim)
        nn.init.zeros_(self.mu.bias)
        log_std = torch.full((action_dim,), float(init_log_std))
        if learn_log_std:
            self.log_std = nn.Parameter(log_std)
        else:
            self.register_buffer("log_std", log_std)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return full_precision(self.mu, self.mlp(obs))


class ValueNet(nn.Module):
    """`forward(x [n, in_dim]) -> value [n]` (in normalised units when value normalisation is on)."""

    def __init__(self, in_dim: int, units: list[int], activation: str):
        super().__init__()
        self.mlp = build_mlp(in_dim, units, activation)
        self.out = nn.Linear(units[-1], 1)
        nn.init.zeros_(self.out.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return full_precision(self.out, self.mlp(x)).squeeze(-1)


def mirror_latents(z: torch.Tensor) -> torch.Tensor:
    """The latent of a skill's mirror image, `[n, D] -> [n, D]`: the first D // 2 coordinates
    negated (an orthogonal involution: unit latents stay unit, mirroring twice is the identity).
    Under a symmetric actor the latents whose first half is zero are the skills that are their
    own mirror image (walking straight), and the first half says which way the others lean."""
    flip = torch.ones(z.shape[-1], device=z.device, dtype=z.dtype)
    flip[: z.shape[-1] // 2] = -1.0
    return z * flip


class LatentActor(nn.Module):
    """ASE actor: z -> style MLP -> tanh(linear) = style embedding, then MLP on [obs, style].

    `forward(obs [n, obs_dim], z [n, latent_dim]) -> mu [n, action_dim]`;
    `forward_style(obs, style(z))` is the same with the embedding computed once for a latent
    that holds over several steps.

    `make_symmetric(obs_mirror, action_mirror)` turns it into the left-right symmetric actor
    mu_sym(s, z) = (mu(s, z) + A mu(M s, P z)) / 2, with M and A the mirror images of
    (normalised) observations and actions and P = `mirror_latents`: then exactly
    mu_sym(M s, P z) = A mu_sym(s, z), so the mirror image of every skill is another skill (the
    group average of the plain actor; no weights change, so plain and symmetric checkpoints
    load into each other). `style(z)` then holds the embeddings of z and of P z side by side.
    """

    def __init__(self, obs_dim: int, latent_dim: int, action_dim: int, units: list[int],
                 style_units: list[int], style_dim: int, activation: str, style_init_scale: float,
                 init_log_std: float, learn_log_std: bool):
        super().__init__()
        self.style_mlp = build_mlp(latent_dim, style_units, activation)
        self.style_out = _uniform_linear(style_units[-1], style_dim, style_init_scale)
        self.body = GaussianActor(obs_dim + style_dim, action_dim, units, activation,
                                  init_log_std, learn_log_std)
        self.symmetric = False

    @property
    def log_std(self) -> torch.Tensor:
        return self.body.log_std

    def make_symmetric(self, obs_mirror, action_mirror) -> None:
        """Act as the symmetric actor from now on (see the class docstring). `obs_mirror`,
        `action_mirror`: robots.mirror.SignedPermutation of the (normalised) observation and the
        action. Kept as buffers left out of the state dict: they come from the robot."""
        device = self.style_out.weight.device
        for name, mirror in (("obs", obs_mirror), ("action", action_mirror)):
            self.register_buffer(f"{name}_mirror_index", mirror.index.to(device), persistent=False)
            self.register_buffer(f"{name}_mirror_sign", mirror.sign.to(device), persistent=False)
        self.symmetric = True

    def _mirror(self, x: torch.Tensor, name: str) -> torch.Tensor:
        index, sign = getattr(self, f"{name}_mirror_index"), getattr(self, f"{name}_mirror_sign")
        return x.index_select(-1, index) * sign.to(x.dtype)

    def _plain_style(self, z: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.style_out(self.style_mlp(z)))

    def style(self, z: torch.Tensor) -> torch.Tensor:
        """`[n, style_dim]`, or `[n, 2 style_dim]` (z's and its mirror image's) when symmetric."""
        if not self.symmetric:
            return self._plain_style(z)
        return torch.cat([self._plain_style(z), self._plain_style(mirror_latents(z))], dim=-1)

    def forward(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.forward_style(obs, self.style(z))

    def forward_style(self, obs: torch.Tensor, style: torch.Tensor) -> torch.Tensor:
        if not self.symmetric:
            return self.body(torch.cat([obs, style], dim=-1))
        own, mirrored = style.chunk(2, dim=-1)
        mu = self.body(torch.cat([obs, own], dim=-1))
        mu_of_mirror = self.body(torch.cat([self._mirror(obs, "obs"), mirrored], dim=-1))
        return 0.5 * (mu + self._mirror(mu_of_mirror, "action"))


class Discriminator(nn.Module):
    """MLP trunk with a linear logit head and, optionally, a unit-norm encoder head (ASE).

    `logit(x [n, in_dim]) -> [n]`; `encode(x) -> [n, enc_dim]` with ||row|| = 1.
    """

    def __init__(self, in_dim: int, units: list[int], activation: str, logit_init_scale: float,
                 enc_dim: int | None = None, enc_init_scale: float = 0.1):
        super().__init__()
        self.trunk = build_mlp(in_dim, units, activation)
        self.logit_head = _uniform_linear(units[-1], 1, logit_init_scale)
        self.enc_head = (_uniform_linear(units[-1], enc_dim, enc_init_scale)
                         if enc_dim is not None else None)

    def logit(self, x: torch.Tensor) -> torch.Tensor:
        return self.logit_from_features(self.trunk(x))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.encode_features(self.trunk(x))

    def logit_and_encoding(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.logit_from_features(h), self.encode_features(h)

    def logit_from_features(self, h: torch.Tensor) -> torch.Tensor:
        """The logit head on trunk outputs `h [n, units[-1]] -> [n]`."""
        return full_precision(self.logit_head, h).squeeze(-1)

    def encode_features(self, h: torch.Tensor) -> torch.Tensor:
        """The encoder head on trunk outputs `h [n, units[-1]] -> [n, enc_dim]`, unit rows."""
        if self.enc_head is None:
            raise RuntimeError("this discriminator was built without an encoder head")
        return F.normalize(full_precision(self.enc_head, h), dim=-1)

    def logit_weights(self) -> torch.Tensor:
        return self.logit_head.weight

    def disc_weights(self) -> list[torch.Tensor]:
        """Weights under the discriminator's weight decay: trunk and logit head."""
        return mlp_weights(self.trunk) + [self.logit_head.weight]

    def enc_weights(self) -> list[torch.Tensor]:
        """Weights under the encoder's weight decay: the encoder head."""
        return [self.enc_head.weight] if self.enc_head is not None else []


def sum_of_squares(tensors: list[torch.Tensor]) -> torch.Tensor:
    return sum(t.square().sum() for t in tensors)
