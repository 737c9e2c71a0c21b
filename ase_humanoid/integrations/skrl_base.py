"""The skrl `Agent` adapter shared by SkrlAMP, SkrlASE and SkrlHRL (integrations/skrl_agents.py).

An adapter owns one project agent (`self.project_agent`: AMPAgent, ASEAgent or HRLAgent) and
turns skrl's calls into its calls:

  skrl (trainer -> agent)                      project agent
  __init__(models, memory, ..., cfg)           <Agent>(obs_dim, action_dim, ..., config)
  act(observations, states, timestep=...)      act(obs) -> actions, mean, log-prob, value, latents
  record_transition(..., infos, ...)           record_transition(obs, actions, reward, terminated,
                                                 truncated, next_obs, infos)  (reads final_obs,
                                                 amp_obs, style_reward from the env's info)
  pre_interaction(...)                         env.set_training_epoch(epoch) before each rollout
  post_interaction(...) -> _update(...)        update() once horizon_length steps are recorded
  checkpoint_modules / track_data              views of its networks + its whole state / its stats

What skrl's memory cannot hold for the update (next values of the time-out bootstrap, which
actions were sampled under eps-greedy, latents, AMP observations) lives in the project agent's
own rollout buffer; the AMP demo samples and the replay buffer are its `demo_buffer` and
`replay_buffer`. A skrl `memory`, if given, sets the rollout size (memory_size = horizon_length,
num_envs) and receives a copy of every transition under skrl's tensor names (observations,
actions, rewards, terminated, truncated, log_prob, values, plus amp_observations / latents /
style_rewards), for inspection; the update never reads it.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path
from typing import Any, Callable

import gymnasium
import torch

from ase_humanoid.agents.config import from_dict
from ase_humanoid.envs.gym_vector import HumanoidVectorEnv
from ase_humanoid.errors import ConfigError, TrainingError
from ase_humanoid.integrations import SKRL_MISSING
from ase_humanoid.integrations.skrl_models import PolicyView, ProjectState, ValueView
from ase_humanoid.utils.checkpoint import save_checkpoint

try:
    from skrl.agents.torch import Agent, AgentCfg, ExperimentCfg
    from skrl.envs.wrappers.torch.base import Wrapper
    from skrl.utils import ScopedTimer
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(SKRL_MISSING) from err

# skrl's names for the project config keys they mean (the left names are accepted in cfg).
SKRL_KEY_NAMES = {
    "rollouts": "horizon_length",
    "learning_epochs": "mini_epochs",
    "discount_factor": "gamma",
    "lambda": "gae_lambda",
    "ratio_clip": "e_clip",
    "value_loss_scale": "critic_coef",
    "entropy_loss_scale": "entropy_coef",
    "task_reward_weight": "task_reward_w",
    "style_reward_weight": "disc_reward_w",
    "discriminator_loss_scale": "disc_coef",
    "discriminator_batch_size": "amp_minibatch_size",
    "discriminator_logit_regularization_scale": "disc_logit_reg",
    "discriminator_gradient_penalty_scale": "disc_grad_penalty",
    "discriminator_weight_decay_scale": "disc_weight_decay",
}

# project statistic -> skrl's TensorBoard tag where skrl has one
_TRACK_TAGS = {"actor_loss": "Loss / Policy loss", "critic_loss": "Loss / Value loss",
               "disc_loss": "Loss / Discriminator loss",
               "enc_loss": "Loss / Encoder loss", "diversity_loss": "Loss / Diversity loss"}


def default_config(config_class: type, **overrides) -> dict[str, Any]:
    """An adapter's default cfg dict: every key of the project config `config_class` (its
    defaults: the ASE release's settings), `minibatch_size: auto`, skrl's `experiment` block."""
    cfg = config_class().to_dict()
    cfg.update({"minibatch_size": "auto", "experiment": dataclasses.asdict(ExperimentCfg())}, **overrides)
    return cfg


@dataclasses.dataclass(kw_only=True)
class ProjectAgentCfg(AgentCfg):
    """What skrl's base Agent keeps as `agent.cfg`: skrl's experiment block plus the resolved
    project agent config (`agent`, the dataclass's fields as a dict)."""

    agent: dict = dataclasses.field(default_factory=dict)


def humanoid_env(env):
    """The project's humanoid env inside `env` (a skrl wrapper, a HumanoidVectorEnv or the env
    itself); None for None."""
    if isinstance(env, Wrapper):
        env = env.unwrapped  # skrl's wrapper forwards to the gymnasium env's own `unwrapped`
    if isinstance(env, HumanoidVectorEnv):
        env = env.env
    return env


def resolve_minibatch_size(value, batch: int) -> int:
    """`auto` (8 minibatches, as train.py) or `batch/K` -> batch // K (the whole batch when K does not
    divide it); an int stays as given."""
    if value == "auto":
        value = "batch/8"
    if isinstance(value, str):
        prefix, _, count = value.partition("/")
        if prefix.strip() != "batch" or not count.strip().isdigit() or int(count) < 1:
            raise ConfigError(f"cfg key 'minibatch_size': '{value}' is not a number, 'auto' or 'batch/K'")
        return batch // int(count) if batch % int(count) == 0 else batch
    return value


def merge_config(defaults: dict[str, Any], cfg: dict[str, Any] | None) -> dict[str, Any]:
    """`defaults` updated by `cfg` (skrl's names translated, `mini_batches: K` as `batch/K`,
    the `experiment` block merged key by key)."""
    if cfg is not None and not isinstance(cfg, dict):
        raise ConfigError(f"cfg must be a dict of config keys (see the adapter's DEFAULT_CONFIG), got {type(cfg).__name__}")
    merged = copy.deepcopy(defaults)
    for key, value in (cfg or {}).items():
        if key == "experiment":
            value = dataclasses.asdict(value) if dataclasses.is_dataclass(value) else dict(value)
            merged["experiment"] = {**merged["experiment"], **value}
        elif key == "mini_batches":
            merged["minibatch_size"] = f"batch/{int(value)}"
        elif key == "grad_norm_clip":  # skrl: > 0 clips the gradient norm
            merged["truncate_grads"], merged["grad_norm"] = value > 0, value if value > 0 else merged["grad_norm"]
        else:
            merged[SKRL_KEY_NAMES.get(key, key)] = value
    return merged


def buffer_size(value, name: str) -> int | None:
    """The size rofunc's `motion_dataset` / `replay_buffer` argument stands for: a skrl Memory's
    memory_size * num_envs, or an int; None when not given."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if hasattr(value, "memory_size"):
        return int(value.memory_size) * int(getattr(value, "num_envs", 1))
    raise ConfigError(f"{name} must be a skrl Memory (its memory_size is the buffer size) or an int, "
                      f"got {type(value).__name__}")


class ProjectAgentAdapter(Agent):
    """Base of the skrl adapters (see module docstring). Subclasses set `DEFAULT_CONFIG` and
    `config_class` and build the project agent in `_build_project_agent`.

    Args (skrl's, in skrl 1.x's positional order; all keywords also work):
        models: None or {}: the networks are the project agent's, sized by cfg (actor_units,
            ...); `agent.models` then holds skrl Model views of them (integrations/skrl_models.py).
        memory: optional skrl Memory: its memory_size is the rollout length, its num_envs the
            number of envs; gets a copy of each transition (see module docstring).
        observation_space, action_space: one env's spaces (default: the env's).
        device: torch device (default: the env's, else cpu).
        cfg: dict updating `DEFAULT_CONFIG`: project config keys, or skrl's names for them
            (`SKRL_KEY_NAMES`, `mini_batches`), and `experiment` (skrl's ExperimentCfg keys).
        env: the env the trainer steps (skrl wrapper or `gymnasium.make_vec` env): source of the
            sizes, the reference motions, the training epoch for curricula and the run config of
            `save_project_checkpoint`.
        num_envs: number of envs when neither env nor memory says.
    """

    DEFAULT_CONFIG: dict[str, Any] = {}
    config_class: type
    ALGO: str  # the run config's train.algo of save_project_checkpoint

    def __init__(self, models: dict | None = None, memory=None, observation_space: gymnasium.Space | None = None,
                 action_space: gymnasium.Space | None = None, device: str | torch.device | None = None,
                 cfg: dict[str, Any] | None = None, *, state_space: gymnasium.Space | None = None,
                 env=None, num_envs: int | None = None, **extra):
        if models:
            raise ConfigError(f"{type(self).__name__} trains this project's own networks: pass models=None "
                              "and size them with cfg keys (actor_units, critic_units, ...); agent.models then "
                              "holds skrl views of them")
        self.env = env
        inner = humanoid_env(env)
        self.observation_space = observation_space or getattr(env, "observation_space", None)
        if isinstance(env, HumanoidVectorEnv) and observation_space is None:  # its spaces are batched
            self.observation_space = env.single_observation_space
        action_space = action_space or self._default_action_space(env)
        if self.observation_space is None or action_space is None:
            raise ConfigError(f"{type(self).__name__} needs observation_space and action_space (or env=)")
        device = torch.device(device if device is not None else getattr(inner, "device", "cpu"))
        num_envs = self._num_envs(num_envs, memory, inner)
        merged = merge_config(self.DEFAULT_CONFIG, cfg)
        experiment = merged.pop("experiment")
        horizon = merged.get("horizon_length")
        if memory is not None and not {"rollouts", "horizon_length"} & set(cfg or {}):
            merged["horizon_length"] = horizon = int(memory.memory_size)  # the memory says how long a rollout is
        elif memory is not None and int(memory.memory_size) != horizon:
            raise ConfigError(f"memory_size {memory.memory_size} differs from cfg rollouts/horizon_length {horizon}")
        merged["minibatch_size"] = resolve_minibatch_size(merged.get("minibatch_size"), horizon * num_envs)
        self._apply_extra(merged, extra, {SKRL_KEY_NAMES.get(k, k) for k in (cfg or {})})
        config = from_dict(self.config_class, merged)
        self.project_agent = self._build_project_agent(config, self.observation_space.shape[-1],
                                                       action_space.shape[-1], num_envs, device, inner)
        views = self._model_views(self.observation_space, action_space)
        super().__init__(cfg=ProjectAgentCfg(experiment=ExperimentCfg(**experiment), agent=config.to_dict()),
                         models=views, memory=memory, observation_space=self.observation_space,
                         state_space=state_space, action_space=action_space, device=device)
        self.num_envs = num_envs
        self.policy, self.value = views["policy"], views["value"]
        self.checkpoint_modules.update(views)
        self.checkpoint_modules["optimizer"] = self.project_agent.optimizer
        self.checkpoint_modules["project_agent"] = ProjectState(self.project_agent)  # loaded last: all of it
        self.last_update_stats: dict[str, float] = {}
        self._timestep = 0

    # ----------------------------------------------------------------- construction hooks
    def _build_project_agent(self, config, obs_dim: int, action_dim: int, num_envs: int,
                             device: torch.device, env):
        raise NotImplementedError

    def _apply_extra(self, merged: dict[str, Any], extra: dict[str, Any], given: set[str]) -> None:
        """Take the subclass's constructor arguments beyond skrl's (rofunc's terms) from `extra`,
        adjusting the `merged` config (`given`: the keys the user's cfg set); none here."""
        if extra:
            raise TypeError(f"{type(self).__name__} got unexpected keyword arguments {sorted(extra)}")

    def _default_action_space(self, env):
        if isinstance(env, HumanoidVectorEnv):
            return env.single_action_space
        return getattr(env, "action_space", None)

    @staticmethod
    def _num_envs(num_envs, memory, env) -> int:
        sources = {"num_envs": num_envs, "memory.num_envs": getattr(memory, "num_envs", None),
                   "env.num_envs": getattr(env, "num_envs", None)}
        given = {k: int(v) for k, v in sources.items() if v is not None}
        if not given:
            raise ConfigError("the number of envs is unknown: pass env=, a memory (num_envs=N) or num_envs=N")
        if len(set(given.values())) > 1:
            raise ConfigError(f"the number of envs disagrees: {given}")
        return next(iter(given.values()))

    def _model_views(self, observation_space, action_space) -> dict[str, Any]:
        return {"policy": PolicyView(self.project_agent, observation_space, action_space),
                "value": ValueView(self.project_agent, observation_space)}

    def _memory_tensors(self) -> dict[str, Any]:
        """Extra skrl memory tensors (name -> size) beyond skrl's standard ones."""
        return {}

    def _memory_extras(self, act_out: dict, infos: dict) -> dict[str, torch.Tensor]:
        return {}

    # ----------------------------------------------------------------- skrl's agent API
    def init(self, *, trainer_cfg=None) -> None:
        """skrl's init (TensorBoard writer, checkpoint folder) plus the optional memory's tensors."""
        super().init(trainer_cfg=trainer_cfg)
        self.enable_models_training_mode(False)
        if self.memory is not None:
            for name, size, dtype in (("observations", self.observation_space, torch.float32),
                                      ("actions", self.action_space, torch.float32), ("rewards", 1, torch.float32),
                                      ("terminated", 1, torch.bool), ("truncated", 1, torch.bool),
                                      ("log_prob", 1, torch.float32), ("values", 1, torch.float32)):
                self.memory.create_tensor(name=name, size=size, dtype=dtype)
            for name, size in self._memory_tensors().items():
                self.memory.create_tensor(name=name, size=size, dtype=torch.float32)

    @torch.no_grad()
    def act(self, observations: torch.Tensor, states: torch.Tensor | None = None, *, timestep: int = 0,
            timesteps: int = 0) -> tuple[torch.Tensor, dict[str, Any]]:
        """Sampled actions `[N, A]` for `observations [N, obs_dim]`, and skrl's outputs:
        mean_actions [N, A], log_prob [N, 1], values [N, 1] (reward units), plus the conditioning
        (ASE: latents [N, latent_dim])."""
        out = self.project_agent.act(observations.to(self.device))
        extras = {k: v for k, v in out.items() if k not in ("actions", "mu", "log_prob", "value", "sampled")}
        return out["actions"], {"mean_actions": out["mu"], "log_prob": out["log_prob"].unsqueeze(-1),
                                "values": out["value"].unsqueeze(-1), **extras}

    @torch.no_grad()
    def record_transition(self, *, observations, states=None, actions, rewards, next_observations,
                          next_states=None, terminated, truncated, infos, timestep: int, timesteps: int) -> None:
        """skrl's bookkeeping (episode returns for TensorBoard), then, when training, the project
        agent's `record_transition` (rewards / terminated / truncated `[N, 1]` or `[N]`; `infos`
        the env's info: final_obs, amp_obs, style_reward). In evaluation only the latent
        schedule advances."""
        super().record_transition(observations=observations, states=states, actions=actions, rewards=rewards,
                                  next_observations=next_observations, next_states=next_states,
                                  terminated=terminated, truncated=truncated, infos=infos,
                                  timestep=timestep, timesteps=timesteps)
        n = self.num_envs
        reward = rewards.reshape(n).to(self.device)
        term, trunc = terminated.reshape(n).bool().to(self.device), truncated.reshape(n).bool().to(self.device)
        agent = self.project_agent
        if not self.training:
            if hasattr(agent, "advance_latents"):
                agent.advance_latents(term | trunc)
            return
        act_out = agent._last_act
        agent.record_transition(observations, actions, reward, term, trunc, next_observations, infos)
        if self.memory is not None:
            self.memory.add_samples(observations=observations, actions=actions, rewards=reward.unsqueeze(-1),
                                    terminated=term.unsqueeze(-1), truncated=trunc.unsqueeze(-1),
                                    log_prob=act_out["log_prob"].unsqueeze(-1), values=act_out["value"].unsqueeze(-1),
                                    **self._memory_extras(act_out, infos))

    def pre_interaction(self, *, timestep: int, timesteps: int) -> None:
        """Before each rollout: tell the env how many updates are done (HumanoidASE's getup
        phases change with it), as the project's Runner does."""
        self._timestep = timestep
        if self.training and self.project_agent.rollout.step == 0:
            set_epoch = getattr(humanoid_env(self.env), "set_training_epoch", None)
            message = set_epoch(self.project_agent.epoch) if set_epoch is not None else None
            if message:
                print(message, flush=True)

    def post_interaction(self, *, timestep: int, timesteps: int) -> None:
        """After each step: the update once the rollout is full, then skrl's checkpoint and
        TensorBoard writing."""
        if self.training and self.project_agent.ready_to_update:
            with ScopedTimer() as timer:
                self.enable_models_training_mode(True)
                self._update(timestep, timesteps)
                self.enable_models_training_mode(False)
            self.track_data("Stats / Algorithm update time (ms)", timer.elapsed_time_ms)
        super().post_interaction(timestep=timestep, timesteps=timesteps)

    def _update(self, timestep: int, timesteps: int) -> None:
        """The template's name for the update (skrl 1.x)."""
        self.update(timestep=timestep, timesteps=timesteps)

    def update(self, *, timestep: int, timesteps: int) -> None:
        """The project agent's update on its recorded rollout; its statistics go to `track_data`."""
        stats = self.project_agent.update()
        for name, value in stats.items():
            if not math.isfinite(float(value)):
                raise TrainingError(f"training diverged at update {self.project_agent.epoch}: statistic '{name}' "
                                    f"is {float(value)} (lower learning_rate or check the inputs)")
            self.track_data(_TRACK_TAGS.get(name, f"Project / {name}"), float(value))
        self.track_data("Policy / Standard deviation", float(self.project_agent.log_std.exp().mean()))
        self.last_update_stats = stats

    def update_net(self) -> dict[str, float]:
        """rofunc's name: update now on the recorded (full) rollout; returns its statistics."""
        self.update(timestep=self._timestep, timesteps=0)
        return self.last_update_stats

    # ----------------------------------------------------------------- the project's checkpoint format
    def project_run_config(self, env=None) -> dict[str, Any]:
        """A run config (plain dicts, the keys train.py's loaders read) describing this agent
        and `env` (default: the env it was built with)."""
        env = humanoid_env(env if env is not None else self.env)
        if env is None:
            raise ConfigError("the project's checkpoint records the env's robot and task: pass env= "
                              "(to the constructor or to save_project_checkpoint)")
        env_cfg = dataclasses.asdict(env.cfg) if dataclasses.is_dataclass(getattr(env, "cfg", None)) else {}
        robot = env.robot
        task = type(env).__name__
        task = task[:-3] if task.endswith("HRL") else task  # the hierarchical class is <Task>HRL
        return {"task": {"name": task, "env": env_cfg},
                "robot": {"name": robot.name, "pd_damping": getattr(robot, "pd_damping", None),
                          "key_bodies": env_cfg.get("key_bodies"), "contact_bodies": env_cfg.get("contact_bodies")},
                "train": {"algo": self.ALGO, "params": self.project_agent.config.to_dict()},
                "sim": {"name": env_cfg.get("sim")}, "motion_file": env_cfg.get("motion_file"),
                "num_envs": self.num_envs, "seed": self.project_agent.config.seed,
                "device": str(self.device), "trained_with": "skrl", **self._run_config_extras()}

    def _run_config_extras(self) -> dict[str, Any]:
        """Further run-config keys of `project_run_config` (HRL: its controller)."""
        return {}

    def save_project_checkpoint(self, path: str | Path, env=None) -> Path:
        """Write the agent in this project's run-checkpoint format (networks, normalisers,
        optimiser, counters, run config; no AMP sample buffers, no env state), atomically. An
        ASE controller saved so is an `llc_checkpoint` for train.py's hierarchical tasks."""
        state = {"format": "ase_humanoid/1", "epoch": self.project_agent.epoch,
                 "global_step": self.project_agent.env_steps, "config": self.project_run_config(env),
                 "agent": self.project_agent.state_dict(include_buffers=False)}
        return save_checkpoint(state, path)


def reference_source(collect: Callable[[int], torch.Tensor] | None, env) -> Callable[[int], torch.Tensor]:
    """The callable n -> demo AMP observations `[n, amp_obs_dim]`: `collect` where given, else the env's."""
    if collect is not None:
        return collect
    if env is not None and hasattr(env, "fetch_amp_obs_demo"):
        return env.fetch_amp_obs_demo
    raise ConfigError("AMP agents need reference motions: pass env= (its motion library) or "
                      "collect_reference_motions=<callable n -> [n, amp_obs_dim] tensor>")
