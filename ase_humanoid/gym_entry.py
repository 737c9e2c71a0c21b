"""gymnasium's entry point: a task built from the run config, as train.py builds it.

`make_vector_env(task, num_envs, **options)` composes the same Hydra config as
`train.py task=<task>` (task defaults, profile), builds the env through `builders.build_env` and
wraps it in `envs.gym_vector.HumanoidVectorEnv`. `import ase_humanoid` registers every task
under `ase_humanoid/<task>-v0` with this function as the vector entry point. It sits above
`envs` (it composes configs and builds), which is why it is not in `envs/gym_vector.py`.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from omegaconf import OmegaConf

from ase_humanoid.builders import build_env
from ase_humanoid.config import compose_config
from ase_humanoid.envs import env_class, gym_id
from ase_humanoid.envs.gym_vector import HumanoidVectorEnv
from ase_humanoid.errors import ConfigError
from ase_humanoid.paths import CFG_DIR

# make_vector_env keywords that are top-level keys of the run config (cfg/config.yaml).
RUN_CONFIG_KEYS = ("robot", "motion_file", "sim", "device", "num_threads", "seed", "profile",
                   "llc_checkpoint")
# ... and keywords that are agent keys but shape the env (the hierarchical env's LLC rate).
AGENT_KEYS = {"llc_steps": "train.params.llc_steps"}


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
    """The task's `default_train` (cfg/task/<task>.yaml), None when it names none."""
    path = CFG_DIR / "task" / f"{task}.yaml"
    return OmegaConf.load(path).get("default_train") if path.exists() else None


def vector_env_overrides(task: str, num_envs: int, options: dict[str, Any]) -> list[str]:
    """Run-config overrides (as for train.py) that build task `task` with `num_envs` envs and
    keyword `options`: run-config keys (`RUN_CONFIG_KEYS`), `llc_steps`, and the task's env keys
    (`task.env.*`). Unknown keywords raise `ConfigError` listing the valid ones."""
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
    cfg = compose_config(vector_env_overrides(task, num_envs, options))
    return HumanoidVectorEnv(build_env(cfg), render_env_id=render_env_id)
