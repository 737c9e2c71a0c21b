"""Agent hyperparameters as dataclasses.

Defaults are the settings of the ASE paper's released training configs (rl_games style):
`PPOConfig` holds the PPO part, `AMPConfig` adds the discriminator (release `amp_humanoid`),
`ASEConfig` adds latents, encoder and diversity terms (release `ase_humanoid`).

`from_dict` builds a config from a plain mapping (e.g. a Hydra node) and raises `ConfigError`
naming any unknown key (with the valid ones) or any value of the wrong type.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, TypeVar

from ase_humanoid.errors import ConfigError
from ase_humanoid.utils.typed_config import check_finite_floats, config_from_mapping

C = TypeVar("C", bound="PPOConfig")


@dataclass
class PPOConfig:
    """PPO with a fixed-std Gaussian policy and separate actor / critic MLPs."""

    # networks
    actor_units: list[int] = field(default_factory=lambda: [1024, 512])
    critic_units: list[int] = field(default_factory=lambda: [1024, 512])
    activation: str = "relu"
    init_log_std: float = -2.9  # log of the policy's std per action dim
    learn_log_std: bool = False  # the release keeps the std fixed
    # normalisation
    normalize_input: bool = True  # running mean/std of policy observations
    normalize_value: bool = True  # critic predicts values in normalised units
    normalize_advantage: bool = True
    normalize_reward: bool = False  # divide the combined reward by its running std (off in release)
    obs_clip: float = 5.0  # normalised inputs are clamped to +-obs_clip
    # normalised value targets, and the critic's output before it is de-normalised, are clamped
    # to +-this (as rl_games' value normaliser in the release); null: no clamp
    value_norm_clip: float | None = 5.0
    # when the observation normalisers learn: "per_minibatch" (the release: every training
    # minibatch joins the statistics right before it is normalised; AMP: its agent, replay and
    # demo samples, with the rollout's rewards computed on the statistics before the update) or
    # "per_epoch" (the rollout's observations join once, after the update; AMP: agent and demo
    # samples before the rewards are computed)
    normalizer_update: str = "per_minibatch"
    # returns
    gamma: float = 0.99
    gae_lambda: float = 0.95  # "tau" in rl_games
    # optimisation
    learning_rate: float = 2e-5
    adam_eps: float = 1e-8
    horizon_length: int = 32
    mini_epochs: int = 6
    minibatch_size: int = 16384  # must divide horizon_length * num_envs
    e_clip: float = 0.2
    clip_value: bool = False
    critic_coef: float = 5.0
    entropy_coef: float = 0.0
    bounds_loss_coef: float = 10.0
    bounds_soft_limit: float = 1.0  # action means beyond +-this are penalised quadratically
    truncate_grads: bool = False  # the release configs set this False (no clipping) ...
    grad_norm: float = 1.0  # ... with this norm when truncate_grads is True
    # what the update's hidden layers compute in: "float32" (the release), "bfloat16" (under
    # torch.autocast; output heads, losses, gradients' accumulation and Adam stay float32) or
    # "auto" (bfloat16 on a CPU with bfloat16 matrix instructions, AMX or AVX512-BF16, where its
    # matrix products are 2x to several times faster, else float32). The rollout's forward
    # passes stay float32.
    update_precision: str = "float32"
    # reproducibility: None draws a seed from torch's global generator
    seed: int | None = None

    def validate(self) -> None:
        """Raise ConfigError naming the first invalid field."""
        check_finite_floats(self, "agent")
        _check_non_negative(self)
        _check(self.activation in _ACTIVATIONS, "activation",
               f"{self.activation!r} is not one of {sorted(_ACTIVATIONS)}")
        for name in ("actor_units", "critic_units"):
            units = getattr(self, name)
            _check(len(units) > 0 and all(int(u) > 0 for u in units), name,
                   f"needs at least one positive layer width, got {units}")
        for name in ("horizon_length", "mini_epochs", "minibatch_size"):
            _check(getattr(self, name) > 0, name, f"must be > 0, got {getattr(self, name)}")
        _check(0.0 < self.gamma <= 1.0, "gamma", f"must be in (0, 1], got {self.gamma}")
        _check(0.0 <= self.gae_lambda <= 1.0, "gae_lambda", f"must be in [0, 1], got {self.gae_lambda}")
        _check(0.0 < self.learning_rate <= 1.0, "learning_rate", f"must be in (0, 1], got {self.learning_rate}")
        _check(self.adam_eps > 0, "adam_eps", f"must be > 0, got {self.adam_eps}")
        _check(self.bounds_soft_limit > 0, "bounds_soft_limit", f"must be > 0, got {self.bounds_soft_limit}")
        _check(self.e_clip > 0, "e_clip", f"must be > 0, got {self.e_clip}")
        _check(self.obs_clip > 0, "obs_clip", f"must be > 0, got {self.obs_clip}")
        _check(self.grad_norm > 0, "grad_norm", f"must be > 0, got {self.grad_norm}")
        _check(self.value_norm_clip is None or self.value_norm_clip > 0, "value_norm_clip",
               f"must be > 0 or null, got {self.value_norm_clip}")
        _check_choice(self, "normalizer_update", _WHEN)
        _check_choice(self, "update_precision", _PRECISIONS)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class AMPConfig(PPOConfig):
    """PPO plus an AMP discriminator (release `amp_humanoid`)."""

    disc_units: list[int] = field(default_factory=lambda: [1024, 512])
    disc_logit_init_scale: float = 1.0  # logit layer weights ~ U(-s, s)
    amp_obs_demo_buffer_size: int = 200_000
    amp_replay_buffer_size: int = 200_000
    amp_replay_keep_prob: float = 0.01  # once the replay buffer is full
    amp_batch_size: int = 512  # demo samples fetched per update (and per fetch when filling)
    amp_minibatch_size: int = 4096  # agent / replay / demo samples per discriminator step
    # how the discriminator's demo and replay samples are drawn: "per_epoch" (the release: one
    # set of horizon_length * num_envs of each per epoch, without replacement, split across the
    # minibatches like the rollout) or "per_minibatch" (amp_minibatch_size fresh ones per
    # discriminator step, with replacement)
    disc_sampling: str = "per_epoch"
    disc_coef: float = 5.0
    disc_logit_reg: float = 0.01
    disc_grad_penalty: float = 5.0
    disc_weight_decay: float = 1e-4
    disc_reward_scale: float = 2.0
    normalize_amp_input: bool = True
    # per-env eps-greedy: env i samples its action with probability
    # 1 - exp(10 (i / (N - 1) - 1)) (env 0 always, env N-1 never) and acts with the mean otherwise
    enable_eps_greedy: bool = False
    task_reward_w: float = 0.0
    disc_reward_w: float = 1.0
    # store the demo buffer (as keys) and the replay buffer in checkpoints (exact resume)
    checkpoint_amp_buffers: bool = True
    # keep the replay buffer in run_dir/replay/ as an append-only journal (each checkpoint writes
    # only the rows stored since the last one) instead of inside latest.pt; see replay_journal.py
    amp_replay_journal: bool = True

    def validate(self) -> None:
        super().validate()
        _check(len(self.disc_units) > 0 and all(int(u) > 0 for u in self.disc_units),
               "disc_units", f"needs at least one positive layer width, got {self.disc_units}")
        for name in ("amp_obs_demo_buffer_size", "amp_replay_buffer_size", "amp_batch_size",
                     "amp_minibatch_size"):
            _check(getattr(self, name) > 0, name, f"must be > 0, got {getattr(self, name)}")
        _check(0.0 <= self.amp_replay_keep_prob <= 1.0, "amp_replay_keep_prob",
               f"must be in [0, 1], got {self.amp_replay_keep_prob}")
        _check_choice(self, "disc_sampling", _WHEN)


@dataclass
class ASEConfig(AMPConfig):
    """AMP plus latent skills, an encoder and the diversity objective (release `ase_humanoid`)."""

    actor_units: list[int] = field(default_factory=lambda: [1024, 1024, 512])
    critic_units: list[int] = field(default_factory=lambda: [1024, 1024, 512])
    disc_units: list[int] = field(default_factory=lambda: [1024, 1024, 512])
    enable_eps_greedy: bool = True  # the release's ASE config turns it on
    disc_reward_w: float = 0.5
    enc_reward_w: float = 0.5
    # latents
    latent_dim: int = 64
    latent_steps_min: int = 1  # each env holds its latent for randint[min, max) steps
    latent_steps_max: int = 150
    style_units: list[int] = field(default_factory=lambda: [512, 256])
    style_init_scale: float = 1.0  # style output layer weights ~ U(-s, s)
    # encoder (a head on the discriminator trunk)
    enc_init_scale: float = 0.1
    enc_coef: float = 5.0
    enc_weight_decay: float = 0.0
    enc_grad_penalty: float = 0.0
    enc_reward_scale: float = 1.0
    # diversity objective
    amp_diversity_bonus: float = 0.01
    amp_diversity_tar: float = 1.0
    # optional, off in the release: uniformity loss on encoder outputs
    # (log mean exp(-2 ||e_i - e_j||^2) over pairs in the batch)
    latent_uniformity_coef: float = 0.0
    # optional, not in the release: the left-right symmetric actor (networks.LatentActor's
    # make_symmetric); needs a symmetric humanoid and an observation without task terms
    symmetric_actor: bool = False

    def validate(self) -> None:
        super().validate()
        _check(self.latent_dim > 0, "latent_dim", f"must be > 0, got {self.latent_dim}")
        _check(1 <= self.latent_steps_min < self.latent_steps_max, "latent_steps_min",
               f"need 1 <= latent_steps_min < latent_steps_max, got "
               f"{self.latent_steps_min} and {self.latent_steps_max}")
        _check(len(self.style_units) > 0, "style_units", "needs at least one layer")


_ACTIVATIONS = {"relu", "elu", "tanh", "silu"}
_WHEN = ("per_minibatch", "per_epoch")  # choices of normalizer_update and disc_sampling
_PRECISIONS = ("float32", "bfloat16", "auto")  # choices of update_precision


# Loss coefficients, reward weights and scales, regularisers: a negative one turns a penalty
# into a reward (or a clip into nonsense), so every float field named like one must be >= 0.
_NON_NEGATIVE_SUFFIXES = ("_coef", "_w", "_scale", "_reg", "_penalty", "_decay", "_bonus", "_tar")


def _check_non_negative(config: PPOConfig) -> None:
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name.endswith(_NON_NEGATIVE_SUFFIXES) and isinstance(value, float):
            _check(value >= 0.0, f.name, f"must be >= 0, got {value}")


def _check_choice(config: PPOConfig, key: str, choices: tuple[str, ...]) -> None:
    value = getattr(config, key)
    _check(value in choices, key, f"{value!r} is not one of {', '.join(choices)}")


def _check(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"agent config key '{key}': {message}")


def from_dict(cls: type[C], values: Mapping[str, Any] | None) -> C:
    """Build `cls` from a mapping; unknown keys and wrongly typed values raise ConfigError."""
    return config_from_mapping(cls, values, "agent")
