"""Adversarial Motion Priors: PPO plus a discriminator whose output is the style reward."""

from __future__ import annotations

import math
from typing import Any, Callable, Protocol

import torch
from torch import nn
from torch.nn import functional as F

from ase_humanoid.agents.buffers import DemoKeyBuffer, ReplayBuffer, SampleBuffer
from ase_humanoid.agents.config import AMPConfig
from ase_humanoid.agents.networks import Discriminator, sum_of_squares
from ase_humanoid.agents.normalizer import RunningMeanStd
from ase_humanoid.agents.ppo import PPOAgent
from ase_humanoid.agents.replay_journal import BufferJournal
from ase_humanoid.errors import CheckpointError, ConfigError

DemoFetcher = Callable[[int], torch.Tensor]

# training batch entries read by the discriminator step alone, for its first amp_minibatch_size rows
_DISC_BATCH_KEYS = ("amp_obs", "demo_idx", "replay_idx")


class DemoKeySource(Protocol):
    """What the humanoid envs offer besides `fetch_amp_obs_demo`: its two halves, so the demo
    buffer can be checkpointed as keys (see `DemoKeyBuffer`)."""

    def sample_amp_obs_demo_keys(self, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]: ...

    def amp_obs_demo_from_keys(self, motion_ids: torch.Tensor, start_times: torch.Tensor) -> torch.Tensor: ...


def style_reward(logits: torch.Tensor, scale: float) -> torch.Tensor:
    """AMP style reward -log(max(1 - sigmoid(logit), 1e-4)) * scale, `[n] -> [n]`."""
    prob = torch.sigmoid(logits)
    return -torch.log(torch.clamp_min(1.0 - prob, 1e-4)) * scale


