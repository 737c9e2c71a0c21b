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
from collections.abc import Mapping
from typing import Any

from ase_humanoid.builders import build_env
from ase_humanoid.config import compose_config, hydra_quote
from ase_humanoid.envs import env_class, gym_id
from ase_humanoid.envs.gym_vector import HumanoidVectorEnv
from ase_humanoid.errors import ConfigError, did_you_mean

# make_vector_env keywords that are top-level keys of the run config (cfg/config.yaml).
RUN_CONFIG_KEYS = ("robot", "motion_file", "sim", "device", "num_threads", "seed", "profile",
                   "llc_checkpoint", "train")
# ... and keywords that are agent keys but shape the env (the hierarchical env's LLC rate).
AGENT_KEYS = {"llc_steps": "train.params.llc_steps"}


def hydra_value(value: Any) -> str:
    """`value` written as a Hydra command-line override value that reads back as the same type:
    a string such as "4" or "true" is quoted, so that the run config's type checks see a string."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()  # numpy / torch scalars are numbers
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, Mapping):  # e.g. HumanoidASE's phases=[{"from_epoch": 5, ...}]
        return "{" + ",".join(f"{hydra_key(k)}:{hydra_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if re.fullmatch(r"[\w./:+\-~]+", text) and _reads_as(text) == text:
        return text
    return hydra_quote(text)


def hydra_key(key: Any) -> str:
    """`key` as a key of a Hydra dict override value; ConfigError for a key Hydra cannot write
    unquoted (its grammar takes no quoted keys), rather than a parse error about the whole value."""
    if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z_][\w\-]*", key):
        raise ConfigError(f"dict key {key!r} cannot be passed as a config value: keys must be names "
                          "(letters, digits, '_' and '-', not starting with a digit)")
    return key


def _reads_as(text: str) -> Any:
    """What Hydra reads override value `text` as (4 for "4", None for "null", ...)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_override(f"key={text}").value()


def vector_env_overrides(task: str, num_envs: int, options: dict[str, Any]) -> list[str]:
    """Run-config overrides (as for train.py) that build task `task` with `num_envs` envs and
    keyword `options`: run-config keys (`RUN_CONFIG_KEYS`), `llc_steps`, and the task's env keys
    (`task.env.*`). Unknown keywords raise `ConfigError` listing the valid ones."""
    env_keys = {f.name for f in dataclasses.fields(env_class(task).config_class)} - set(RUN_CONFIG_KEYS) - {"num_envs"}
    # num_envs goes through the run config's own check (an integer: "4" or 4.0 is an error there)
    overrides = [f"task={task}", f"num_envs={hydra_value(num_envs)}"]
    # An llc_checkpoint makes a task hierarchical. Without one a hierarchical task is built as
    # train.py builds it: on the controller shipped for the robot (builders.use_shipped_llc), or
    # the same error when none ships; train="amp_task" gives the flat task instead.
    if options.get("llc_checkpoint") is not None and "train" not in options:
        overrides.append("train=hrl")
    for key, value in options.items():
        if key == "terrain":
            overrides += terrain_overrides(value)
        elif key in RUN_CONFIG_KEYS:
            overrides.append(f"{key}={hydra_value(value)}")
        elif key in AGENT_KEYS:
            overrides.append(f"{AGENT_KEYS[key]}={hydra_value(value)}")
        elif key in env_keys:
            overrides.append(f"task.env.{key}={hydra_value(value)}")
        else:
            valid = sorted(set(RUN_CONFIG_KEYS) | set(AGENT_KEYS) | env_keys | {"terrain"})
            raise ConfigError(f"unknown keyword '{key}' for {gym_id(task)}"
                              f"{did_you_mean(key, ['num_envs', 'render_env_id', *valid])}; valid keywords: "
                              f"num_envs, render_env_id, {', '.join(valid)}")
    return overrides


def terrain_overrides(terrain: str | dict[str, Any]) -> list[str]:
    """`terrain="rough"` selects cfg/terrain/rough.yaml as `terrain=rough` does for train.py;
    `terrain={"name": "mixed", "rows": 4, ...}` also sets its `terrain.*` keys."""
    if isinstance(terrain, str):
        return [f"terrain={hydra_value(terrain)}"]
    if isinstance(terrain, dict) and isinstance(terrain.get("name"), str):
        return [f"terrain={hydra_value(terrain['name'])}",
                *(f"terrain.{key}={hydra_value(value)}" for key, value in terrain.items() if key != "name")]
    raise ConfigError(f"keyword 'terrain' must be a terrain name (flat, rough, mixed, mesh) or a dict with "
                      f"'name' and terrain.* keys, got {terrain!r}")


def refuse_single_env(task: str, **options):
    """gymnasium.make's entry point: the envs are batched, so only make_vec builds them (without
    this, gymnasium.make says "entry_point is not specified", which does not say what to do)."""
    raise ConfigError(f"{gym_id(task)} is a batched vector env: build it with gymnasium.make_vec("
                      f"'{gym_id(task)}', num_envs=N, ...), not gymnasium.make (num_envs=1 for a single humanoid)")


def make_vector_env(task: str, num_envs: int = 1, render_env_id: int = 0, **options) -> HumanoidVectorEnv:
    """Task `task` with `num_envs` envs as train.py builds it, as a `HumanoidVectorEnv`.

    Keyword options: run-config keys (robot, motion_file, sim, device, num_threads, seed, profile,
    llc_checkpoint: an ASE checkpoint makes a task hierarchical, its actions 64-d latents; without
    one a hierarchical task uses the robot's shipped controller, as train.py does; train: a
    cfg/train choice, e.g. "amp_task" for the flat version of a hierarchical task),
    `llc_steps`, and the task's env keys (state_init, max_episode_length, ...).
    """
    cfg = compose_config(vector_env_overrides(task, num_envs, options))
    return HumanoidVectorEnv(build_env(cfg), render_env_id=render_env_id)
