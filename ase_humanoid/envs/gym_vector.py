"""gymnasium's vector-env interface over the batched humanoid envs, for other RL libraries.

`HumanoidVectorEnv(env)` presents any env of this package (`make_env(...)`, a hierarchical task
env, ...) as a `gymnasium.vector.VectorEnv` (gymnasium >= 1.0):

  reset(*, seed=None, options=None) -> obs [N, obs_dim], info
  step(actions [N, act_dim]) -> obs, reward [N], terminated [N], truncated [N], info
  single_observation_space / single_action_space, observation_space / action_space (batched),
  num_envs, render() -> one rgb frame [H, W, 3] uint8, close()

Everything stays a torch tensor on the env's device (`metadata["device"]`,
`metadata["array_type"] == "torch"`); actions may be torch tensors or numpy arrays. Envs that
finish are reset inside `step` (`metadata["autoreset_mode"] == AutoresetMode.SAME_STEP`): `obs`
is the first observation of their new episode, `info["final_obs"]` `[N, obs_dim]` the one their
old episode ended in (rows of envs that did not finish equal `obs`) and `info["_final_obs"]`
`[N]` bool marks the finished envs, as gymnasium names them.

Besides the env's own info (`amp_obs`, `episode` vectors, ...) `info["log"]` holds scalar
summaries of the episodes that ended in this step (`episode_log`), empty when none did: the key
Isaac Lab uses, which rsl_rl reads and skrl logs with `environment_info="log"`.

The AMP extras pass through: `amp_observation_space`, `collect_reference_motions(n)` /
`fetch_amp_obs_demo(n)`, `num_amp_obs_steps`, `num_amp_obs_per_step`; any other attribute is
the wrapped env's (`vec_env.env` is the env itself, which this project's `Runner` drives).

`make_vector_env(task, num_envs, **options)` builds one exactly as `train.py task=<task>` builds
its env (the same Hydra config, task defaults and profile); `import ase_humanoid` registers
every task (`envs.register_gymnasium_envs`), so that
`gymnasium.make_vec("ase_humanoid/<task>-v0", num_envs=N, **options)` calls it.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from ase_humanoid.envs import gym_id
from ase_humanoid.envs import observations as obs_fn
from ase_humanoid.errors import ConfigError

# make_vector_env keywords that are top-level keys of the run config (cfg/config.yaml).
RUN_CONFIG_KEYS = ("robot", "motion_file", "sim", "device", "num_threads", "seed", "profile",
                   "llc_checkpoint")
# ... and keywords that are agent keys but shape the env (the hierarchical env's LLC rate).
AGENT_KEYS = {"llc_steps": "train.params.llc_steps"}


# ---------------------------------------------------------------------------- episode statistics

def episode_log(episode: dict[str, torch.Tensor], terminated: torch.Tensor,
                truncated: torch.Tensor) -> dict[str, torch.Tensor]:
    """Scalar summaries (0-d tensors) of the k episodes that ended in one step; {} when k = 0.

    `episode` {"return": [k], "length": [k]} of the ended envs in env order, `terminated` /
    `truncated` `[N]` bool. Keys: `Episode/return` and `Episode/length` (means over the k
    episodes, length in control steps), `Episode/terminated` (share of them that ended by a
    termination such as a fall rather than the time limit), `Episode/count` (k).
    """
    returns, lengths = episode["return"], episode["length"]
    if returns.numel() == 0:
        return {}
    ended_terminated = terminated[terminated | truncated]
    return {"Episode/return": returns.float().mean(),
            "Episode/length": lengths.float().mean(),
            "Episode/terminated": ended_terminated.float().mean(),
            "Episode/count": torch.tensor(float(returns.numel()), device=returns.device)}


# ---------------------------------------------------------------------------- the vector env

class HumanoidVectorEnv(gymnasium.vector.VectorEnv):
    """gymnasium vector env over one batched humanoid env (see module docstring).

    `HumanoidVectorEnv(env, render_env_id=0, render_size=(640, 480))`: `render()` draws world
    `render_env_id` at width x height pixels with a camera following the humanoid.
    """

    def __init__(self, env, render_env_id: int = 0, render_size: tuple[int, int] = (640, 480)):
        if not 0 <= render_env_id < env.num_envs:
            raise ConfigError(f"render_env_id must be in [0, {env.num_envs - 1}], got {render_env_id}")
        self.env = env
        self.num_envs = env.num_envs
        self.single_observation_space = env.observation_space
        self.single_action_space = env.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = "rgb_array"
        self.render_env_id = int(render_env_id)
        self.render_size = tuple(render_size)
        self._renderer = None
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": ["rgb_array"],
                         "render_fps": env.control_freq, "device": str(env.device), "array_type": "torch"}

    # ---- gymnasium API ---------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return self.env.device

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset every env. `seed` restarts the env's random generator (reproducible episodes);
        no `options` are understood. Returns obs `[N, obs_dim]` and info {"amp_obs" `[N, P]`}."""
        if options:
            raise ConfigError(f"reset options {sorted(options)} are not supported; reset() takes none")
        if seed is not None:
            self.env.reseed(seed)
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        obs = self.env.reset()
        return obs, {"amp_obs": self._flat_amp_history()}

    def step(self, actions):
        """One step of every env (a high-level step for hierarchical envs); see module docstring."""
        obs, reward, terminated, truncated, info = self.env.step(actions)
        info = dict(info)
        info["_final_obs"] = terminated | truncated
        info["log"] = episode_log(info["episode"], terminated, truncated)
        return obs, reward, terminated, truncated, info

    def render(self) -> np.ndarray:
        """An rgb frame `[height, width, 3]` uint8 of world `render_env_id` (with task markers)."""
        if self._renderer is None:
            from ase_humanoid.utils.render import OffscreenRenderer

            width, height = self.render_size
            self._renderer = OffscreenRenderer(self.env.mj_model, width=width, height=height)
        i = self.render_env_id
        return self._renderer.render(self.env.render_state(i), markers=self.env.markers(i))

    def close_extras(self, **kwargs) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self.env.close()

    # ---- AMP extras --------------------------------------------------------------------------

    @property
    def amp_observation_space(self) -> gymnasium.spaces.Box:
        """One env's AMP observation: `num_amp_obs_steps` frames, newest first."""
        return self.env.amp_observation_space

    def collect_reference_motions(self, num_samples: int) -> torch.Tensor:
        """Demo AMP observations `[n, P]` from the motion dataset (skrl's AMP calls this)."""
        return self.env.fetch_amp_obs_demo(num_samples)

    def fetch_amp_obs_demo(self, num_samples: int) -> torch.Tensor:
        return self.env.fetch_amp_obs_demo(num_samples)

    def _flat_amp_history(self) -> torch.Tensor:
        return obs_fn.flatten_amp_history(self.env.amp_history)

    def call(self, name: str, *args, **kwargs):
        """Attribute `name` of this env, called with the arguments if it is a method (gymnasium's
        vector `call`; one batched result here, not a tuple per sub-env: skrl's wrapper renders
        through `call("render")`)."""
        attribute = getattr(self, name)
        return attribute(*args, **kwargs) if callable(attribute) else attribute

    def __getattr__(self, name: str):
        # Only reached for names this class lacks: task metrics, robot, motion_lib, dt, ...
        if name == "env" or name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.env, name)

    def __repr__(self) -> str:
        return f"HumanoidVectorEnv({type(self.env).__name__}, num_envs={self.num_envs}, device={self.device})"


