"""skrl agents for AMP, ASE pre-training and ASE hierarchical control, on this project's code.

    from ase_humanoid.integrations import SkrlASE
    env = wrap_env(gymnasium.make_vec("ase_humanoid/HumanoidASE-v0", num_envs=64), wrapper="gymnasium")
    agent = SkrlASE(env=env, cfg={"rollouts": 32, "mini_batches": 4, "actor_units": [512, 256]})
    SequentialTrainer(env=env, agents=agent, cfg={"timesteps": 100000}).train()

Each class is a `ProjectAgentAdapter` (integrations/skrl_base.py) around one project agent:
`SkrlAMP` -> `AMPAgent`, `SkrlASE` -> `ASEAgent` (latent-conditioned policy, encoder, diversity
loss, latent schedule), `SkrlHRL` -> `HRLAgent` (latents over a frozen ASE controller, which the
hierarchical env steps). `DEFAULT_CONFIG` is the project config's defaults (the ASE release's).

rofunc's constructor terms, accepted with rofunc's meaning:
  amp_observation_space      one env's AMP observation space (default: the env's); its size must
                             be the env's
  motion_dataset             the demo-sample buffer M: a skrl Memory (memory_size * num_envs) or
                             an int sets `amp_obs_demo_buffer_size`; the samples live in
                             `project_agent.demo_buffer`
  replay_buffer              the replay buffer B of past agent samples, likewise
                             (`amp_replay_buffer_size`, `project_agent.replay_buffer`)
  collect_reference_motions  callable n -> demo AMP observations [n, amp_obs_dim] (default: the
                             env's motion library); `agent.collect_reference_motions(n)` calls it
  task_related_state_size    the trailing task part of the observation (goal), which the
                             low-level controller does not see; checked against the env's
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import torch

from ase_humanoid.agents.amp import AMPAgent
from ase_humanoid.agents.ase import ASEAgent
from ase_humanoid.agents.config import AMPConfig, ASEConfig
from ase_humanoid.agents.hrl import HRLAgent, HRLConfig, HRLEnv, load_llc
from ase_humanoid.errors import ConfigError
from ase_humanoid.integrations.skrl_base import (
    ProjectAgentAdapter,
    buffer_size,
    default_config,
    humanoid_env,
    reference_source,
)
from ase_humanoid.integrations.skrl_models import DiscriminatorView
from ase_humanoid.paths import PROJECT_ROOT

SKRL_AMP_DEFAULT_CONFIG = default_config(AMPConfig)
SKRL_ASE_DEFAULT_CONFIG = default_config(ASEConfig)
SKRL_HRL_DEFAULT_CONFIG = default_config(HRLConfig)


def _task_state_size(given: int | None, env, obs_dim: int, llc_obs_dim: int | None = None) -> int:
    """rofunc's `task_related_state_size`: given, or the env's task observation size (HRL: what
    the LLC does not see), checked against what the env / LLC says."""
    known = getattr(env, "task_obs_size", None) if env is not None else None
    if known is None and llc_obs_dim is not None:
        known = obs_dim - llc_obs_dim
    if given is not None and known is not None and int(given) != int(known):
        raise ConfigError(f"task_related_state_size={given}, but the observation's task part has {known} numbers "
                          f"(observation {obs_dim})")
    return int(given if given is not None else (known or 0))


class _ReferenceMotions:
    """rofunc's `collect_reference_motions(num_samples)` on the agent."""

    _reference: Callable[[int], torch.Tensor] | None = None

    def collect_reference_motions(self, num_samples: int) -> torch.Tensor:
        """Demo AMP observations `[num_samples, amp_obs_dim]` from the motion library (raw: not
        normalised), as the project agent's demo buffer receives them."""
        if self._reference is None:
            raise ConfigError(f"{type(self).__name__} has no reference motions: pass env= or collect_reference_motions=")
        return self._reference(int(num_samples))


