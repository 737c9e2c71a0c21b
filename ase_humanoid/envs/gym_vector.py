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

`ase_humanoid.gym_entry.make_vector_env(task, num_envs, **options)` builds one exactly as
`train.py task=<task>` builds its env; `import ase_humanoid` registers every task
(`envs.register_gymnasium_envs`), so that
`gymnasium.make_vec("ase_humanoid/<task>-v0", num_envs=N, **options)` calls it.
"""

from __future__ import annotations

import numbers
from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from ase_humanoid.envs import observations as obs_fn
from ase_humanoid.errors import ActionError, ConfigError, EnvStateError
from ase_humanoid.utils.checks import check_seed

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


# ---------------------------------------------------------------------------- actions

def action_dtype(actions) -> str | None:
    """The dtype of `actions` (a torch tensor, a numpy array or anything numpy reads as one) when
    it is not real numbers (float or integer), else None."""
    if isinstance(actions, torch.Tensor):
        dtype = actions.dtype
        return None if dtype.is_floating_point or not (dtype.is_complex or dtype == torch.bool) else str(dtype)
    try:
        dtype = np.asarray(actions).dtype
    except (TypeError, ValueError):  # ragged nesting, objects numpy cannot hold
        return f"{type(actions).__name__} that is no array"
    return None if dtype.kind in "iuf" else str(dtype)


def check_action_dtype(actions) -> None:
    """ActionError unless the actions are real numbers: the env turns them into float32, which
    drops a complex action's imaginary part without a word and turns booleans into 0 / 1, and
    strings or objects would end in torch's own TypeError."""
    dtype = action_dtype(actions)
    if dtype is not None:
        raise ActionError(f"step() actions must be real numbers (a float or integer array [num_envs, act_dim]), "
                          f"got dtype {dtype}")


# ---------------------------------------------------------------------------- the vector env

class HumanoidVectorEnv(gymnasium.vector.VectorEnv):
    """gymnasium vector env over one batched humanoid env (see module docstring).

    `HumanoidVectorEnv(env, render_env_id=0, render_size=(640, 480))`: `render()` draws world
    `render_env_id` at width x height pixels with a camera following the humanoid.
    """

    def __init__(self, env, render_env_id: int = 0, render_size: tuple[int, int] = (640, 480)):
        if (isinstance(render_env_id, bool) or not isinstance(render_env_id, numbers.Integral)
                or not 0 <= render_env_id < env.num_envs):
            raise ConfigError(f"render_env_id must be an integer from 0 to {env.num_envs - 1}, got {render_env_id!r}")
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
        self._needs_reset = True  # gymnasium's contract: reset() before the first step()
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": ["rgb_array"],
                         "render_fps": env.control_freq, "device": str(env.device), "array_type": "torch"}

    # ---- gymnasium API ---------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return self.env.device

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset every env. `seed` restarts the env's random generator (reproducible episodes);
        no `options` are understood. Returns obs `[N, obs_dim]` and info {"amp_obs" `[N, P]`}."""
        self._check_open("reset")
        if options:
            raise ConfigError(f"reset options {sorted(options)} are not supported; reset() takes none")
        if seed is not None:
            seed = check_seed(seed, "reset(seed=...)")  # the range train.py's seed has
            self.env.reseed(seed)
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        obs = self.env.reset()
        self._needs_reset = False
        return obs, {"amp_obs": self._flat_amp_history()}

    def step(self, actions):
        """One step of every env (a high-level step for hierarchical envs); see module docstring."""
        self._check_open("step")
        if self._needs_reset:
            raise EnvStateError(f"{self!r}: step() before reset(); call reset() first (gymnasium's API)")
        check_action_dtype(actions)
        obs, reward, terminated, truncated, info = self.env.step(actions)
        info = dict(info)
        info["_final_obs"] = terminated | truncated
        info["log"] = episode_log(info["episode"], terminated, truncated)
        return obs, reward, terminated, truncated, info

    def render(self) -> np.ndarray:
        """An rgb frame `[height, width, 3]` uint8 of world `render_env_id` (with task markers)."""
        self._check_open("render")
        if self._renderer is None:
            from ase_humanoid.utils.render import OffscreenRenderer

            width, height = self.render_size
            self._renderer = OffscreenRenderer(self.env.mj_model, width=width, height=height)
        i = self.render_env_id
        return self._renderer.render(self.env.render_state(i), markers=self.env.markers(i))

    def _check_open(self, method: str) -> None:
        if self.closed:  # the env's simulator is released: its own error would be an AttributeError
            raise EnvStateError(f"{method}() on a closed {self!r}; make a new env with gymnasium.make_vec")

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