# ---------------------------------------------------------------------------- building by name

def hydra_value(value: Any) -> str:
    """`value` written as a Hydra command-line override value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    text = str(value)
    if re.fullmatch(r"[\w./:+\-~]+", text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _task_default_train(task: str) -> str | None:
    from omegaconf import OmegaConf

    from ase_humanoid import CFG_DIR

    path = CFG_DIR / "task" / f"{task}.yaml"
    return OmegaConf.load(path).get("default_train") if path.exists() else None


def vector_env_overrides(task: str, num_envs: int, options: dict[str, Any]) -> list[str]:
    """Run-config overrides (as for train.py) that build task `task` with `num_envs` envs and
    keyword `options`: run-config keys (`RUN_CONFIG_KEYS`), `llc_steps`, and the task's env keys
    (`task.env.*`). Unknown keywords raise `ConfigError` listing the valid ones."""
    from ase_humanoid.envs import env_class

    env_keys = {f.name for f in dataclasses.fields(env_class(task).config_class)} - set(RUN_CONFIG_KEYS) - {"num_envs"}
    overrides = [f"task={task}", f"num_envs={int(num_envs)}"]
    # A task whose default algorithm is hierarchical needs an LLC; without one it is the flat task.
    if options.get("llc_checkpoint") is not None:
        overrides.append("train=hrl")
    elif _task_default_train(task) == "hrl":
        overrides.append("train=amp_task")
    for key, value in options.items():
        if key in RUN_CONFIG_KEYS:
            overrides.append(f"{key}={hydra_value(value)}")
        elif key in AGENT_KEYS:
            overrides.append(f"{AGENT_KEYS[key]}={hydra_value(value)}")
        elif key in env_keys:
            overrides.append(f"task.env.{key}={hydra_value(value)}")
        else:
            valid = sorted(set(RUN_CONFIG_KEYS) | set(AGENT_KEYS) | env_keys)
            raise ConfigError(f"unknown keyword '{key}' for {gym_id(task)}; valid keywords: "
                              f"num_envs, render_env_id, {', '.join(valid)}")
    return overrides


def make_vector_env(task: str, num_envs: int = 1, render_env_id: int = 0, **options) -> HumanoidVectorEnv:
    """Task `task` with `num_envs` envs as train.py builds it, as a `HumanoidVectorEnv`.

    Keyword options: run-config keys (robot, motion_file, sim, device, num_threads, seed, profile,
    llc_checkpoint: an ASE checkpoint makes a task hierarchical, its actions 64-d latents),
    `llc_steps`, and the task's env keys (state_init, max_episode_length, ...).
    """
    from ase_humanoid.builders import build_env
    from ase_humanoid.config import compose_config

    cfg = compose_config(vector_env_overrides(task, num_envs, options))
    return HumanoidVectorEnv(build_env(cfg), render_env_id=render_env_id)
