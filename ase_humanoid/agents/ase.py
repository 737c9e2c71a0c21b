"""Adversarial Skill Embeddings: AMP with a latent-conditioned policy, an encoder that
recovers the latent from the AMP observation (mutual-information reward) and a diversity
objective that keeps different latents producing different actions."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from ase_humanoid.agents.amp import (AMPAgent, DemoFetcher, DemoKeySource, input_gradient_penalty,
                                     style_reward)
from ase_humanoid.agents.config import ASEConfig
from ase_humanoid.agents.networks import Discriminator, LatentActor, ValueNet, sum_of_squares
from ase_humanoid.agents.ppo_losses import masked_mean
from ase_humanoid.errors import ConfigError
from ase_humanoid.robots.mirror import SignedPermutation


def sample_unit_latents(n: int, dim: int, generator: torch.Generator,
                        device: torch.device) -> torch.Tensor:
    """`[n, dim]` uniformly on the unit sphere (normalised standard Gaussians)."""
    z = torch.randn((n, dim), generator=generator, device=device)
    return F.normalize(z, dim=-1)


def encoder_reward(enc: torch.Tensor, z: torch.Tensor, scale: float) -> torch.Tensor:
    """Mutual-information reward max(enc . z, 0) * scale: `[n, D], [n, D] -> [n]`."""
    return torch.clamp_min((enc * z).sum(-1), 0.0) * scale


def encoder_loss(enc: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """-mean(enc . z) for unit-norm encoder outputs and latents `[n, D]`."""
    return -(enc * z).sum(-1).mean()


def diversity_loss(mu: torch.Tensor, mu_other: torch.Tensor, z: torch.Tensor,
                   z_other: torch.Tensor, target: float) -> torch.Tensor:
    """Per-sample (target - a_diff / (z_diff + 1e-5))^2, `[n]` (the loss is its mean).

    a_diff = mean over action dims of (clip(mu) - clip(mu_other))^2, actions clipped to [-1, 1];
    z_diff = (1 - z . z_other) / 2. Shapes: mu [n, A], z [n, D].
    """
    a_diff = (mu.clamp(-1.0, 1.0) - mu_other.clamp(-1.0, 1.0)).square().mean(-1)
    z_diff = 0.5 - 0.5 * (z * z_other).sum(-1)
    return (target - a_diff / (z_diff + 1e-5)).square()


def uniformity_loss(enc: torch.Tensor) -> torch.Tensor:
    """log mean over pairs of exp(-2 ||e_i - e_j||^2) (Wang & Isola), `[n, D] -> []`."""
    return torch.pdist(enc).square().mul(-2.0).exp().mean().log()


class ASEAgent(AMPAgent):
    """ASE low-level controller trainer.

    Constructor as AMPAgent (config: ASEConfig). Each env holds a latent z on the unit sphere
    for randint[latent_steps_min, latent_steps_max) steps, and gets a new one when its episode
    ends (terminated or truncated in `record_transition`) or through `reset_envs(env_ids)`.
    `set_latents(z)` fixes latents (for evaluation / steering) until `release_latents()`.
    """

    config_class = ASEConfig

    def __init__(self, obs_dim: int, action_dim: int, amp_obs_dim: int, num_envs: int,
                 fetch_amp_obs_demo: DemoFetcher, config: ASEConfig | None = None,
                 device: str | torch.device = "cpu", demo_keys: DemoKeySource | None = None,
                 mirror_maps: dict[str, SignedPermutation] | None = None):
        super().__init__(obs_dim, action_dim, amp_obs_dim, num_envs, fetch_amp_obs_demo,
                         config, device, demo_keys)
        self.obs_mirror = None  # the symmetric actor's mirror of raw observations
        if self.config.symmetric_actor:
            if mirror_maps is None:
                raise ConfigError("train.params.symmetric_actor needs the env's mirror maps (env.mirror_maps()), "
                                  "which this agent was built without")
            self.obs_mirror = mirror_maps["obs"].to(self.device)
            # the normaliser's statistics become symmetric, so mirroring commutes with normalising
            self.obs_norm.symmetrize(self.obs_mirror)
            self.actor.make_symmetric(self.obs_mirror, mirror_maps["actions"])
        self.latent_dim = self.config.latent_dim
        self.latents = self.sample_latents(num_envs)  # [N, latent_dim]
        self.latent_steps_left = self._sample_latent_steps(num_envs)  # [N]
        self.latents_fixed = False

    # ----------------------------------------------------------------- construction hooks
    def _build_networks(self) -> None:
        cfg = self.config
        self.actor = LatentActor(self.obs_dim, cfg.latent_dim, self.action_dim, cfg.actor_units,
                                 cfg.style_units, cfg.latent_dim, cfg.activation,
                                 cfg.style_init_scale, cfg.init_log_std, cfg.learn_log_std)
        self.critic = ValueNet(self.obs_dim + cfg.latent_dim, cfg.critic_units, cfg.activation)
        self.disc = Discriminator(self.amp_obs_dim, cfg.disc_units, cfg.activation,
                                  cfg.disc_logit_init_scale, enc_dim=cfg.latent_dim,
                                  enc_init_scale=cfg.enc_init_scale)

    def _modules_to_train(self) -> dict[str, nn.Module]:
        return {"actor": self.actor, "critic": self.critic, "disc": self.disc}

    def _rollout_specs(self):
        return {**super()._rollout_specs(),
                "latents": ((self.config.latent_dim,), torch.float32)}

    # ----------------------------------------------------------------- latents
    def sample_latents(self, n: int) -> torch.Tensor:
        """`[n, latent_dim]` fresh unit latents from the agent's generator."""
        return sample_unit_latents(n, self.config.latent_dim, self.rng, self.device)

    def _sample_latent_steps(self, n: int) -> torch.Tensor:
        cfg = self.config
        return torch.randint(cfg.latent_steps_min, cfg.latent_steps_max, (n,),
                             generator=self.rng, device=self.device)

    def _resample(self, env_ids: torch.Tensor) -> None:
        if env_ids.numel() == 0 or self.latents_fixed:
            return
        self.latents[env_ids] = self.sample_latents(env_ids.numel())
        self.latent_steps_left[env_ids] = self._sample_latent_steps(env_ids.numel())

    def reset_envs(self, env_ids: torch.Tensor) -> None:
        """New latents and hold counters for `env_ids [k]` (call when the runner resets envs
        outside `record_transition`, e.g. at the very start)."""
        self._resample(torch.as_tensor(env_ids, device=self.device, dtype=torch.long).reshape(-1))

    def set_latents(self, z: torch.Tensor, env_ids: torch.Tensor | None = None) -> None:
        """Fix latents: `z [num_envs, D]` (or `[len(env_ids), D]`, or `[D]` for all envs).
        They are normalised to unit length and held until `release_latents()`."""
        z = F.normalize(torch.as_tensor(z, device=self.device, dtype=torch.float32), dim=-1)
        if env_ids is None:
            self.latents[:] = z.expand_as(self.latents)
        else:
            self.latents[torch.as_tensor(env_ids, device=self.device, dtype=torch.long)] = z
        self.latents_fixed = True

    def release_latents(self) -> None:
        """Return to the random latent schedule (all envs resample now)."""
        self.latents_fixed = False
        self._resample(torch.arange(self.num_envs, device=self.device))

    def _after_step(self, dones: torch.Tensor) -> None:
        super()._after_step(dones)
        self.advance_latents(dones)

    def advance_latents(self, dones: torch.Tensor) -> None:
        """One control step of the latent schedule: envs that reset (`dones [N]` bool) or whose
        hold time ran out get new latents. Runs inside `record_transition`; evaluation, which
        records nothing, calls it directly."""
        if self.latents_fixed:
            return
        self.latent_steps_left -= 1
        self._resample(torch.nonzero(dones.to(self.device) | (self.latent_steps_left <= 0)).squeeze(-1))

    # ----------------------------------------------------------------- policy evaluation
    def _conditioning(self) -> dict[str, torch.Tensor]:
        return {"latents": self.latents.clone()}

    def _batch_conditioning(self, mb):
        return {"latents": mb["latents"]}

    def _policy_mu(self, obs_n, cond):
        return self.actor(obs_n, cond["latents"])

    def _critic_value(self, obs_n, cond):
        return self.critic(torch.cat([obs_n, cond["latents"]], dim=-1))

    @torch.no_grad()
    def action_mean(self, obs: torch.Tensor, latents: torch.Tensor) -> torch.Tensor:
        """Deterministic low-level action for raw `obs [n, obs_dim]` and unit `latents [n, D]`,
        `[n, action_dim]` (what a frozen LLC applies under a high-level policy)."""
        return self.actor(self._normalize_obs(obs), latents)

    @torch.no_grad()
    def encode(self, amp_obs: torch.Tensor) -> torch.Tensor:
        """Encoder output (unit norm) of raw AMP observations `[n, amp_obs_dim] -> [n, D]`."""
        return self.disc.encode(self._normalize_amp(amp_obs))

    @torch.no_grad()
    def calc_encoder_reward(self, amp_obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """Unweighted MI reward max(enc(amp_obs) . z, 0) * enc_reward_scale, `[n]`."""
        return encoder_reward(self.encode(amp_obs), z, self.config.enc_reward_scale)

    # ----------------------------------------------------------------- rollout / update
    def _extra_step_data(self, act_out, info):
        return {**super()._extra_step_data(act_out, info), "latents": act_out["latents"]}

    def _extra_batch(self):
        return {**super()._extra_batch(), "latents": self.rollout.flat("latents")}

    def _learnt_rewards(self, amp_obs, stats):
        cfg = self.config
        with torch.no_grad():
            amp_n = self._normalize_amp(amp_obs)
            if self.reference_update:  # a trunk pass per head
                logits, enc = self.disc.logit(amp_n), self.disc.encode(amp_n)
            else:
                logits, enc = self.disc.logit_and_encoding(amp_n)
        disc_r = style_reward(logits, cfg.disc_reward_scale)
        enc_r = encoder_reward(enc, self.rollout.flat("latents"), cfg.enc_reward_scale)
        stats["disc_reward_mean"] = disc_r.mean().item()
        stats["enc_reward_mean"] = enc_r.mean().item()
        return cfg.disc_reward_w * disc_r + cfg.enc_reward_w * enc_r

    def _disc_extra_loss(self, mb, obs_n, mu, cond, agent_amp_n, agent_features):
        cfg = self.config
        stats: dict[str, float] = {}
        n = agent_amp_n.shape[0]
        z = mb["latents"][:n]
        if cfg.enc_grad_penalty == 0.0 and not self.reference_update:
            # the discriminator step's trunk outputs for these samples: the encoder loss's
            # gradient reaches the trunk through them, as through a second pass of its own
            enc = self.disc.encode_features(agent_features)
        else:  # a trunk pass of its own (the encoder's gradient penalty needs the input's gradient)
            amp_in = agent_amp_n.detach().requires_grad_(cfg.enc_grad_penalty != 0.0)
            enc = self.disc.encode(amp_in)
        enc_loss = encoder_loss(enc, z)
        stats["enc_loss"] = enc_loss.item()
        if cfg.enc_grad_penalty != 0.0:
            penalty = input_gradient_penalty(-(enc * z).sum(-1), amp_in)
            enc_loss = enc_loss + cfg.enc_grad_penalty * penalty
            stats["enc_grad_penalty"] = penalty.item()
        if cfg.enc_weight_decay != 0.0:
            enc_loss = enc_loss + cfg.enc_weight_decay * sum_of_squares(self.disc.enc_weights())
        loss = cfg.enc_coef * enc_loss
        if cfg.latent_uniformity_coef != 0.0:
            uniform = uniformity_loss(enc)
            loss = loss + cfg.latent_uniformity_coef * uniform
            stats["uniformity_loss"] = uniform.item()
        if cfg.amp_diversity_bonus != 0.0:
            z_other = self.sample_latents(obs_n.shape[0])
            mu_other = self.actor(obs_n, z_other)
            # a policy loss: eps-greedy samples that acted with the mean stay out (as the actor's)
            div = masked_mean(diversity_loss(mu, mu_other, cond["latents"], z_other, cfg.amp_diversity_tar),
                              mb["sampled"])
            loss = loss + cfg.amp_diversity_bonus * div
            stats["diversity_loss"] = div.item()
        return loss, stats

    def _update_obs_norm(self, obs: torch.Tensor) -> None:
        super()._update_obs_norm(obs)
        if self.obs_mirror is not None:
            self.obs_norm.symmetrize(self.obs_mirror)

    # ----------------------------------------------------------------- checkpoints
    def state_dict(self, include_buffers: bool | None = None) -> dict[str, Any]:
        state = super().state_dict(include_buffers)
        state.update({"latents": self.latents.clone(),
                      "latent_steps_left": self.latent_steps_left.clone(),
                      "latents_fixed": self.latents_fixed})
        return state

    def load_policy_state_dict(self, state: dict[str, Any]) -> None:
        super().load_policy_state_dict(state)
        if self.obs_mirror is not None:  # weights of a plain actor start a symmetric one
            self.obs_norm.symmetrize(self.obs_mirror)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.latents.copy_(state["latents"])
        self.latent_steps_left.copy_(state["latent_steps_left"])
        self.latents_fixed = state["latents_fixed"]