class SkrlAMP(_ReferenceMotions, ProjectAgentAdapter):
    """AMP (`agents/amp.py AMPAgent`) as a skrl agent; args: ProjectAgentAdapter's plus rofunc's
    (module docstring). Reads `infos["amp_obs"]` each step."""

    DEFAULT_CONFIG = SKRL_AMP_DEFAULT_CONFIG
    config_class = AMPConfig
    ALGO = "amp"
    project_class = AMPAgent

    def _apply_extra(self, merged: dict[str, Any], extra: dict[str, Any], given: set[str]) -> None:
        extra = dict(extra)
        self.amp_observation_space = extra.pop("amp_observation_space", None)
        self.motion_dataset = extra.pop("motion_dataset", None)
        self.replay_buffer = extra.pop("replay_buffer", None)
        collect = extra.pop("collect_reference_motions", None)
        self._task_state_given = extra.pop("task_related_state_size", None)
        super()._apply_extra(merged, extra, given)
        env = humanoid_env(self.env)
        self._collect_given = collect is not None
        self._reference = reference_source(collect, env)
        for key, value, name in (("amp_obs_demo_buffer_size", self.motion_dataset, "motion_dataset"),
                                 ("amp_replay_buffer_size", self.replay_buffer, "replay_buffer")):
            size = buffer_size(value, name)
            if size is not None:
                merged[key] = size
        env_space = getattr(env, "amp_observation_space", None)
        if self.amp_observation_space is None:
            self.amp_observation_space = env_space
        if self.amp_observation_space is None:
            raise ConfigError(f"{type(self).__name__} needs amp_observation_space (or env=)")
        if env_space is not None and env_space.shape[-1] != self.amp_observation_space.shape[-1]:
            raise ConfigError(f"amp_observation_space {self.amp_observation_space.shape} differs from the env's "
                              f"{env_space.shape}")

    def _project_kwargs(self, config, env) -> dict[str, Any]:
        # with the env's own sampler the demo buffer is checkpointed as clip keys, as train.py does
        use_keys = not self._collect_given and env is not None and hasattr(env, "sample_amp_obs_demo_keys")
        return {"demo_keys": env if use_keys else None}

    def _build_project_agent(self, config, obs_dim, action_dim, num_envs, device, env):
        self.task_related_state_size = _task_state_size(self._task_state_given, env, obs_dim)
        return self.project_class(obs_dim, action_dim, self.amp_observation_space.shape[-1], num_envs,
                                  self._reference, config, device, **self._project_kwargs(config, env))

    def _model_views(self, observation_space, action_space):
        return {**super()._model_views(observation_space, action_space),
                "discriminator": DiscriminatorView(self.project_agent, self.amp_observation_space)}

    def _memory_tensors(self):
        return {"amp_observations": self.amp_observation_space}

    def _memory_extras(self, act_out, infos):
        return {"amp_observations": infos["amp_obs"]}


class SkrlASE(SkrlAMP):
    """ASE low-level pre-training (`agents/ase.py ASEAgent`) as a skrl agent. The per-env latents,
    their hold schedule and resampling at episode ends are the project agent's
    (`project_agent.latents [num_envs, latent_dim]`; `project_agent.set_latents(z)` fixes them);
    `act` returns them in its outputs (`outputs["latents"]`). `save_project_checkpoint(path)`
    writes a controller train.py takes as `llc_checkpoint=path`."""

    DEFAULT_CONFIG = SKRL_ASE_DEFAULT_CONFIG
    config_class = ASEConfig
    ALGO = "ase"
    project_class = ASEAgent

    def _project_kwargs(self, config, env):
        kwargs = super()._project_kwargs(config, env)
        if getattr(env, "uses_getup_reward", False) and config.task_reward_w <= 0:  # as train.py refuses it
            raise ConfigError("the env's getup reward is weighed by task_reward_w, which is "
                              f"{config.task_reward_w}: set it above 0 (2.0 in docs/research-notes.md)")
        if config.symmetric_actor:
            if env is None or not hasattr(env, "mirror_maps"):
                raise ConfigError("symmetric_actor needs the env's mirror maps: pass env=")
            kwargs["mirror_maps"] = env.mirror_maps()
        return kwargs

    def _memory_tensors(self):
        return {**super()._memory_tensors(), "latents": self.project_agent.latent_dim}

    def _memory_extras(self, act_out, infos):
        return {**super()._memory_extras(act_out, infos), "latents": act_out["latents"]}


