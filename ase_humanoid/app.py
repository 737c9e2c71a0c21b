"""train.py's body: compose the config, build env and agent (`builders.py`), then train or evaluate."""

from __future__ import annotations

import contextlib
import copy
import datetime
import math
import random
import shlex
import sys
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from ase_humanoid.builders import build_agent, build_env, resolve_path
from ase_humanoid.checkpoint_config import compose_run_config
from ase_humanoid.config import saved_value
from ase_humanoid.errors import AseHumanoidError, CheckpointError, ConfigError
from ase_humanoid.utils import distributed as dist_utils
from ase_humanoid.utils.checkpoint import POLICY_ENTRIES, RESUME_ENTRIES, load_checkpoint, require_entries
from ase_humanoid.utils.checks import input_file_problem


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def describe_profile(cfg: DictConfig) -> str:
    """One start-up line: which training profile the run uses and what that means."""
    from ase_humanoid.config import profile_overrides

    applied, overridden = [], []
    keys_set = profile_overrides(cfg.profile, cfg.train.algo)
    for key, value in keys_set.items():
        actual = OmegaConf.select(cfg, key)
        actual = OmegaConf.to_container(actual) if isinstance(actual, DictConfig | ListConfig) else actual
        (applied if actual == value else overridden).append(f"{key.split('.')[-1]}={actual}")
    keys = ", ".join(applied) or "nothing for this algorithm"
    given = f"; from the command line instead: {', '.join(overridden)}" if overridden else ""
    # The run length is always shown: from the profile where it sets it, else cfg/config.yaml's.
    length = "" if "max_epochs" in keys_set else f"; max_epochs={cfg.max_epochs}"
    if cfg.profile == "paper":
        return f"training profile: paper (the ASE release's settings; cfg/profiles/paper.yaml: {keys}{given}{length})"
    return (f"training profile: {cfg.profile} (cfg/profiles/{cfg.profile}.yaml: {keys}{given}{length}; "
            "profile=paper for the ASE release's settings)")


def describe_update_precision(agent) -> str | None:
    """A start-up line saying what the update computes in, unless it is plain float32 (`auto`
    depends on the machine, so the line says what it chose)."""
    precision = getattr(agent.config, "update_precision", "float32")
    if precision == "float32":
        return None
    chosen = "bfloat16" if agent.update_dtype == torch.bfloat16 else "float32"
    if precision == "auto":
        from ase_humanoid.agents.update_precision import cpu_bfloat16_matmul

        why = (f"a CPU with {cpu_bfloat16_matmul()}" if chosen == "bfloat16"
               else f"no bfloat16 matrix instructions on {agent.device.type}")
        return f"update precision: {chosen} (update_precision=auto: {why})"
    return f"update precision: {chosen} hidden layers (update_precision={precision})"


def make_run_dir(cfg: DictConfig) -> Path:
    if cfg.run_dir is not None:
        return Path(cfg.run_dir)
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    return Path("runs") / f"{cfg.task.name}_{stamp}"


def run(argv: list[str]) -> None:
    cfg = compose_run_config(argv)
    rank, world_size = dist_utils.init_from_env(str(cfg.device))
    if world_size > 1 and str(cfg.device).startswith("cuda"):
        OmegaConf.set_struct(cfg, False)
        cfg.device = f"cuda:{dist_utils.local_rank()}"
        OmegaConf.set_struct(cfg, True)
    seed_everything(int(cfg.seed) + 1000 * rank)
    torch.set_num_threads(int(cfg.torch_threads))
    if cfg.test:
        from ase_humanoid.evaluate import evaluate

        evaluate(cfg)
        return
    train(cfg, rank, world_size)


# Keys that define a run: resuming with another value would break the restore or silently
# change what the run learns (and rewrite its config.yaml).
RUN_DEFINING_KEYS = ("task.name", "train.algo", "robot.name", "sim.name", "num_envs", "motion_file",
                     "train.params.horizon_length", "task.env.num_amp_obs_steps")


