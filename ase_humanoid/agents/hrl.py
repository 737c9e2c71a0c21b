"""Hierarchical control on a pretrained ASE low-level controller (LLC).

A high-level policy (PPO, MLP [1024, 512], tanh on the action mean, fixed log-std -2.3) picks a
64-d action every `llc_steps` (5) control steps; clamped to [-1, 1] and normalised to unit length
(as in the ASE release) it is the latent z of the frozen LLC, which then acts deterministically
(its action mean) for those control steps.

Pieces, so that the ordinary `Runner` trains it unchanged:
  `LowLevelController`  the frozen ASE actor + discriminator with their normalisers, read from an
                        ASE run checkpoint (`load_llc`)
  `HRLEnv`              the task env stepped hierarchically (`make_hrl_env(env, llc)`): one
                        high-level step = `llc_steps` low-level steps; reports the task reward
                        and the LLC's style reward averaged over them
  `HRLAgent`            PPO on the hierarchical env; reward = task_reward_w * task (0.9)
                        + disc_reward_w * style (0.1)

The LLC travels inside every HRL checkpoint (`state_dict()["llc"]`), so `test=true
checkpoint=<hrl run>` needs no `llc_checkpoint`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ase_humanoid.agents.amp import style_reward
from ase_humanoid.agents.config import ASEConfig, PPOConfig, _check, from_dict
from ase_humanoid.agents.networks import Discriminator, GaussianActor, LatentActor, ValueNet
from ase_humanoid.agents.normalizer import RunningMeanStd
from ase_humanoid.agents.ppo import PPOAgent
from ase_humanoid.errors import CheckpointError, ConfigError
from ase_humanoid.robots.description import load_robot
from ase_humanoid.robots.mirror import policy_obs_mirror, robot_mirror
from ase_humanoid.utils.checkpoint import load_checkpoint


@dataclass
class HRLConfig(PPOConfig):
    """High-level policy settings (PPO) plus the hierarchy's."""

    actor_units: list[int] = field(default_factory=lambda: [1024, 512])
    critic_units: list[int] = field(default_factory=lambda: [1024, 512])
    init_log_std: float = -2.3
    learn_log_std: bool = False
    llc_steps: int = 5  # low-level control steps per high-level action
    task_reward_w: float = 0.9
    disc_reward_w: float = 0.1  # weight of the LLC discriminator's style reward

    def validate(self) -> None:
        super().validate()
        _check(self.llc_steps >= 1, "llc_steps", f"must be >= 1, got {self.llc_steps}")


# ---------------------------------------------------------------------------- low-level controller