def input_gradient_penalty(outputs: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of ||d outputs_i / d inputs_i||^2 (`inputs` must require grad).

    `outputs [n]` where row i depends only on `inputs[i]`; kept in the graph so the penalty
    itself can be differentiated.
    """
    (grad,) = torch.autograd.grad(outputs.sum(), inputs, create_graph=True)
    return grad.square().sum(-1).mean()


def discriminator_loss(agent_logits: torch.Tensor, demo_logits: torch.Tensor) -> torch.Tensor:
    """0.5 * (BCE(agent, 0) + BCE(demo, 1)), each averaged over its samples."""
    agent = F.binary_cross_entropy_with_logits(agent_logits, torch.zeros_like(agent_logits))
    demo = F.binary_cross_entropy_with_logits(demo_logits, torch.ones_like(demo_logits))
    return 0.5 * (agent + demo)


class AMPAgent(PPOAgent):
    """PPO agent rewarded by an AMP discriminator.

    Args:
        obs_dim, action_dim, num_envs, device: as for PPOAgent.
        amp_obs_dim: size of one AMP observation (all stacked steps), e.g. 10 * 125.
        fetch_amp_obs_demo: callable n -> Tensor [n, amp_obs_dim] of reference-motion AMP
            observations; called to fill the demo buffer at construction and for
            `amp_batch_size` fresh samples at every update.
        config: AMPConfig.
        demo_keys: optional DemoKeySource (the env) used instead of fetch_amp_obs_demo: same
            samples, and checkpoints store their keys rather than the samples (compact).

    `record_transition` expects `info["amp_obs"]` [num_envs, amp_obs_dim]: the AMP observation
    of the state reached by the step (before any reset).
    """

    config_class = AMPConfig

    def __init__(self, obs_dim: int, action_dim: int, amp_obs_dim: int, num_envs: int,
                 fetch_amp_obs_demo: DemoFetcher, config: AMPConfig | None = None,
                 device: str | torch.device = "cpu", demo_keys: DemoKeySource | None = None):
        self.amp_obs_dim = amp_obs_dim
        self.fetch_amp_obs_demo = fetch_amp_obs_demo
        self.demo_keys = demo_keys
        super().__init__(obs_dim, action_dim, num_envs, config, device)
        cfg = self.config
        self.amp_norm = RunningMeanStd(amp_obs_dim, clip=cfg.obs_clip).to(self.device)
        if demo_keys is None:
            self.demo_buffer = SampleBuffer(cfg.amp_obs_demo_buffer_size, amp_obs_dim, self.device)
        else:
            self.demo_buffer = DemoKeyBuffer(cfg.amp_obs_demo_buffer_size, amp_obs_dim, self.device,
                                             lambda ids, times: self._checked_demo(
                                                 demo_keys.amp_obs_demo_from_keys(ids, times), ids.shape[0]))
        self.replay_buffer = ReplayBuffer(cfg.amp_replay_buffer_size, amp_obs_dim,
                                          cfg.amp_replay_keep_prob, self.device)
        # Set by the Runner that writes this agent's checkpoints (amp_replay_journal): the replay
        # samples then go to that journal, and state_dict stores a reference to them.
        self.replay_journal: BufferJournal | None = None
        for _ in range(math.ceil(cfg.amp_obs_demo_buffer_size / cfg.amp_batch_size)):
            self._refill_demo(cfg.amp_batch_size)

    # ----------------------------------------------------------------- construction hooks
    def _build_networks(self) -> None:
        super()._build_networks()
        cfg = self.config
        self.disc = Discriminator(self.amp_obs_dim, cfg.disc_units, cfg.activation,
                                  cfg.disc_logit_init_scale)

    def _modules_to_train(self) -> dict[str, nn.Module]:
        return {**super()._modules_to_train(), "disc": self.disc}

    def _rollout_specs(self):
        return {**super()._rollout_specs(), "amp_obs": ((self.amp_obs_dim,), torch.float32)}

    def _refill_demo(self, n: int) -> None:
        """Store n fresh demo samples (with their keys when the source offers them)."""
        if self.demo_keys is None:
            self.demo_buffer.store(self._checked_demo(self.fetch_amp_obs_demo(n), n))
            return
        motion_ids, start_times = self.demo_keys.sample_amp_obs_demo_keys(n)
        demo = self.demo_buffer.samples_from_keys(motion_ids, start_times)  # as a load recomputes them
        self.demo_buffer.store_with_keys(demo, motion_ids, start_times)

    def _checked_demo(self, demo: torch.Tensor, n: int) -> torch.Tensor:
        if not isinstance(demo, torch.Tensor) or tuple(demo.shape) != (n, self.amp_obs_dim):
            shape = tuple(demo.shape) if isinstance(demo, torch.Tensor) else type(demo).__name__
            raise ConfigError(f"demo AMP observations for {n} samples came back as {shape}; the "
                              f"agent's amp_obs_dim needs [{n}, {self.amp_obs_dim}]")
        return demo.to(self.device, torch.float32)

    # ----------------------------------------------------------------- discriminator
    def _normalize_amp(self, amp_obs: torch.Tensor) -> torch.Tensor:
        return self.amp_norm.normalize(amp_obs) if self.config.normalize_amp_input else amp_obs

    @torch.no_grad()
    def disc_logits(self, amp_obs: torch.Tensor) -> torch.Tensor:
        """Discriminator logits of raw AMP observations `[n, amp_obs_dim] -> [n]`."""
        return self.disc.logit(self._normalize_amp(amp_obs))

    @torch.no_grad()
    def calc_style_reward(self, amp_obs: torch.Tensor) -> torch.Tensor:
        """Style reward of raw AMP observations `[n, amp_obs_dim] -> [n]` (unweighted)."""
        return style_reward(self.disc_logits(amp_obs), self.config.disc_reward_scale)

    # ----------------------------------------------------------------- rollout
    def _extra_step_data(self, act_out: dict, info: dict) -> dict[str, torch.Tensor]:
        if "amp_obs" not in info:
            raise KeyError("AMP agents need info['amp_obs'] [num_envs, amp_obs_dim] in "
                           "record_transition")
        return {**super()._extra_step_data(act_out, info), "amp_obs": info["amp_obs"]}

    # ----------------------------------------------------------------- update
    def _before_update(self, stats: dict[str, float]) -> None:
        super()._before_update(stats)
        self._refill_demo(self.config.amp_batch_size)
        # per_minibatch: the rewards use the statistics as they were; the discriminator steps
        # update them (_normalize_training_amp)
        if self.config.normalize_amp_input and self.config.normalizer_update == "per_epoch":
            agent = self.rollout.flat("amp_obs")
            self.amp_norm.update(agent)
            self.amp_norm.update(self.demo_buffer.sample(agent.shape[0], self.rng))

    def _learnt_rewards(self, amp_obs: torch.Tensor, stats: dict[str, float]) -> torch.Tensor:
        """Weighted learnt reward for `[n, amp_obs_dim]`, `[n]` (AMP: the style reward)."""
        disc_r = self.calc_style_reward(amp_obs)
        stats["disc_reward_mean"] = disc_r.mean().item()
        return self.config.disc_reward_w * disc_r

    def _total_rewards(self, stats: dict[str, float]) -> torch.Tensor:
        task = self.rollout.data["rewards"]
        stats["task_reward_mean"] = task.mean().item()
        learnt = self._learnt_rewards(self.rollout.flat("amp_obs"), stats).reshape(task.shape)
        return self.config.task_reward_w * task + learnt

    def _extra_batch(self) -> dict[str, torch.Tensor]:
        batch = {**super()._extra_batch(), "amp_obs": self.rollout.flat("amp_obs")}
        if self.config.disc_sampling == "per_epoch":
            batch.update(self._epoch_disc_indices())
        return batch

    def _minibatch(self, batch: dict[str, torch.Tensor], idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """As PPO's, but the discriminator's inputs (agent AMP observations, demo and replay rows)
        only for the first amp_minibatch_size rows of `idx`, the only ones it reads."""
        if self.reference_update:
            return super()._minibatch(batch, idx)
        disc_idx = idx[:self.config.amp_minibatch_size]
        return {k: v[disc_idx if k in _DISC_BATCH_KEYS else idx] for k, v in batch.items()}

    def _epoch_disc_indices(self) -> dict[str, torch.Tensor]:
        """This epoch's demo and replay rows, `[batch_size]` indices each, drawn without
        replacement; they ride in the training batch, so every minibatch takes its own share.
        No replay rows while the replay buffer is empty (the agent's samples stand in)."""
        rows = {"demo_idx": self.demo_buffer.sample_indices_without_replacement(self.batch_size, self.rng)}
        if len(self.replay_buffer):
            rows["replay_idx"] = self.replay_buffer.sample_indices_without_replacement(self.batch_size, self.rng)
        return rows

    def _disc_replay_and_demo(self, mb: dict[str, torch.Tensor],
                              agent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw (replay, demo) AMP observations `[n, amp_obs_dim]` each for a discriminator step
        on the agent samples `agent [n, amp_obs_dim]`."""
        n = agent.shape[0]
        if self.config.disc_sampling == "per_epoch":
            demo = self.demo_buffer.samples[mb["demo_idx"][:n]]
            replay = self.replay_buffer.samples[mb["replay_idx"][:n]] if "replay_idx" in mb else agent
        else:
            replay = self.replay_buffer.sample(n, self.rng) if len(self.replay_buffer) else agent
            demo = self.demo_buffer.sample(n, self.rng)
        return replay, demo

    def _normalize_training_amp(self, amp_obs: torch.Tensor) -> torch.Tensor:
        """`_normalize_amp` for a discriminator step; with normalizer_update per_minibatch the
        samples join the statistics first (the release's normaliser in training mode)."""
        if self.config.normalize_amp_input and self.config.normalizer_update == "per_minibatch":
            self.amp_norm.update(amp_obs)
        return self._normalize_amp(amp_obs)

    def _disc_batch(self, mb: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Normalised (agent, replay, demo) AMP observations for one discriminator step."""
        agent = mb["amp_obs"][:self.config.amp_minibatch_size]
        replay, demo = self._disc_replay_and_demo(mb, agent)
        # the release's order: with per_minibatch each set is normalised by statistics that
        # include it and the sets before it
        agent_n = self._normalize_training_amp(agent)
        replay_n = self._normalize_training_amp(replay)
        demo_n = self._normalize_training_amp(demo)
        return agent_n, replay_n, demo_n

    def _extra_loss(self, mb, obs_n, mu, cond):
        base_loss, stats = super()._extra_loss(mb, obs_n, mu, cond)
        cfg = self.config
        agent, replay, demo = self._disc_batch(mb)
        demo = demo.detach().requires_grad_(True)
        agent_features = self.disc.trunk(torch.cat([agent, replay], dim=0))  # [2n, units[-1]]
        agent_logits = self.disc.logit_from_features(agent_features)
        demo_logits = self.disc.logit(demo)
        bce = discriminator_loss(agent_logits, demo_logits)
        logit_reg = self.disc.logit_weights().square().sum()
        grad_penalty = input_gradient_penalty(demo_logits, demo)
        disc_loss = bce + cfg.disc_logit_reg * logit_reg + cfg.disc_grad_penalty * grad_penalty
        if cfg.disc_weight_decay != 0.0:
            disc_loss = disc_loss + cfg.disc_weight_decay * sum_of_squares(self.disc.disc_weights())
        with torch.no_grad():
            n_agent = agent.shape[0]
            stats.update({
                "disc_loss": disc_loss.item(), "disc_bce": bce.item(),
                "disc_grad_penalty": grad_penalty.item(), "disc_logit_reg": logit_reg.item(),
                "disc_agent_acc": (agent_logits[:n_agent] < 0).float().mean().item(),
                "disc_replay_acc": (agent_logits[n_agent:] < 0).float().mean().item(),
                "disc_demo_acc": (demo_logits > 0).float().mean().item(),
                "disc_agent_logit": agent_logits[:n_agent].mean().item(),
                "disc_demo_logit": demo_logits.mean().item(),
            })
        loss = base_loss + cfg.disc_coef * disc_loss
        extra_loss, extra_stats = self._disc_extra_loss(mb, obs_n, mu, cond, agent,
                                                        agent_features[:agent.shape[0]])
        stats.update(extra_stats)
        return loss + extra_loss, stats

    def _disc_extra_loss(self, mb, obs_n, mu, cond, agent_amp_n, agent_features):
        """Further losses sharing the discriminator batch (ASE: encoder, diversity).
        `agent_amp_n [n, amp_obs_dim]`: the normalised agent samples; `agent_features [n, units[-1]]`:
        the discriminator trunk's outputs for them, in the graph of this step's loss."""
        return 0.0, {}

    def _after_update(self, stats: dict[str, float]) -> None:
        super()._after_update(stats)
        self.replay_buffer.insert(self.rollout.flat("amp_obs"), self.rng)
        stats["replay_buffer_size"] = float(len(self.replay_buffer))

    # ----------------------------------------------------------------- checkpoints
    def state_dict(self, include_buffers: bool | None = None) -> dict[str, Any]:
        state = super().state_dict()
        include = self.config.checkpoint_amp_buffers if include_buffers is None else include_buffers
        if include and self.replay_journal is not None:
            replay = {**self.replay_buffer.state_dict(include_samples=False),
                      "journal": self.replay_journal.sync(self.replay_buffer)}
        else:
            replay = self.replay_buffer.state_dict(include)
        state.update({"amp_obs_dim": self.amp_obs_dim, "amp_norm": self.amp_norm.state_dict(),
                      "demo_buffer": self.demo_buffer.state_dict(include), "replay_buffer": replay})
        return state

    def load_policy_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("amp_obs_dim") != self.amp_obs_dim:
            raise CheckpointError(f"checkpoint amp_obs_dim {state.get('amp_obs_dim')} does not "
                                  f"match this agent's {self.amp_obs_dim}")
        super().load_policy_state_dict(state)
        self.amp_norm.load_state_dict(state["amp_norm"])

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        try:
            self.replay_buffer.load_state_dict(state["replay_buffer"])
            demo_state = state["demo_buffer"]
            if "samples" in demo_state or "motion_ids" in demo_state:  # else keep the constructed fill
                self.demo_buffer.load_state_dict(demo_state)
        except ValueError as err:
            raise CheckpointError(f"checkpoint AMP buffers: {err}") from err
