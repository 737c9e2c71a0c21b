"""PPO with a fixed-std Gaussian policy, GAE that bootstraps through timeouts, value and
observation normalisation: the base of the AMP and ASE agents.

The rollout loop lives elsewhere (the runner). Per step it calls

    out = agent.act(obs)                                   # samples actions, caches what PPO needs
    next_obs, reward, terminated, truncated, info = env.step(out["actions"])
    agent.record_transition(obs, out["actions"], reward, terminated, truncated, next_obs, info)

and after `horizon_length` steps `stats = agent.update()`.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch
from torch import nn

from ase_humanoid.agents.buffers import RolloutBuffer
from ase_humanoid.agents.config import PPOConfig
from ase_humanoid.agents.networks import GaussianActor, ValueNet
from ase_humanoid.agents.normalizer import RunningMeanStd
from ase_humanoid.agents.ppo_losses import (
    bounds_loss,
    compute_gae,
    critic_loss,
    gaussian_log_prob,
    masked_mean,
    normalize_advantages,
    ppo_actor_loss,
)
from ase_humanoid.agents.update_precision import fused_adam_runs_on, update_autocast_dtype
from ase_humanoid.errors import CheckpointError, ConfigError
from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint


class PPOAgent:
    """PPO agent on one device.

    Args:
        obs_dim, action_dim: sizes of the policy observation and action vectors.
        num_envs: environments stepped together (first dim of every per-step tensor).
        config: PPOConfig (defaults: the ASE release's settings).
        device: torch device for networks and buffers.
    """

    config_class = PPOConfig

    def __init__(self, obs_dim: int, action_dim: int, num_envs: int,
                 config: PPOConfig | None = None, device: str | torch.device = "cpu"):
        self.config = config if config is not None else self.config_class()
        self.config.validate()
        cfg = self.config
        self.obs_dim, self.action_dim, self.num_envs = obs_dim, action_dim, num_envs
        self.device = torch.device(device)
        self.batch_size = cfg.horizon_length * num_envs
        if cfg.minibatch_size > self.batch_size or self.batch_size % cfg.minibatch_size != 0:
            raise ConfigError(
                f"agent config key 'minibatch_size': {cfg.minibatch_size} must divide "
                f"horizon_length * num_envs = {cfg.horizon_length} * {num_envs} = {self.batch_size}")

        seed = cfg.seed if cfg.seed is not None else int(torch.randint(0, 2**62, ()).item())
        self.rng = torch.Generator(device=self.device)
        self.rng.manual_seed(seed)
        # initialise weights from the seed without touching torch's global generator
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._build_networks()
        self.model = nn.ModuleDict(self._modules_to_train()).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.learning_rate,
                                          eps=cfg.adam_eps)
        self.use_reference_update(False)

        self.obs_norm = RunningMeanStd(obs_dim, clip=cfg.obs_clip).to(self.device)
        self.value_norm = RunningMeanStd(1, clip=cfg.value_norm_clip).to(self.device)
        self.reward_norm = RunningMeanStd(1).to(self.device)
        self.rollout = RolloutBuffer(cfg.horizon_length, num_envs, self._rollout_specs(), self.device)
        self.epoch = 0  # completed updates
        self.env_steps = 0  # transitions recorded (num_envs per step)
        self._last_act: dict[str, torch.Tensor] | None = None
        self._pending_next_values: dict[str, Any] | None = None  # see _settle_next_values
        # On an accelerator a critic pass over all envs costs less than the host sync that
        # picking out the rows to evaluate would take every step: there, each step's next values
        # are one pass of their own, as before.
        self.defer_next_values = self.device.type == "cpu"
        # optional callable(parameters) run after backward, before clipping: the runner sets it
        # to all-reduce gradients across torch.distributed ranks
        self.grad_sync = None
        self._rand_action_probs = self._build_rand_action_probs()

    def use_reference_update(self, reference: bool = True) -> None:
        """Switch between the fast update (the default) and the reference one it replaced, kept
        for tests and benchmarks; both learn the same from the same data, to float rounding
        (tests/test_update_equivalence.py).

        Fast: Adam's fused kernel on CPU (one pass over each parameter instead of about ten
        small ops per tensor); backward computes the parameters' gradients only (not those of
        other leaves that require grad, e.g. AMP's demo batch of the gradient penalty, which
        nothing reads); with normalizer_update per_epoch the batch's observations are
        normalised once per update, not once per mini-epoch. Subclasses skip further repeated
        work (AMP: gathers only the discriminator's rows of its inputs; ASE: one discriminator
        trunk pass for both reward heads, and the encoder loss on the discriminator step's trunk
        outputs). Reference: torch's plain Adam, a full backward, each pass on its own.
        """
        self.reference_update = reference
        # the reference update is the float32 one whatever update_precision says
        self.update_dtype = None if reference else update_autocast_dtype(self.config.update_precision,
                                                                         self.device)
        fused = not reference and self.device.type == "cpu" and fused_adam_runs_on("cpu")
        for group in self.optimizer.param_groups:  # read by every step, so a switch applies at once
            group["fused"] = True if fused else None

    # ----------------------------------------------------------------- construction hooks
    def _build_networks(self) -> None:
        cfg = self.config
        self.actor = GaussianActor(self.obs_dim, self.action_dim, cfg.actor_units, cfg.activation,
                                   cfg.init_log_std, cfg.learn_log_std)
        self.critic = ValueNet(self.obs_dim, cfg.critic_units, cfg.activation)

    def _modules_to_train(self) -> dict[str, nn.Module]:
        return {"actor": self.actor, "critic": self.critic}

    def _rollout_specs(self) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
        f, b = torch.float32, torch.bool
        # sampled: the env acted with a sampled action (False: eps-greedy used the mean)
        return {"obs": ((self.obs_dim,), f), "actions": ((self.action_dim,), f),
                "log_prob": ((), f), "values": ((), f), "next_values": ((), f),
                "rewards": ((), f), "terminated": ((), b), "dones": ((), b), "sampled": ((), b)}

    def _build_rand_action_probs(self) -> torch.Tensor:
        """Per-env probability of sampling (vs acting with the mean), `[num_envs]`; all 1
        unless the config enables eps-greedy (an AMP/ASE option)."""
        probs = torch.ones(self.num_envs, device=self.device)
        if getattr(self.config, "enable_eps_greedy", False) and self.num_envs > 1:
            env_ids = torch.arange(self.num_envs, device=self.device, dtype=torch.float32)
            probs = 1.0 - torch.exp(10.0 * (env_ids / (self.num_envs - 1.0) - 1.0))
            probs[0], probs[-1] = 1.0, 0.0
        return probs

    # ----------------------------------------------------------------- policy evaluation
    def _conditioning(self) -> dict[str, torch.Tensor]:
        """Per-env inputs besides the observation used when acting (ASE: latents)."""
        return {}

    def _policy_mu(self, obs_n: torch.Tensor, cond: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.actor(obs_n)

    def _critic_value(self, obs_n: torch.Tensor, cond: dict[str, torch.Tensor]) -> torch.Tensor:
        """Critic output `[n]`, in normalised units when value normalisation is on."""
        return self.critic(obs_n)

    @property
    def log_std(self) -> torch.Tensor:
        return self.actor.log_std

    def _normalize_obs(self, obs: torch.Tensor) -> torch.Tensor:
        return self.obs_norm.normalize(obs) if self.config.normalize_input else obs

    def _update_obs_norm(self, obs: torch.Tensor) -> None:
        """Fold observations `[n, obs_dim]` into the input normaliser's statistics."""
        self.obs_norm.update(obs)

    def _normalize_training_obs(self, obs: torch.Tensor) -> torch.Tensor:
        """`_normalize_obs` of a training minibatch `[n, obs_dim]`; with normalizer_update
        per_minibatch the minibatch joins the statistics first (the release's normaliser in
        training mode)."""
        if self.config.normalize_input and self.config.normalizer_update == "per_minibatch":
            self._update_obs_norm(obs)
        return self._normalize_obs(obs)

    def _denormalize_value(self, v: torch.Tensor) -> torch.Tensor:
        if not self.config.normalize_value:
            return v
        return self.value_norm.denormalize(v.unsqueeze(-1)).squeeze(-1)

    @torch.no_grad()
    def value(self, obs: torch.Tensor, cond: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """V(obs) in reward units, `[n]`."""
        cond = self._conditioning() if cond is None else cond
        return self._denormalize_value(self._critic_value(self._normalize_obs(obs), cond))

    @torch.no_grad()
    def act(self, obs: torch.Tensor, deterministic: bool = False) -> dict[str, torch.Tensor]:
        """Actions for `obs [num_envs, obs_dim]`.

        Returns dict: actions [N, A], mu [N, A], log_prob [N] (of the returned actions),
        value [N] (reward units), sampled [N] bool (False where the action is the mean: always
        when deterministic, else where eps-greedy chose the mean), plus the conditioning (ASE:
        latents [N, latent_dim]).
        The result is cached for the next `record_transition`.
        """
        cond = self._conditioning()
        obs_n = self._normalize_obs(obs)
        mu = self._policy_mu(obs_n, cond)
        log_std = self.log_std.expand_as(mu)
        if deterministic:
            actions = mu
            sampled = torch.zeros(mu.shape[0], dtype=torch.bool, device=mu.device)
        else:
            noise = torch.randn(mu.shape, generator=self.rng, device=mu.device, dtype=mu.dtype)
            actions = mu + noise * torch.exp(log_std)
            sampled = torch.ones(mu.shape[0], dtype=torch.bool, device=mu.device)
            if mu.shape[0] == self.num_envs and bool((self._rand_action_probs < 1.0).any()):
                sampled = torch.bernoulli(self._rand_action_probs, generator=self.rng).bool()
                actions = torch.where(sampled.unsqueeze(-1), actions, mu)
        out = {"actions": actions, "mu": mu, "sampled": sampled,
               "log_prob": gaussian_log_prob(actions, mu, log_std),
               "value": self._denormalize_value(self._critic_value(obs_n, cond)), **cond}
        self._last_act = out
        return out

    # ----------------------------------------------------------------- rollout recording
    @torch.no_grad()
    def record_transition(self, obs: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor,
                          terminated: torch.Tensor, truncated: torch.Tensor, next_obs: torch.Tensor,
                          info: dict[str, Any] | None = None,
                          final_obs: torch.Tensor | None = None) -> None:
        """Store one step of all envs (call right after the `act` that produced `actions`).

        Args:
            obs [N, obs_dim]: observation the actions were chosen from.
            actions [N, A]: the actions sent to the env (`act(...)["actions"]`).
            rewards [N]: task reward of this step.
            terminated [N] bool: episode ended by failure/success (no bootstrap).
            truncated [N] bool: episode cut by the time limit (bootstraps from V(final obs)).
            next_obs [N, obs_dim]: observation returned by env.step (after auto-reset, if the env
                resets done envs itself).
            info: env info dict; `info["final_obs"]` [N, obs_dim] (observation before reset) is
                used when `final_obs` is not given. AMP agents read `info["amp_obs"]`.
            final_obs [N, obs_dim]: observation reached by this step *before* any reset; defaults
                to info["final_obs"], else next_obs (correct when the env does not auto-reset).
        """
        info = info or {}
        if self._last_act is None:
            raise RuntimeError("record_transition() needs a preceding act() for the same step")
        act_out = self._last_act
        if final_obs is None:
            final_obs = info.get("final_obs", next_obs)
        terminated = terminated.to(self.device).bool().reshape(self.num_envs)
        dones = terminated | truncated.to(self.device).bool().reshape(self.num_envs)
        self._settle_next_values(obs, act_out)
        cond = {k: act_out[k] for k in self._conditioning()}
        if self.defer_next_values:
            next_values = torch.zeros_like(act_out["value"])  # rows that go on: filled at the next step
            self._fill_values(next_values, dones, final_obs, cond)
        else:
            next_values = self.value(final_obs, cond)
        self.rollout.add(obs=obs, actions=actions, log_prob=act_out["log_prob"],
                         values=act_out["value"], next_values=next_values,
                         rewards=rewards.reshape(self.num_envs).float(), terminated=terminated,
                         dones=dones, sampled=act_out["sampled"], **self._extra_step_data(act_out, info))
        if self.defer_next_values:
            self._pending_next_values = {"step": self.rollout.step - 1, "rows": ~dones,
                                         "obs": final_obs.to(self.device).clone(),
                                         "cond": {k: v.clone() for k, v in cond.items()}}
        self.env_steps += self.num_envs
        self._after_step(dones)
        self._last_act = None

    # next_values[t], V of the observation step t reached (before any reset), mostly equals
    # values[t + 1]: an env that goes on acts at t + 1 from that very observation with the same
    # conditioning, and act() computes that value anyway. Those rows take it then, instead of a
    # second critic pass per step (about 3 % of an AMP epoch on 2 cores); ended envs, and rows
    # whose observation or conditioning (ASE's latent) changed in between, are evaluated apart.
    def _fill_values(self, out: torch.Tensor, rows: torch.Tensor, obs: torch.Tensor,
                     cond: dict[str, torch.Tensor]) -> None:
        """out[rows] = V(obs[rows], cond[rows]); `out [N]`, `rows [N]` bool."""
        if bool(rows.any()):
            idx = rows.nonzero().squeeze(-1)
            out[idx] = self.value(obs.to(self.device)[idx], {k: v[idx] for k, v in cond.items()})

    def _settle_next_values(self, obs: torch.Tensor | None = None, act_out: dict | None = None) -> None:
        """Fill the previous step's deferred next values: from this step's `act_out["value"]`
        where `obs [N, obs_dim]` and the conditioning are the previous step's final ones, by a
        critic pass on the stored final observation elsewhere (all rows when obs is None)."""
        pending, self._pending_next_values = self._pending_next_values, None
        if pending is None:
            return
        rows = pending["rows"]
        next_values = self.rollout.data["next_values"][pending["step"]]
        if obs is not None:
            same = rows & (obs.to(self.device) == pending["obs"]).all(dim=-1)
            for k, v in pending["cond"].items():
                same &= (act_out[k] == v).reshape(v.shape[0], -1).all(dim=-1)
            next_values.copy_(torch.where(same, act_out["value"], next_values))
            rows = rows & ~same
        self._fill_values(next_values, rows, pending["obs"], pending["cond"])

    def _extra_step_data(self, act_out: dict, info: dict) -> dict[str, torch.Tensor]:
        return {}

    def _after_step(self, dones: torch.Tensor) -> None:
        """Per-step bookkeeping after a transition (ASE: latent schedule)."""

    @property
    def ready_to_update(self) -> bool:
        return self.rollout.full

    # ----------------------------------------------------------------- update
    def _total_rewards(self, stats: dict[str, float]) -> torch.Tensor:
        """Rewards `[T, N]` used for returns (AMP/ASE combine task and learnt rewards)."""
        return self.rollout.data["rewards"]

    def update(self) -> dict[str, float]:
        """PPO update on the recorded rollout; returns averaged statistics."""
        if not self.rollout.full:
            raise RuntimeError(f"update() needs {self.config.horizon_length} recorded steps, "
                               f"have {self.rollout.step}")
        cfg = self.config
        stats: dict[str, float] = {}
        self._settle_next_values()
        self._before_update(stats)
        with torch.no_grad():
            rewards = self._total_rewards(stats)
            stats["reward_mean"] = rewards.mean().item()
            if cfg.normalize_reward:
                self.reward_norm.update(rewards.reshape(-1, 1))
                rewards = rewards / torch.sqrt(self.reward_norm.var + self.reward_norm.eps).float()
            data = self.rollout.data
            advantages, returns = compute_gae(rewards, data["values"], data["next_values"],
                                              data["terminated"], data["dones"], cfg.gamma,
                                              cfg.gae_lambda)
            batch = self._training_batch(advantages, returns)
        stats["returns_mean"] = returns.mean().item()
        stats["advantages_std"] = advantages.std().item()

        sums: dict[str, float] = {}
        num_steps = 0
        num_mb = self.batch_size // cfg.minibatch_size
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.model.train()
        for _ in range(cfg.mini_epochs):
            perm = torch.randperm(self.batch_size, generator=self.rng, device=self.device)
            for i in range(num_mb):
                idx = perm[i * cfg.minibatch_size:(i + 1) * cfg.minibatch_size]
                mb = self._minibatch(batch, idx)
                with self._update_autocast():
                    loss, mb_stats = self._loss(mb)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward(inputs=None if self.reference_update else params)
                if self.grad_sync is not None:
                    self.grad_sync(self.model.parameters())
                if cfg.truncate_grads:
                    mb_stats["grad_norm"] = float(
                        nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_norm))
                self.optimizer.step()
                for k, v in mb_stats.items():
                    sums[k] = sums.get(k, 0.0) + float(v)
                num_steps += 1
        stats.update({k: v / num_steps for k, v in sums.items()})

        with torch.no_grad():
            # per_epoch: new statistics apply from the next rollout on, so log-probs stored during
            # this rollout stay those of the policy that acted (per_minibatch learnt in _loss)
            if cfg.normalize_input and cfg.normalizer_update == "per_epoch":
                self._update_obs_norm(self.rollout.flat("obs"))
            self._after_update(stats)
        self.rollout.reset()
        self.epoch += 1
        stats["epoch"] = float(self.epoch)
        return stats

    def _update_autocast(self) -> torch.autocast:
        """The minibatch loss's precision context (`update_dtype`; a no-op for float32). The
        backward pass runs each op in the dtype its forward used."""
        dtype = self.update_dtype
        return torch.autocast(self.device.type, dtype=dtype or torch.float32, enabled=dtype is not None)

    def _before_update(self, stats: dict[str, float]) -> None:
        """Hook before rewards are computed (AMP: refresh demo samples, normaliser)."""

    def _after_update(self, stats: dict[str, float]) -> None:
        """Hook after the mini-epochs (AMP: replay buffer)."""

    def _training_batch(self, advantages: torch.Tensor, returns: torch.Tensor) -> dict[str, torch.Tensor]:
        """Flattened `[T * N, ...]` tensors the loss needs."""
        cfg = self.config
        values = self.rollout.flat("values")
        returns = returns.reshape(-1)
        if cfg.normalize_value:  # targets come out clamped to +-value_norm_clip
            self.value_norm.update(returns.unsqueeze(-1))
            values = self.value_norm.normalize(values.unsqueeze(-1)).squeeze(-1)
            returns = self.value_norm.normalize(returns.unsqueeze(-1)).squeeze(-1)
        advantages = advantages.reshape(-1)
        # As in the ASE release: samples where eps-greedy acted with the mean (log-prob of the
        # mean itself, ratio <= 1) stay out of the advantage statistics and the policy losses.
        sampled = self.rollout.flat("sampled")
        if cfg.normalize_advantage:
            advantages = normalize_advantages(advantages, sampled)
        batch = {"obs": self.rollout.flat("obs"), "actions": self.rollout.flat("actions"),
                 "old_log_prob": self.rollout.flat("log_prob"), "old_values": values,
                 "returns": returns, "advantages": advantages, "sampled": sampled}
        if cfg.normalizer_update == "per_epoch" and not self.reference_update:
            # the statistics stay fixed until the update ends: normalise every sample once here
            # rather than in each of the mini-epochs' minibatches
            batch["obs_n"] = self._normalize_obs(batch.pop("obs"))
        batch.update(self._extra_batch())
        return batch

    def _extra_batch(self) -> dict[str, torch.Tensor]:
        return {}

    def _minibatch(self, batch: dict[str, torch.Tensor], idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """The rows `idx [m]` of every training batch tensor."""
        return {k: v[idx] for k, v in batch.items()}

    def _loss(self, mb: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """PPO loss of one minibatch and its statistics. Actor, entropy and bounds terms average
        over the samples that acted with a sampled action (`mb["sampled"]`); the critic over all."""
        cfg = self.config
        sampled = mb["sampled"]
        cond = self._batch_conditioning(mb)
        obs_n = mb["obs_n"] if "obs_n" in mb else self._normalize_training_obs(mb["obs"])
        mu = self._policy_mu(obs_n, cond)
        log_std = self.log_std.expand_as(mu)
        log_prob = gaussian_log_prob(mb["actions"], mu, log_std)
        a_loss, clipped = ppo_actor_loss(log_prob, mb["old_log_prob"], mb["advantages"], cfg.e_clip)
        values = self._critic_value(obs_n, cond)
        c_loss = critic_loss(values, mb["old_values"], mb["returns"], cfg.e_clip, cfg.clip_value)
        entropy = (0.5 + 0.5 * math.log(2 * math.pi) + log_std).sum(-1)
        b_loss = bounds_loss(mu, cfg.bounds_soft_limit)
        a_loss, entropy, b_loss = (masked_mean(x, sampled) for x in (a_loss, entropy, b_loss))
        loss = a_loss + cfg.critic_coef * c_loss.mean() - cfg.entropy_coef * entropy + cfg.bounds_loss_coef * b_loss
        with torch.no_grad():
            approx_kl = masked_mean(mb["old_log_prob"] - log_prob, sampled)
            clip_frac = masked_mean(clipped.float(), sampled)
        stats = {"actor_loss": a_loss.item(), "critic_loss": c_loss.mean().item(),
                 "bounds_loss": b_loss.item(), "entropy": entropy.item(),
                 "clip_frac": clip_frac.item(), "approx_kl": approx_kl.item()}
        extra_loss, extra_stats = self._extra_loss(mb, obs_n, mu, cond)
        stats.update(extra_stats)
        return loss + extra_loss, stats

    def _batch_conditioning(self, mb: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {}

    def _extra_loss(self, mb: dict[str, torch.Tensor], obs_n: torch.Tensor, mu: torch.Tensor,
                    cond: dict[str, torch.Tensor]) -> tuple[torch.Tensor | float, dict[str, float]]:
        return 0.0, {}

    # ----------------------------------------------------------------- checkpoints
    def state_dict(self, include_buffers: bool | None = None) -> dict[str, Any]:
        """Everything needed to continue training exactly (except the env and its RNG).

        `include_buffers` (AMP/ASE): store the demo and replay buffers' samples; None follows
        the config's `checkpoint_amp_buffers`. Without them a checkpoint still evaluates and
        fine-tunes, but a resumed run refills its demo buffer instead of continuing exactly.
        """
        self._settle_next_values()  # the stored rollout then holds every recorded step's values
        return {
            "algo": type(self).__name__,
            "config": self.config.to_dict(),
            "dims": {"obs_dim": self.obs_dim, "action_dim": self.action_dim, "num_envs": self.num_envs},
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "obs_norm": self.obs_norm.state_dict(),
            "value_norm": self.value_norm.state_dict(),
            "reward_norm": self.reward_norm.state_dict(),
            "epoch": self.epoch,
            "env_steps": self.env_steps,
            "rng": self.rng.get_state(),
            "rollout_step": self.rollout.step,
            "rollout": {k: v.clone() for k, v in self.rollout.data.items()},
        }

    def load_policy_state_dict(self, state: dict[str, Any]) -> None:
        """Networks and normalisers only: for evaluation, or to start a new run from trained
        weights with any number of envs. `load_state_dict` restores everything."""
        if state.get("algo") != type(self).__name__:
            raise CheckpointError(f"checkpoint holds a {state.get('algo')!r} agent, "
                                  f"not {type(self).__name__}")
        dims = {"obs_dim": self.obs_dim, "action_dim": self.action_dim}
        saved = {k: state["dims"][k] for k in dims}
        if saved != dims:
            raise CheckpointError(f"checkpoint dims {saved} do not match this agent's {dims} "
                                  "(another robot or task?)")
        try:
            self.model.load_state_dict(state["model"])
        except RuntimeError as err:
            raise CheckpointError(f"checkpoint networks do not fit this agent's config: {err}") from err
        self.obs_norm.load_state_dict(state["obs_norm"])
        self.value_norm.load_state_dict(state["value_norm"])
        self.reward_norm.load_state_dict(state["reward_norm"])

    def apply_configured_action_std(self) -> float | None:
        """For a new run from trained weights, after `load_policy_state_dict`: a fixed action std
        (`learn_log_std: false`) is a setting, not a learnt weight, so the config's `init_log_std`
        replaces the copy the checkpoint's networks carry (which would otherwise silently win
        over the key). Returns the checkpoint's log-std where it differed, else None; a learnt
        std stays as trained."""
        log_std = self.log_std
        if self.config.learn_log_std or isinstance(log_std, torch.nn.Parameter):
            return None
        configured = float(self.config.init_log_std)
        if bool((log_std == configured).all()):
            return None
        previous = float(log_std.mean())
        with torch.no_grad():
            log_std.fill_(configured)
        return previous

    def load_state_dict(self, state: dict[str, Any]) -> None:
        dims = {"obs_dim": self.obs_dim, "action_dim": self.action_dim, "num_envs": self.num_envs}
        if state.get("dims") is not None and state["dims"] != dims:
            raise CheckpointError(f"checkpoint dims {state['dims']} do not match this agent's {dims}; "
                                  "resuming needs the same num_envs")
        self.load_policy_state_dict(state)
        self.optimizer.load_state_dict(state["optimizer"])  # its param groups carry their own "fused"
        self.use_reference_update(self.reference_update)
        self.epoch, self.env_steps = state["epoch"], state["env_steps"]
        self.rng.set_state(state["rng"].cpu())
        self.rollout.step = state["rollout_step"]
        for k, v in state["rollout"].items():
            self.rollout.data[k].copy_(v)
        self._last_act = None
        self._pending_next_values = None

    def save(self, path: str | os.PathLike) -> None:
        """Write `state_dict()` atomically (temp file in the same folder, then rename)."""
        save_checkpoint(self.state_dict(), path)

    def load(self, path: str | os.PathLike) -> None:
        state = load_checkpoint(path, map_location=self.device)
        if "agent" in state and "model" not in state:  # a run checkpoint (runner) holds the agent
            state = state["agent"]
        if not isinstance(state, dict) or "model" not in state:
            raise CheckpointError(f"checkpoint file {path} is not an agent checkpoint")
        try:
            self.load_state_dict(state)
        except CheckpointError as err:
            raise CheckpointError(f"{path}: {err}") from err
