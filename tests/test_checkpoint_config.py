"""A run's config takes what its checkpoint was trained with (ase_humanoid/checkpoint_config.py),
read before composing so that the command line is composed once, on the checkpoint's task."""

from __future__ import annotations

import pytest

from ase_humanoid.checkpoint_config import compose_run_config
from ase_humanoid.errors import ConfigError
from ase_humanoid.paths import PROJECT_ROOT
from ase_humanoid.utils.checkpoint import load_checkpoint, load_checkpoint_config

HEADING = PROJECT_ROOT / "pretrained" / "heading_amp_humanoid.pt"
SWORD_HEADING = PROJECT_ROOT / "pretrained" / "heading_sword_shield.pt"


def test_a_key_of_the_checkpoints_task_needs_no_task(capsys):
    cfg = compose_run_config(["test=true", f"checkpoint={HEADING}", "task.env.target_speed_min=1.0"])
    assert cfg.task.name == "HumanoidHeading" and cfg.task.env.target_speed_min == 1.0
    # only what differs from the command line alone is said: the robot is the default one
    assert capsys.readouterr().err.startswith(f"task=HumanoidHeading: as {HEADING} was trained")


@pytest.mark.parametrize("spelling", ["true", "True", "yes", "1"])
def test_test_true_in_any_spelling_omegaconf_reads_as_true(spelling):
    cfg = compose_run_config([f"test={spelling}", f"checkpoint={SWORD_HEADING}"])
    assert (cfg.task.name, cfg.robot.name) == ("HumanoidHeading", "sword_shield")


def test_explicit_choices_are_kept_and_other_tasks_keys_still_refused(capsys):
    cfg = compose_run_config(["test=true", f"checkpoint={SWORD_HEADING}", "task=HumanoidLocation"])
    assert (cfg.task.name, cfg.robot.name) == ("HumanoidLocation", "sword_shield")
    assert capsys.readouterr().err.startswith("robot=sword_shield: as")
    with pytest.raises(ConfigError, match="unknown config key 'task.env.target_speed_min'"):
        compose_run_config(["test=true", f"checkpoint={SWORD_HEADING}", "task=HumanoidLocation",
                            "task.env.target_speed_min=1.0"])


def test_without_a_checkpoint_nothing_is_adopted(capsys):
    cfg = compose_run_config(["task=HumanoidAMP", "test=false", f"llc_checkpoint={SWORD_HEADING}"])
    assert cfg.robot.name == "sword_shield"  # a run on an LLC takes its robot, even for a flat task
    assert compose_run_config(["task=HumanoidAMP"]).robot.name == "amp_humanoid"
    capsys.readouterr()
    compose_run_config(["test=true", "task=HumanoidAMP"])  # test=true with no checkpoint: load_policy says so
    assert capsys.readouterr().err == ""


def test_the_config_is_read_without_the_weights():
    assert load_checkpoint_config(HEADING) == load_checkpoint(HEADING)["config"]


def test_resume_keeps_the_runs_task_env_settings(capsys):
    """task.env.* overrides given when a run started hold when it resumes (the shipped getup
    controller was trained with getup_reward, fall_init_prob 0.3 and recovery_steps 90); one the
    command line gives is kept, and another task's run adopts none."""
    getup = PROJECT_ROOT / "pretrained" / "ase_llc_amp_humanoid_getup.pt"
    cfg = compose_run_config(["resume=true", f"checkpoint={getup}", "task.env.recovery_steps=60"])
    env = cfg.task.env
    assert (env.getup_reward, env.fall_init_prob, env.recovery_steps) == (True, 0.3, 60)
    assert cfg.train.params.task_reward_w == 2.0
    said = capsys.readouterr().err
    assert "task.env.getup_reward=True" in said and "task.env.recovery_steps" not in said
    other = compose_run_config(["resume=true", f"checkpoint={getup}", "task=HumanoidAMP"])
    assert "getup_reward" not in other.task.env


def test_resume_keeps_the_runs_pd_damping(tmp_path, capsys):
    """robot.pd_damping given when a run started holds when it resumes (the PD law is the run's
    physics); one the command line gives is kept (check_resume_config then refuses a change),
    and a run saved before the key existed resumes with joint damping."""
    from ase_humanoid.utils.checkpoint import save_checkpoint

    state = load_checkpoint(PROJECT_ROOT / "pretrained" / "ase_llc_amp_humanoid_getup.pt")
    state["config"]["robot"]["pd_damping"] = "joint"  # not the default (drive_implicit)
    save_checkpoint(state, tmp_path / "latest.pt")
    cfg = compose_run_config(["resume=true", f"run_dir={tmp_path}"])
    assert cfg.robot.pd_damping == "joint"
    assert "robot.pd_damping=joint" in capsys.readouterr().err
    cfg = compose_run_config(["resume=true", f"run_dir={tmp_path}", "robot.pd_damping=drive_implicit"])
    assert cfg.robot.pd_damping == "drive_implicit"  # the command line's, refused later by the resume check
    del state["config"]["robot"]["pd_damping"]
    save_checkpoint(state, tmp_path / "latest.pt")
    assert compose_run_config(["resume=true", f"run_dir={tmp_path}"]).robot.pd_damping == "joint"


def test_resume_keeps_the_task_default_data_the_run_started_with(tmp_path, capsys):
    """HumanoidASE's default dataset changed (six clips -> every clip, 2026-12-07): a run that
    started on the old default resumes on it, and evaluating a shipped model uses its own."""
    from ase_humanoid.builders import motion_file_for
    from ase_humanoid.config import trained_motion_file
    from ase_humanoid.utils.checkpoint import save_checkpoint

    state = load_checkpoint(PROJECT_ROOT / "pretrained" / "ase_llc_amp_humanoid_getup.pt")
    assert state["config"]["motion_file"] is None
    assert trained_motion_file(state["config"]) == "motions/dataset_amp_humanoid_all.yaml"
    save_checkpoint(state, tmp_path / "latest.pt")
    cfg = compose_run_config(["resume=true", f"run_dir={tmp_path}"])
    assert motion_file_for(cfg).endswith("motions/dataset_amp_humanoid_all.yaml")
    assert "motion_file=motions/dataset_amp_humanoid_all.yaml" in capsys.readouterr().err
    cfg = compose_run_config(["resume=true", f"run_dir={tmp_path}", "motion_file=motions/amp_humanoid/amp_humanoid_walk.npy"])
    assert motion_file_for(cfg).endswith("amp_humanoid_walk.npy")  # given: kept (the resume check refuses it later)
    fresh = compose_run_config(["task=HumanoidASE"])
    assert motion_file_for(fresh).endswith("motions/datasets/amp_humanoid_all.yaml")