class LowLevelController(nn.Module):
    """Frozen ASE policy and discriminator with the normalisers they were trained with.

    `actions(obs [n, obs_dim], z [n, latent_dim]) -> [n, action_dim]` (deterministic mean), or in
    two parts for a latent held over several steps: `style(z) -> [n, style_dim]` once, then
    `actions_for_style(obs, style)` per step (the same numbers);
    `calc_style_reward(amp_obs [n, amp_obs_dim]) -> [n]` (unweighted, the LLC's own scale).
    All run under `torch.inference_mode` (frozen networks, no autograd bookkeeping).
    """

    def __init__(self, ase_config: ASEConfig, obs_dim: int, action_dim: int, amp_obs_dim: int,
                 robot_name: str | None, source: str = "<memory>"):
        super().__init__()
        cfg = ase_config
        self.ase_config = cfg
        self.obs_dim, self.action_dim, self.amp_obs_dim = obs_dim, action_dim, amp_obs_dim
        self.latent_dim = cfg.latent_dim
        self.robot_name = robot_name
        self.source = source
        self.actor = LatentActor(obs_dim, cfg.latent_dim, action_dim, cfg.actor_units, cfg.style_units,
                                 cfg.latent_dim, cfg.activation, cfg.style_init_scale, cfg.init_log_std,
                                 cfg.learn_log_std)
        self.disc = Discriminator(amp_obs_dim, cfg.disc_units, cfg.activation, cfg.disc_logit_init_scale,
                                  enc_dim=cfg.latent_dim, enc_init_scale=cfg.enc_init_scale)
        self.obs_norm = RunningMeanStd(obs_dim, clip=cfg.obs_clip)
        self.amp_norm = RunningMeanStd(amp_obs_dim, clip=cfg.obs_clip)
        if cfg.symmetric_actor:
            self.actor.make_symmetric(*_mirrors_of(robot_name, obs_dim, source))
        self.requires_grad_(False)
        self.eval()

    @torch.inference_mode()
    def actions(self, obs: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return self.actions_for_style(obs, self.style(z))

    @torch.inference_mode()
    def style(self, z: torch.Tensor) -> torch.Tensor:
        """The actor's style embedding `[n, style_dim]` of unit latents `z [n, latent_dim]`."""
        return self.actor.style(z)

    @torch.inference_mode()
    def actions_for_style(self, obs: torch.Tensor, style: torch.Tensor) -> torch.Tensor:
        """Deterministic actions `[n, action_dim]` for `obs [n, obs_dim]` and `style = style(z)`."""
        obs_n = self.obs_norm.normalize(obs) if self.ase_config.normalize_input else obs
        return self.actor.forward_style(obs_n, style)

    @torch.inference_mode()
    def calc_style_reward(self, amp_obs: torch.Tensor) -> torch.Tensor:
        amp_n = self.amp_norm.normalize(amp_obs) if self.ase_config.normalize_amp_input else amp_obs
        return style_reward(self.disc.logit(amp_n), self.ase_config.disc_reward_scale)

    def export(self) -> dict[str, Any]:
        """Everything `from_export` needs (what HRL checkpoints carry)."""
        return {"ase_config": self.ase_config.to_dict(), "robot": self.robot_name,
                "dims": {"obs_dim": self.obs_dim, "action_dim": self.action_dim,
                         "amp_obs_dim": self.amp_obs_dim},
                "weights": {k: v.clone() for k, v in self.state_dict().items()}}

    @classmethod
    def from_export(cls, state: dict[str, Any], source: str = "<memory>",
                    device: str | torch.device = "cpu") -> "LowLevelController":
        llc = cls(from_dict(ASEConfig, state["ase_config"]), robot_name=state["robot"], source=source,
                  **state["dims"])
        llc.load_state_dict(state["weights"])
        return llc.to(device)

    @classmethod
    def from_ase_state(cls, agent_state: dict[str, Any], robot_name: str | None, source: str,
                       device: str | torch.device = "cpu") -> "LowLevelController":
        """From `ASEAgent.state_dict()`: actor and discriminator weights plus normalisers."""
        if agent_state.get("algo") != "ASEAgent":
            raise CheckpointError(f"{source}: holds a {agent_state.get('algo')!r} agent; the low-level "
                                  "controller must be an ASE checkpoint (python train.py task=HumanoidASE)")
        config = from_dict(ASEConfig, {k: v for k, v in agent_state["config"].items()})
        dims = agent_state["dims"]
        llc = cls(config, dims["obs_dim"], dims["action_dim"], agent_state["amp_obs_dim"], robot_name, source)
        model = agent_state["model"]
        try:
            llc.actor.load_state_dict({k[len("actor."):]: v for k, v in model.items() if k.startswith("actor.")})
            llc.disc.load_state_dict({k[len("disc."):]: v for k, v in model.items() if k.startswith("disc.")})
        except RuntimeError as err:
            raise CheckpointError(f"{source}: ASE networks do not match its config: {err}") from err
        llc.obs_norm.load_state_dict(agent_state["obs_norm"])
        llc.amp_norm.load_state_dict(agent_state["amp_norm"])
        return llc.to(device)


def _mirrors_of(robot_name: str | None, obs_dim: int, source: str):
    """The observation and action mirrors a symmetric LLC acts with, from its robot."""
    if robot_name is None:
        raise CheckpointError(f"{source}: a symmetric actor needs its robot's mirror, but the checkpoint names no robot")
    mirror = robot_mirror(load_robot(robot_name))
    obs_mirror = policy_obs_mirror(mirror)
    if len(obs_mirror) != obs_dim:
        raise CheckpointError(f"{source}: a symmetric actor's observation must be the humanoid's own "
                              f"({len(obs_mirror)} numbers for {robot_name}), got {obs_dim}")
    return obs_mirror, mirror.dofs


def _robot_name(run_config: dict[str, Any] | None) -> str | None:
    robot = (run_config or {}).get("robot")
    if isinstance(robot, dict):
        return robot.get("name")
    return robot


def load_llc(path: str | Path | None, device: str | torch.device = "cpu") -> LowLevelController:
    """The LLC from an ASE run checkpoint (`{"agent": ASEAgent state, "config": run config}`) or
    from an HRL run checkpoint (which embeds its LLC)."""
    return llc_from_checkpoint(read_llc_checkpoint(path, device), path, device)


def read_llc_checkpoint(path: str | Path | None, device: str | torch.device = "cpu") -> dict[str, Any]:
    """The checkpoint `load_llc` reads, for callers that also need its run config."""
    if path is None:
        raise ConfigError("hierarchical tasks need llc_checkpoint=<ASE checkpoint> (a HumanoidASE run's "
                          "latest.pt or run folder), or checkpoint=<HRL checkpoint> to evaluate")
    return load_checkpoint(path, map_location=device)


def llc_from_checkpoint(state: dict[str, Any], path: str | Path, device: str | torch.device = "cpu") -> LowLevelController:
    """The LLC in a checkpoint already read from `path` (see `load_llc`)."""
    agent_state = state.get("agent")
    if not isinstance(agent_state, dict):
        raise CheckpointError(f"checkpoint '{path}' has no 'agent' entry; is it a run checkpoint?")
    if agent_state.get("algo") == "HRLAgent":
        return LowLevelController.from_export(agent_state["llc"], source=str(path), device=device)
    return LowLevelController.from_ase_state(agent_state, _robot_name(state.get("config")), str(path), device)


def check_llc_fits(llc: LowLevelController, env) -> None:
    """CheckpointError unless the LLC was trained on `env`'s robot and observation layout."""
    robot = env.robot.name
    if llc.robot_name is not None and llc.robot_name != robot:
        raise CheckpointError(f"low-level controller {llc.source} was trained on robot "
                              f"'{llc.robot_name}', but the task uses robot '{robot}'; pass robot="
                              f"{llc.robot_name} or an LLC trained on {robot}")
    humanoid_obs = env.num_obs - env.task_obs_size
    amp_obs = env.amp_observation_space.shape[-1]
    expected = {"obs_dim": humanoid_obs, "action_dim": env.num_actions, "amp_obs_dim": amp_obs}
    actual = {"obs_dim": llc.obs_dim, "action_dim": llc.action_dim, "amp_obs_dim": llc.amp_obs_dim}
    if expected != actual:
        raise CheckpointError(f"low-level controller {llc.source} has sizes {actual}, but robot '{robot}' "
                              f"in this task needs {expected} (different robot, key bodies or AMP "
                              "history length?)")


# ---------------------------------------------------------------------------- hierarchical env

def latent_from_action(actions: torch.Tensor) -> torch.Tensor:
    """High-level actions `[N, latent_dim]` -> unit latents: clamped to [-1, 1] first, as the
    release does, so sampling noise beyond the tanh range cannot outweigh the other components."""
    return F.normalize(torch.clamp(actions, -1.0, 1.0), dim=-1)


class HRLEnv:
    """Mixin that turns a task env into its hierarchical version (see `make_hrl_env`):
    `step(hl_actions [N, latent_dim])` runs `llc_steps` control steps of the task env with
    z = `latent_from_action(hl_actions)` and the LLC's deterministic actions.

    Returns obs `[N, num_obs]` (the task env's), reward `[N]` = task reward averaged over the
    low-level steps of the current episode, terminated / truncated `[N]` (a low-level step ended
    the episode), and info with `style_reward [N]` (the LLC discriminator's reward of the same
    steps, averaged), `final_obs` (the observation that ended the episode for envs that finished,
    else the current one), `amp_obs` of the last low-level step, and `episode` {"return",
    "length"} `[k]` of the k finished episodes in env order (task-reward sums and control steps).
    An env whose episode ends at low-level step k < llc_steps is reset at once and, since all
    worlds advance together, steps on with the old latent for the rest of the high-level step;
    those steps are then discarded (`restart_episodes`: reset again, nothing of them recorded),
    so every episode starts at a high-level step with a latent chosen from its first
    observation, as in the release (which holds the ended episode until the high-level step ends).

    Per high-level step the LLC computes the latent's style embedding once (the latent holds for
    all low-level steps), its actor once per control step, and its discriminator once, on the
    AMP observations of all low-level steps together (`mean_style_reward`): the numbers of the
    per-step computation, in fewer and larger batches.

    Being the task env itself (not a wrapper object), its whole state -- episode counters, goals,
    AMP history, physics -- stays in one object for checkpoints.
    """

    llc: LowLevelController
    llc_steps: int

    def attach_llc(self, llc: LowLevelController, llc_steps: int) -> None:
        if llc_steps < 1:
            raise ConfigError(f"agent config key 'llc_steps': must be >= 1, got {llc_steps}")
        self.llc, self.llc_steps = llc.to(self.device), int(llc_steps)
        self.low_action_space = self.action_space
        self.action_space = gymnasium.spaces.Box(-np.inf, np.inf, (llc.latent_dim,), np.float32)
        self.hl_obs = torch.zeros(self.num_envs, self.num_obs, device=self.device)
        self.hl_episode_return = torch.zeros(self.num_envs, device=self.device)

    @property
    def control_freq(self) -> float:
        """High-level decisions per second (6 Hz at the default 30 Hz / 5)."""
        return 1.0 / (self.dt * self.llc_steps)

    def reset(self) -> torch.Tensor:
        self.hl_obs = super().reset()
        self.hl_episode_return.zero_()
        return self.hl_obs

    def step(self, actions: torch.Tensor):
        if self._needs_reset:
            self.reset()
        z = latent_from_action(torch.as_tensor(actions, device=self.device, dtype=torch.float32))
        style = self.llc.style(z)  # [N, style_dim] (2x: symmetric LLC), once: z holds for all low-level steps
        n, dev = self.num_envs, self.device
        task_sum = torch.zeros(n, device=dev)
        ended = torch.zeros(n, dtype=torch.bool, device=dev)
        terminated_any, truncated_any = ended.clone(), ended.clone()
        final_obs = self.hl_obs
        end_length = torch.zeros(n, dtype=torch.long, device=dev)
        amp_obs, in_episode = [], []  # per low-level step: [N, amp_obs_dim], [N] bool
        for _ in range(self.llc_steps):
            low_actions = self.llc.actions_for_style(self.hl_obs[:, :self.llc.obs_dim], style)
            obs, reward, terminated, truncated, info = super().step(low_actions)
            active = ~ended  # the step belongs to the episode the high-level step began in
            task_sum += reward * active
            amp_obs.append(info["amp_obs"])
            in_episode.append(active)
            done_now = (terminated | truncated) & active
            if bool(done_now.any()):
                final_obs = torch.where(done_now.unsqueeze(-1), info["final_obs"], final_obs)
                lengths = torch.zeros(n, dtype=torch.long, device=dev)
                lengths[terminated | truncated] = info["episode"]["length"]  # [k] in env order
                end_length = torch.where(done_now, lengths, end_length)
                terminated_any |= terminated & active
                truncated_any |= truncated & active
                ended |= done_now
            self.hl_obs = obs
        # Episodes that ended before the last low-level step began a new episode under the old
        # latent: start them again here, at the high-level step, from a fresh reset.
        restart = (ended & (self.episode_steps > 0)).nonzero(as_tuple=False).flatten()
        if restart.numel():
            self.hl_obs = self.hl_obs.index_copy(0, restart, self.restart_episodes(restart))
        counted = torch.stack(in_episode).float()  # [llc_steps, N]
        task_reward = task_sum / counted.sum(0)
        self.hl_episode_return += task_reward
        info = {"style_reward": self.mean_style_reward(amp_obs, counted),
                "final_obs": torch.where(ended.unsqueeze(-1), final_obs, self.hl_obs),
                "amp_obs": amp_obs[-1], "terminate": terminated_any,
                "episode": {"return": self.hl_episode_return[ended].clone(), "length": end_length[ended]}}
        self.hl_episode_return[ended] = 0.0
        return self.hl_obs, task_reward, terminated_any, truncated_any & ~terminated_any, info

    def mean_style_reward(self, amp_obs: list[torch.Tensor], counted: torch.Tensor) -> torch.Tensor:
        """The LLC discriminator's style reward `[N]` of one high-level step: the mean over its
        low-level steps that belong to the episode (`counted [llc_steps, N]`, 1 or 0) of the reward
        of each step's AMP observation (`amp_obs`: llc_steps tensors `[N, amp_obs_dim]`), all
        steps rated in one batch `[llc_steps * N, amp_obs_dim]`."""
        rewards = self.llc.calc_style_reward(torch.cat(amp_obs)).view(len(amp_obs), self.num_envs)
        return (rewards * counted).sum(0) / counted.sum(0)


_HRL_CLASSES: dict[type, type] = {}


def hrl_env_class(task_class: type) -> type:
    """`<Task>HRL`: the task env class with `HRLEnv` stepping on top (one class per task)."""
    if task_class not in _HRL_CLASSES:
        _HRL_CLASSES[task_class] = type(f"{task_class.__name__}HRL", (HRLEnv, task_class),
                                        {"__doc__": f"{task_class.__name__} driven through a frozen ASE "
                                                    "controller (see agents/hrl.py HRLEnv)."})
    return _HRL_CLASSES[task_class]


def make_hrl_env(env, llc: LowLevelController, llc_steps: int = 5):
    """Turn task env `env` (built by `make_env`) into its hierarchical version in place and
    return it: same object and state, `step` now takes latent actions (see `HRLEnv`)."""
    if isinstance(env, HRLEnv):
        raise ConfigError(f"{type(env).__name__} is already hierarchical")
    check_llc_fits(llc, env)  # before changing anything
    env.__class__ = hrl_env_class(type(env))
    env.attach_llc(llc, llc_steps)
    return env


# ---------------------------------------------------------------------------- high-level agent

class TanhGaussianActor(GaussianActor):
    """Gaussian actor whose mean is squashed by tanh: `forward(obs [n, d]) -> [n, A]` in (-1, 1)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(super().forward(obs))


class HRLAgent(PPOAgent):
    """PPO high-level policy over a frozen LLC (see module docstring).

    `HRLAgent(obs_dim, num_envs, llc, config, device)`; the action size is `llc.latent_dim`.
    `record_transition` reads `info["style_reward"] [N]` (as `HRLEnv.step` returns it).
    """

    config_class = HRLConfig

    def __init__(self, obs_dim: int, num_envs: int, llc: LowLevelController,
                 config: HRLConfig | None = None, device: str | torch.device = "cpu"):
        self.llc = llc
        self.env: HRLEnv | None = None
        super().__init__(obs_dim, llc.latent_dim, num_envs, config, device)

    @classmethod
    def from_llc_checkpoint(cls, path: str | Path | None, env, config: HRLConfig | None = None,
                            device: str | torch.device = "cpu") -> "HRLAgent":
        """Agent for task `env`; a plain task env is made hierarchical in place (`make_hrl_env`,
        also in `agent.env`) with the LLC read from `path`; an `HRLEnv` keeps its LLC."""
        config = config if config is not None else HRLConfig()
        if not isinstance(env, HRLEnv):
            env = make_hrl_env(env, load_llc(path, env.device), config.llc_steps)
        elif env.llc_steps != config.llc_steps:
            raise ConfigError(f"agent config key 'llc_steps': {config.llc_steps} differs from the "
                              f"hierarchical env's {env.llc_steps}")
        agent = cls(env.num_obs, env.num_envs, env.llc, config, device)
        agent.env = env
        return agent

    def _build_networks(self) -> None:
        cfg = self.config
        self.critic = ValueNet(self.obs_dim, cfg.critic_units, cfg.activation)
        self.actor = TanhGaussianActor(self.obs_dim, self.action_dim, cfg.actor_units, cfg.activation,
                                       cfg.init_log_std, cfg.learn_log_std)

    def _rollout_specs(self):
        return {**super()._rollout_specs(), "style_rewards": ((), torch.float32)}

    def _extra_step_data(self, act_out: dict, info: dict) -> dict[str, torch.Tensor]:
        if "style_reward" not in info:
            raise KeyError("HRLAgent needs info['style_reward'] [num_envs] (step an HRLEnv)")
        return {**super()._extra_step_data(act_out, info), "style_rewards": info["style_reward"]}

    def _total_rewards(self, stats: dict[str, float]) -> torch.Tensor:
        task, style = self.rollout.data["rewards"], self.rollout.data["style_rewards"]
        stats["task_reward_mean"] = task.mean().item()
        stats["disc_reward_mean"] = style.mean().item()
        return self.config.task_reward_w * task + self.config.disc_reward_w * style

    def state_dict(self, *args, **kwargs) -> dict[str, Any]:
        """PPO's state plus the frozen LLC (so the checkpoint evaluates on its own)."""
        return {**super().state_dict(*args, **kwargs), "llc": self.llc.export()}