def check_resume_config(saved: dict, current: dict, path: Path) -> None:
    """ConfigError naming each run-defining key whose value differs from the resumed run's."""
    diffs = [f"{key}={saved_value(current, key)!r} (the run has {saved_value(saved, key)!r})"
             for key in RUN_DEFINING_KEYS if saved_value(saved, key) != saved_value(current, key)]
    # the PD damping's place changes the dynamics; runs saved before the key existed used "joint"
    if (saved_value(saved, "robot.pd_damping") or "joint") != (saved_value(current, "robot.pd_damping") or "joint"):
        diffs.append(f"robot.pd_damping={saved_value(current, 'robot.pd_damping')!r} "
                     f"(the run has {saved_value(saved, 'robot.pd_damping') or 'joint'!r})")
    # the ground and the height scan shape the dynamics and the observation; runs saved before
    # the terrain group existed were on flat ground without a scan
    saved_terrain = saved_value(saved, "terrain") or {"name": "flat"}
    terrain = saved_value(current, "terrain") or {"name": "flat"}
    diffs += [f"terrain.{key}={terrain.get(key)!r} (the run has {saved_terrain.get(key)!r})"
              for key in sorted(set(saved_terrain) | set(terrain)) if saved_terrain.get(key) != terrain.get(key)]
    if bool(saved_value(saved, "task.env.height_scan")) != bool(saved_value(current, "task.env.height_scan")):
        diffs.append(f"task.env.height_scan={bool(saved_value(current, 'task.env.height_scan'))} "
                     f"(the run has {bool(saved_value(saved, 'task.env.height_scan'))})")
    if diffs:
        raise ConfigError(f"resume=true from '{path}': {'; '.join(diffs)}. A resumed run keeps the settings "
                          "it was started with: pass the run's values (see its config.yaml) or start a new run_dir")


def resume_checkpoint_path(cfg: DictConfig, run_dir: Path) -> Path:
    resume_from = Path(resolve_path(cfg.checkpoint)) if cfg.checkpoint else run_dir / "latest.pt"
    if resume_from.is_dir():
        resume_from = resume_from / "latest.pt"
    # A resume continues (and rewrites) the checkpoint's own run: a run_dir naming another
    # folder would be silently ignored.
    if cfg.checkpoint and cfg.run_dir is not None and resume_from.parent.resolve() != run_dir.resolve():
        raise ConfigError(f"resume=true with run_dir='{run_dir}' and checkpoint='{cfg.checkpoint}' in another "
                          f"folder ('{resume_from.parent}'): a resume continues the checkpoint's own run; give "
                          "only one of them, or start a new run from its weights with resume=false")
    problem = input_file_problem(resume_from)
    if problem == "does not exist":
        raise CheckpointError(f"resume=true but there is no checkpoint at '{resume_from}' "
                              "(give run_dir=<run folder> or checkpoint=<file>)")
    if problem is not None:  # a FIFO or a folder named latest.pt is not "no checkpoint"
        raise CheckpointError(f"resume=true: checkpoint '{resume_from}' {problem}")
    return resume_from


def locate_run_dir(cfg: DictConfig) -> tuple[Path, Path | None]:
    """(run folder, checkpoint to resume from or None): a resume continues its checkpoint's run."""
    run_dir = make_run_dir(cfg)
    if not cfg.resume:
        return run_dir, None
    resume_from = resume_checkpoint_path(cfg, run_dir)
    return resume_from.parent, resume_from


def check_resume_counters(state: dict, path: Path, max_epochs: int) -> None:
    """A resume trusts the checkpoint's counters: a negative epoch would cut every logged epoch
    from metrics.jsonl, and max_epochs at or below it would only rewrite latest.pt."""
    for key in ("epoch", "global_step"):
        value = state.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CheckpointError(f"checkpoint '{path}': '{key}' is {value!r}, not a whole number >= 0; "
                                  "it was not written by this project's training, or was edited")
    if max_epochs <= state["epoch"]:
        raise ConfigError(f"resume=true from '{path}': the run is at epoch {state['epoch']} and max_epochs="
                          f"{max_epochs}; give max_epochs greater than {state['epoch']} to train further")


def prepare_run_dir(cfg: DictConfig, run_dir: Path, resume_from: Path | None, is_main: bool) -> dict | None:
    """Before anything is built: a resume reads and checks its checkpoint (returns its state),
    a new run refuses a folder holding another run, and rank 0 checks that the folder is
    writable."""
    import ase_humanoid.run_dir as run_folder

    resumed_state = None
    if resume_from is not None:
        resumed_state = load_checkpoint(resume_from, map_location=str(cfg.device))
        require_entries(resumed_state, resume_from, RESUME_ENTRIES, "to resume")
        check_resume_counters(resumed_state, resume_from, int(cfg.max_epochs))
    else:
        run_folder.refuse_existing_run(run_dir)
    if is_main:
        run_folder.check_run_paths(run_dir)  # now, not when first written after an epoch
        run_folder.check_writable(run_dir)
    return resumed_state


