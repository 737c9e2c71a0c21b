"""Batched humanoid environments and the task registry.

`make_env(task_name, **cfg)` builds one by name: `HumanoidAMP` (AMP pre-training),
`HumanoidASE` (ASE low-level controller pre-training with getup), `HumanoidPerturb` (projectiles
thrown at a trained controller), `HumanoidViewMotion` (kinematic playback of the MotionLib), and the tasks of
`envs/tasks/` (`HumanoidHeading`, `HumanoidLocation`, `HumanoidReach`, `HumanoidStrike`).
Keyword arguments are the env config keys (`ase_humanoid/envs/config.py`); unknown keys raise
`ConfigError` naming the valid ones.
"""

from __future__ import annotations

import importlib

from ase_humanoid.errors import ConfigError

# name -> (module, class); modules are imported on demand so registering a task costs nothing.
TASKS = {
    "HumanoidAMP": ("ase_humanoid.envs.humanoid_amp", "HumanoidAMP"),
    "HumanoidASE": ("ase_humanoid.envs.humanoid_ase", "HumanoidASE"),
    "HumanoidPerturb": ("ase_humanoid.envs.humanoid_perturb", "HumanoidPerturb"),
    "HumanoidViewMotion": ("ase_humanoid.envs.view_motion", "HumanoidViewMotion"),
    "HumanoidHeading": ("ase_humanoid.envs.tasks.heading", "HumanoidHeading"),
    "HumanoidLocation": ("ase_humanoid.envs.tasks.location", "HumanoidLocation"),
    "HumanoidReach": ("ase_humanoid.envs.tasks.reach", "HumanoidReach"),
    "HumanoidStrike": ("ase_humanoid.envs.tasks.strike", "HumanoidStrike"),
}


def register_task(name: str, module: str, class_name: str) -> None:
    """Make `make_env(name)` build `module.class_name` (task envs register themselves here)."""
    TASKS[name] = (module, class_name)


def task_names() -> list[str]:
    return sorted(TASKS)


def env_class(task_name: str):
    """The environment class registered as `task_name`."""
    if task_name not in TASKS:
        raise ConfigError(f"unknown task {task_name!r}; valid tasks: {task_names()}")
    module, class_name = TASKS[task_name]
    return getattr(importlib.import_module(module), class_name)


def make_env(task_name: str, **cfg):
    """Build the environment `task_name` with config keys `cfg` (see `envs/config.py`)."""
    return env_class(task_name)(**cfg)


GYM_NAMESPACE = "ase_humanoid"


def gym_id(task_name: str) -> str:
    """The gymnasium id of task `task_name`: `ase_humanoid/<task>-v0`."""
    return f"{GYM_NAMESPACE}/{task_name}-v0"


def register_gymnasium_envs() -> list[str]:
    """Register every task as `ase_humanoid/<task>-v0` for `gymnasium.make_vec` (a vector entry
    point: `ase_humanoid/gym_entry.py` `make_vector_env`); returns the ids. Cheap: nothing is built."""
    import gymnasium

    ids = []
    for name in task_names():
        env_id = gym_id(name)
        if env_id not in gymnasium.registry:
            # entry_point: gymnasium.make gets an error saying to use make_vec (the envs are batched)
            gymnasium.register(id=env_id, entry_point="ase_humanoid.gym_entry:refuse_single_env",
                               vector_entry_point="ase_humanoid.gym_entry:make_vector_env", kwargs={"task": name})
        ids.append(env_id)
    return ids


__all__ = ["TASKS", "env_class", "gym_id", "make_env", "register_gymnasium_envs", "register_task", "task_names"]
