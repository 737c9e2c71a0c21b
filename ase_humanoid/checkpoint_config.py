"""A run's config composed with what its checkpoint was trained with.

`python train.py test=true checkpoint=<heading policy>` should play a Heading policy on the robot
it learnt on without `task=` and `robot=`, and `resume=true run_dir=<run>` should continue a run
as it was started. So before composing, the command line is read for the checkpoint it names;
each setting of ADOPTED_* the command line leaves out is taken from that checkpoint, and the
config is composed once with them in front of the user's overrides. Composing once matters: a
key only the checkpoint's task has (`task.env.target_speed_min` of Heading) is valid on a command
line that names no task. train.py (`app.py`) and the benchmarks (`evaluate.checkpoint_test_config`)
both compose through here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.nodes import BooleanNode

from ase_humanoid.builders import resolve_path, saved_pd_damping
from ase_humanoid.config import (
    compose_config,
    group_choices,
    parse_override_value,
    saved_value,
)
from ase_humanoid.errors import ConfigError
from ase_humanoid.utils.checkpoint import load_checkpoint_config
from ase_humanoid.utils.checks import input_file_problem

# What a checkpoint decides when the command line does not name it: a policy acts on the joints
# of one robot, evaluating it is meant for the task it learnt, and a resumed run continues with
# its own task, robot, ground, data, batch and training settings up to its own end
# (app.check_resume_config still checks every run-defining key against it).
ADOPTED_ON_RESUME = ("task", "robot", "terrain", "motion_file", "num_envs", "max_epochs", "train", "task_env",
                     "pd_damping")
ADOPTED_ON_TEST = ("task", "robot")
ADOPTED_FROM_START = ("robot",)  # a run on an llc_checkpoint, or from a checkpoint's weights
# The keys read from the command line before composing, to know which checkpoint speaks.
_SOURCE_KEYS = ("resume", "test", "checkpoint", "llc_checkpoint", "run_dir")


def checkpoint_choices(path: Path) -> dict:
    """What a checkpoint was trained with, by ADOPTED_* name (None where it does not say; the
    terrain as its whole `terrain` block, `train` as its algorithm and parameters, `task_env`
    as its task's name and env block)."""
    saved = load_checkpoint_config(path) or {}
    return {"task": saved_value(saved, "task.name"), "robot": saved_value(saved, "robot.name"),
            "terrain": saved_value(saved, "terrain"), "motion_file": saved_value(saved, "motion_file"),
            "num_envs": saved_value(saved, "num_envs"), "max_epochs": saved_value(saved, "max_epochs"),
            "train": saved_value(saved, "train"),
            "task_env": {"name": saved_value(saved, "task.name"), "env": saved_value(saved, "task.env")},
            "pd_damping": saved_pd_damping(saved) if saved else None,
            "task_motion_file": saved_value(saved, "task.motion_file")}


def _given(argv: list[str]) -> tuple[set[str], dict]:
    """The keys the command line names (`terrain` for any terrain.* key; task.env.* leaves the
    task open) and its values of _SOURCE_KEYS (the last wins, as in Hydra)."""
    keys, sources = set(), {}
    for arg in argv:
        key, _, value = arg.partition("=")
        key = key.strip()
        keys.add(key)
        if key.startswith("terrain."):
            keys.add("terrain")
        if key in _SOURCE_KEYS:
            sources[key] = parse_override_value(key, value)
    return keys, sources


def _is_true(value) -> bool:
    """OmegaConf's reading of a bool value ("true", "yes", 1, ...); anything else is left to
    the compose, which reports it."""
    try:
        return bool(BooleanNode(value)._value())
    except Exception:  # omegaconf's ValidationError for a non-bool
        return False


def checkpoint_source(sources: dict) -> tuple[str | None, tuple[str, ...]]:
    """(the checkpoint or run folder whose settings apply, which ADOPTED_* settings) for the
    command line's values of _SOURCE_KEYS."""
    if _is_true(sources.get("resume")):
        return sources.get("checkpoint") or sources.get("run_dir"), ADOPTED_ON_RESUME
    if _is_true(sources.get("test")):
        return sources.get("checkpoint"), ADOPTED_ON_TEST
    return sources.get("llc_checkpoint") or sources.get("checkpoint"), ADOPTED_FROM_START


def _override(key: str, value) -> str:
    """The override string of an adopted setting (the terrain by its kind: its other keys, like
    train.params, are set after composing)."""
    return f"{key}={value['name'] if key == 'terrain' else value}"


def _current(cfg: DictConfig) -> dict:
    return {"task": cfg.task.name, "robot": cfg.robot.name, "terrain": OmegaConf.to_container(cfg.terrain),
            "motion_file": cfg.motion_file, "num_envs": cfg.num_envs, "max_epochs": cfg.max_epochs}


def _train_group(saved_train) -> str | None:
    """The cfg/train group that trains the saved run's algorithm: the one named after it (a
    run started with `train=amp_task` is algorithm `amp`; its own task reward weights then come
    back with its other train.params). None for an algorithm this version has no group for."""
    algo = saved_train.get("algo") if isinstance(saved_train, dict) else None
    return algo if algo in group_choices("train") else None


def _changes_something(key: str, value, cfg: DictConfig, alone: dict | None) -> bool:
    """Whether an adopted setting differs from what the command line alone gives: the train
    group from the (adopted) task's own default, the others from composing the command line."""
    if key == "train":
        return value != cfg.task.default_train
    return alone is None or alone[key] != value


def _command_line_alone(argv: list[str]) -> dict | None:
    """The ADOPTED_* settings the command line alone would give, for saying which adopted ones
    change anything. Dotted keys are left out (they may belong to the checkpoint's task only and
    set none of these); None if even that does not compose."""
    try:
        return _current(compose_config([arg for arg in argv if "." not in arg.partition("=")[0]]))
    except ConfigError:
        return None


def _adopt_missing(node: DictConfig, saved: dict | None, given: set[str], prefix: str) -> list[str]:
    """Set each key of `node` (the config block at `prefix`) that the command line leaves out to
    its value in `saved`; returns `prefix.key=value` of those that differ. Keys this version no
    longer has are left out."""
    current = OmegaConf.to_container(node)
    changed = {key: value for key, value in (saved or {}).items()
               if key in current and f"{prefix}.{key}" not in given and value != current[key]}
    with open_dict(node):
        for key, value in changed.items():
            node[key] = value
    return [f"{prefix}.{key}={value}" for key, value in changed.items()]


def adopt_train_params(cfg: DictConfig, saved_train: dict | None, given: set[str]) -> list[str]:
    """Set each train.params key of the resumed run that the command line leaves out to the
    run's value (a profile changed since, or other defaults, must not change a run halfway);
    returns `key=value` of those that differ. Another algorithm is left to check_resume_config
    to report."""
    if not isinstance(saved_train, dict) or saved_train.get("algo") != cfg.train.algo:
        return []
    return _adopt_missing(cfg.train.params, saved_train.get("params"), given, "train.params")


def adopt_task_env(cfg: DictConfig, saved_task: dict | None, given: set[str]) -> list[str]:
    """The same for the resumed run's task.env keys (`task.env.getup_reward=true` given when the
    run started must hold when it resumes), where the run's task is the one composed."""
    if not isinstance(saved_task, dict) or saved_task.get("name") != cfg.task.name:
        return []
    return _adopt_missing(cfg.task.env, saved_task.get("env"), given, "task.env")


def adopt_task_motion_file(cfg: DictConfig, saved_defaults, saved_task: str | None) -> list[str]:
    """A resumed run that trained on its task's default data keeps that data: the task's defaults
    as the run saved them, where this version's differ (HumanoidASE's changed on 2026-12-07)."""
    if saved_defaults is None or saved_task != cfg.task.name:
        return []
    current = OmegaConf.to_container(cfg.task.motion_file) if isinstance(cfg.task.get("motion_file"), DictConfig) \
        else cfg.task.get("motion_file")
    if current == saved_defaults:
        return []
    with open_dict(cfg):
        cfg.task.motion_file = saved_defaults
    chosen = saved_defaults.get(cfg.robot.name) if isinstance(saved_defaults, dict) else saved_defaults
    return [f"motion_file={chosen} (the task's default when the run started)"]


def adopt_pd_damping(cfg: DictConfig, saved_mode: str | None, given: set[str]) -> list[str]:
    """The resumed run's `robot.pd_damping` where the command line leaves it out: the PD law is
    the run's physics, which must not change halfway (a default changed since included)."""
    if saved_mode is None or "robot.pd_damping" in given or cfg.robot.get("pd_damping") == saved_mode:
        return []
    with open_dict(cfg.robot):
        cfg.robot.pd_damping = saved_mode
    return [f"robot.pd_damping={saved_mode}"]


def compose_run_config(argv: list[str]) -> DictConfig:
    """compose_config(argv) with each ADOPTED_* setting the command line leaves out taken from
    the checkpoint it names (printed, unless it changes nothing); an explicit key (for the
    terrain, any terrain.* key) is kept. A missing or unreadable checkpoint is left to the code
    that loads it, which reports it."""
    given, sources = _given(argv)
    source, keys = checkpoint_source(sources)
    if not source:
        return compose_config(argv)
    path = Path(resolve_path(str(source)))
    path = path / "latest.pt" if path.is_dir() else path
    if input_file_problem(path) is not None:
        return compose_config(argv)
    choices = checkpoint_choices(path)
    adopted = {key: choices[key] for key in keys if key not in given and choices[key] is not None}
    composed = {key: value for key, value in adopted.items() if key not in ("train", "task_env", "pd_damping")}
    train_group = _train_group(adopted.get("train"))
    if train_group:
        composed["train"] = train_group
    cfg = compose_config([*(_override(key, value) for key, value in composed.items()), *argv])
    if "terrain" in adopted:  # the run's terrain.* keys too, not just the kind of ground
        with open_dict(cfg):
            cfg.terrain = OmegaConf.merge(cfg.terrain, adopted["terrain"])
    alone = _command_line_alone(argv) if adopted else None
    shown = [_override(key, value) for key, value in composed.items() if _changes_something(key, value, cfg, alone)]
    if "train" in adopted:
        shown += adopt_train_params(cfg, adopted["train"], given)
    if "task_env" in adopted:
        shown += adopt_task_env(cfg, adopted["task_env"], given)
    if "pd_damping" in adopted:
        shown += adopt_pd_damping(cfg, adopted["pd_damping"], given)
    if "motion_file" in keys and "motion_file" not in given and choices["motion_file"] is None:
        shown += adopt_task_motion_file(cfg, choices["task_motion_file"], choices["task"])
    if shown:
        print(f"{' '.join(shown)}: as {source} was trained (give them to choose otherwise)", file=sys.stderr,
              flush=True)
    return cfg