def repair_logs_for_resume(run_dir: Path, epoch: int, global_step: int) -> int:
    """Cut the logs back to the resumed checkpoint and drop stale temp files; returns the
    TensorBoard purge step. Logs written after the checkpoint (a resume from an older latest.pt,
    or a kill before the next save) would otherwise repeat those epochs."""
    import ase_humanoid.run_dir as run_folder

    run_folder.truncate_metrics(run_dir / "metrics.jsonl", epoch)
    run_folder.remove_stale_temp_files(run_dir)
    return global_step + 1


def train(cfg: DictConfig, rank: int = 0, world_size: int = 1) -> Path:
    from ase_humanoid.run_dir import RunFolderFootprint, hold_run_dir

    run_dir, resume_from = locate_run_dir(cfg)
    footprint = RunFolderFootprint(run_dir) if rank == 0 else None
    started = []  # set once training begins: from then on the folder is the run's
    # Rank 0 (the only writer) holds the folder for the whole run, before reading anything in it.
    try:
        with hold_run_dir(run_dir) if rank == 0 else contextlib.nullcontext():
            return train_in_run_dir(cfg, run_dir, resume_from, rank, world_size, on_start=lambda: started.append(1))
    except KeyboardInterrupt:
        if rank == 0:
            print(interrupted_message(run_dir), file=sys.stderr, flush=True)
        raise
    except AseHumanoidError:
        if footprint is not None and not started:  # refused before training: leave nothing behind
            footprint.undo()
        raise


def interrupted_message(run_dir: Path) -> str:
    """What Ctrl-C leaves: latest.pt is written atomically after every `checkpoint_every`
    epochs, so an interrupted epoch is simply done again on resume."""
    if not (run_dir / "latest.pt").exists():
        return f"interrupted before the first checkpoint: {run_dir} holds nothing to resume"
    return (f"interrupted: {run_dir / 'latest.pt'} holds the last checkpointed epoch; continue with "
            f"python train.py resume=true run_dir={shlex.quote(str(run_dir))}")