def _checkpoint_path(path: str | Path) -> Path:
    """A controller path as train.py reads it: as given where it exists, else under the project root
    (so "pretrained/ase_llc_amp_humanoid_walk.pt" works from any folder)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() or p.exists() else PROJECT_ROOT / p


class SkrlHRL(_ReferenceMotions, ProjectAgentAdapter):
    """The hierarchical agent (`agents/hrl.py HRLAgent`) as a skrl agent: a PPO policy whose
    64-d actions are latents of a frozen ASE low-level controller.

    The controller runs inside the env, as in train.py: build the env hierarchical
    (`gymnasium.make_vec("ase_humanoid/HumanoidHeading-v0", num_envs=N[, llc_checkpoint=...])`;
    without llc_checkpoint the robot's shipped controller from pretrained/ is used), so one skrl
    timestep is `llc_steps` control steps and `infos["style_reward"]` holds the controller's
    style reward, weighed with the task reward by `task_reward_w` / `disc_reward_w`.

    Extra args: `llc_checkpoint` (an ASE run checkpoint, a shipped controller or one written by
    `SkrlASE.save_project_checkpoint`): with env= it must be the env's own controller; without
    env= it is loaded here (then the env must step it itself). `task_related_state_size` as rofunc.
    """

    DEFAULT_CONFIG = SKRL_HRL_DEFAULT_CONFIG
    config_class = HRLConfig
    ALGO = "hrl"

    def _apply_extra(self, merged, extra, given):
        extra = dict(extra)
        self.llc_checkpoint = extra.pop("llc_checkpoint", None)
        self._task_state_given = extra.pop("task_related_state_size", None)
        collect = extra.pop("collect_reference_motions", None)
        # rofunc's AMP terms: the style reward is the frozen controller's discriminator, which
        # needs no demo or replay samples; the buffers are accepted and left unused
        self.amp_observation_space = extra.pop("amp_observation_space", None)
        self.motion_dataset = extra.pop("motion_dataset", None)
        self.replay_buffer = extra.pop("replay_buffer", None)
        super()._apply_extra(merged, extra, given)
        env = humanoid_env(self.env)
        if env is not None and not isinstance(env, HRLEnv):
            raise ConfigError(f"{type(env).__name__} is not hierarchical: build it with gymnasium.make_vec("
                              "'ase_humanoid/<Task>-v0', num_envs=N, llc_checkpoint=<ASE controller>) (hierarchical "
                              "tasks use the shipped controller when none is named)")
        if env is not None and "llc_steps" not in given:
            merged["llc_steps"] = env.llc_steps  # the env steps its controller this many times
        self._reference = collect or getattr(env, "fetch_amp_obs_demo", None)

    def _build_project_agent(self, config, obs_dim, action_dim, num_envs, device, env):
        if env is not None:
            if self.llc_checkpoint is not None:
                wanted, own = _checkpoint_path(self.llc_checkpoint).resolve(), Path(env.llc.source)
                if not own.is_absolute():
                    own = _checkpoint_path(own)
                if wanted != own.resolve():
                    raise ConfigError(f"llc_checkpoint {self.llc_checkpoint} is not the controller the env steps "
                                      f"({env.llc.source}); build the env with llc_checkpoint=, or leave it out here")
            agent = HRLAgent.from_llc_checkpoint(None, env, config, device)
        else:
            if self.llc_checkpoint is None:
                raise ConfigError("SkrlHRL needs env= (a hierarchical env) or llc_checkpoint=<ASE controller>")
            agent = HRLAgent(obs_dim, num_envs, load_llc(_checkpoint_path(self.llc_checkpoint), device), config, device)
        if action_dim != agent.llc.latent_dim:
            raise ConfigError(f"the action space has {action_dim} numbers, the controller's latents {agent.llc.latent_dim}: "
                              "step a hierarchical env")
        self.task_related_state_size = _task_state_size(self._task_state_given, env, obs_dim, agent.llc.obs_dim)
        space = self.amp_observation_space
        if space is not None and space.shape[-1] != agent.llc.amp_obs_dim:
            raise ConfigError(f"amp_observation_space {space.shape} differs from the controller's AMP observation "
                              f"({agent.llc.amp_obs_dim} numbers)")
        return agent

    def _run_config_extras(self) -> dict[str, Any]:
        return {"llc_checkpoint": self.llc.source}

    @property
    def llc(self):
        """The frozen low-level controller (`agents/hrl.py LowLevelController`)."""
        return self.project_agent.llc

    def _memory_tensors(self):
        return {"style_rewards": 1}

    def _memory_extras(self, act_out, infos):
        return {"style_rewards": infos["style_reward"].reshape(-1, 1)}