def train_in_run_dir(cfg: DictConfig, run_dir: Path, resume_from: Path | None, rank: int, world_size: int,
                     on_start=lambda: None) -> Path:
    from ase_humanoid.run_dir import write_text_atomic
    from ase_humanoid.runner import Runner
    from ase_humanoid.utils.logger import TrainingLogger

    is_main = rank == 0
    resumed_state = prepare_run_dir(cfg, run_dir, resume_from, is_main)
    start_state = None
    if resumed_state is None and cfg.checkpoint:
        start_state = load_checkpoint(resolve_path(cfg.checkpoint), str(cfg.device))
        require_entries(start_state, cfg.checkpoint, POLICY_ENTRIES, "to start from its weights")
    env = build_env(cfg, rank)
    agent = build_agent(cfg, env, rank)
    if world_size > 1:
        dist_utils.wrap_agent_for_distributed(agent)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    if resumed_state is not None:
        check_resume_config(resumed_state["config"] or {}, resolved, resume_from)
    runner = Runner(env, agent, run_dir, resolved, max_epochs=int(cfg.max_epochs),
                    save_every=int(cfg.save_every), checkpoint_every=int(cfg.checkpoint_every),
                    is_main=is_main, update_threads=int(cfg.update_threads),
                    adapt_update_threads=bool(cfg.adapt_update_threads),
                    quality_every=int(cfg.quality_every), quality_envs=int(cfg.quality_envs))
    purge_step = None
    if resumed_state is not None:
        runner.load_state_dict(resumed_state, checkpoint_path=resume_from)
        del resumed_state
        print(f"resumed from {resume_from} at epoch {runner.epoch}", flush=True)
        if is_main:
            purge_step = repair_logs_for_resume(run_dir, runner.epoch, runner.global_step)
    elif start_state is not None:
        # Start a new run from the weights of an earlier one (agent only; fresh env and counters).
        agent.load_policy_state_dict(start_state["agent"])
        del start_state
        previous_log_std = agent.apply_configured_action_std()
        if previous_log_std is not None and is_main:
            print(f"action std {math.exp(agent.config.init_log_std):.3g} (train.params.init_log_std="
                  f"{agent.config.init_log_std:g}) instead of the checkpoint's {math.exp(previous_log_std):.3g}",
                  flush=True)
    if is_main:
        write_text_atomic(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
        print(f"run folder: {run_dir}  task={cfg.task.name} algo={cfg.train.algo} robot={cfg.robot.name} "
              f"sim={cfg.sim.name} device={cfg.device} num_envs={cfg.num_envs} world_size={world_size}", flush=True)
        print(describe_profile(cfg), flush=True)
        precision = describe_update_precision(agent)
        if precision is not None:
            print(precision, flush=True)
    no_task_reward = cfg.train.algo in ("amp", "ase") and float(cfg.train.params.get("task_reward_w", 0.0) or 0.0) == 0.0
    logger = TrainingLogger(run_dir, int(cfg.max_epochs), enabled=is_main, purge_step=purge_step,
                            hidden_keys=("train/task_reward_mean",) if no_task_reward else ())
    on_start()
    try:
        runner.learn(logger)
    finally:
        logger.close()
        close = getattr(env, "close", None)
        if close is not None:
            close()
    if is_main and runner.epoch >= int(cfg.max_epochs):
        if cfg.task.name == "HumanoidASE" and cfg.train.algo == "ase" and int(cfg.final_skill_report) > 0:
            print_final_skill_report(cfg, run_dir)
        else:
            print(end_of_run_summary(cfg, run_dir, runner.epoch, runner.global_step), flush=True)
    dist_utils.shutdown()
    return run_dir


def end_of_run_summary(cfg: DictConfig, run_dir: Path, epoch: int, global_step: int) -> str:
    """What a finished run made and the commands that use it (they work when pasted)."""
    folder = shlex.quote(str(run_dir))
    lines = [f"done: {cfg.task.name} ({cfg.train.algo}) trained {epoch} epochs, {global_step:,} samples; "
             f"checkpoint {run_dir / 'latest.pt'}",
             f"  watch it:  python train.py test=true checkpoint={folder} video={cfg.task.name}.mp4",
             f"  train on:  python train.py resume=true run_dir={folder} max_epochs={2 * epoch}"]
    if cfg.train.algo == "hrl":
        lines.append(f"  measure it against random latents on its controller:  "
                     f"python benchmarks/task_policy.py {shlex.quote(str(run_dir / 'latest.pt'))} --episodes 128")
    return "\n".join(lines)


def print_final_skill_report(cfg: DictConfig, run_dir: Path) -> None:
    """At the end of ASE pre-training: the skill report of the last checkpoint (a short one,
    `final_skill_report` latents and getups) and which targets of a usable controller it meets,
    so the main command ends saying what it trained."""
    latents = int(cfg.final_skill_report)
    if latents <= 0 or cfg.task.name != "HumanoidASE" or cfg.train.algo != "ase":
        return
    from ase_humanoid.evaluate import skill_report
    from ase_humanoid.analysis.skill_report import SkillOptions, format_summary
    from ase_humanoid.analysis.skill_targets import format_usability

    test_cfg = copy.deepcopy(cfg)
    with open_dict(test_cfg):
        test_cfg.test, test_cfg.checkpoint = True, str(run_dir / "latest.pt")
    steps = int(cfg.task.env.max_episode_length)  # an episode per latent, as test=true
    print(f"measuring the controller's skills ({latents} latents x {steps} control steps, {latents} getups; "
          "benchmarks/ase_skills.py for the full report) ...", flush=True)
    try:
        report = skill_report(test_cfg, SkillOptions(num_latents=latents, steps=steps, seed=int(cfg.seed)))
    except ConfigError as err:  # e.g. a robot without a head body: the training itself is done and saved
        print(f"skill report skipped: {err}", flush=True)
        return
    print(format_summary(report), flush=True)
    print(format_usability(report), flush=True)
    print(next_step_after_pretraining(report, run_dir, int(cfg.max_epochs)), flush=True)


def next_step_after_pretraining(report: dict, run_dir: Path, max_epochs: int) -> str:
    """What to do with the controller: train a task on it only when it meets its targets; else
    continue the run (a command that works when pasted) or use a shipped controller."""
    from ase_humanoid.analysis.skill_targets import is_usable

    folder = shlex.quote(str(run_dir))
    if is_usable(report):
        return f"next: python train.py task=HumanoidHeading llc_checkpoint={folder}"
    return (f"next: this controller is not usable yet (a task trained on it inherits its falls and missing "
            f"skills); train on with python train.py resume=true run_dir={folder} max_epochs={2 * max_epochs}, "
            "or train a task on the shipped controller: python train.py task=HumanoidHeading")
