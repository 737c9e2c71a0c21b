"""Inputs that used to be accepted though wrong (issue 23, items 9-14): each is now a clear
error naming the key or file (or, for a diverging run, the epoch and the statistic)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from project_scripts import load_script

from ase_humanoid import PROJECT_ROOT
from ase_humanoid.agents import AMPConfig, PPOAgent, PPOConfig, from_dict
from ase_humanoid.envs.config import HumanoidEnvConfig, env_config_from_dict
from ase_humanoid.errors import CheckpointError, ConfigError, MotionFileError, TrainingError
from ase_humanoid.motion.bvh import load_bvh
from ase_humanoid.motion.motion_lib import MotionLib
from ase_humanoid.motion.poselib_npy import load_poselib, read_poselib_dict
from ase_humanoid.robots.description import load_robot
from ase_humanoid.runner import Runner
from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

CLIPS = PROJECT_ROOT / "motions" / "amp_humanoid"
DATA = Path(__file__).parent / "data"


# --------------------------------------------------------------- item 9: agent config floats
@pytest.mark.parametrize("cls, key, value", [
    (PPOConfig, "learning_rate", math.inf),
    (PPOConfig, "learning_rate", 2.0),
    (PPOConfig, "e_clip", math.inf),
    (PPOConfig, "grad_norm", math.inf),
    (PPOConfig, "critic_coef", -1.0),
    (PPOConfig, "adam_eps", 0.0),
    (AMPConfig, "disc_reward_w", math.nan),
    (AMPConfig, "disc_grad_penalty", -5.0),
])
def test_agent_config_refuses_non_finite_or_out_of_range_floats(cls, key, value):
    with pytest.raises(ConfigError, match=f"agent config key '{key}'"):
        from_dict(cls, {key: value})


def test_runner_stops_before_saving_when_a_loss_turns_non_finite(tmp_path):
    env = SimpleNamespace(num_envs=1)
    agent = SimpleNamespace(config=SimpleNamespace(horizon_length=1))
    runner = Runner(env, agent, tmp_path, {}, max_epochs=5, quality_every=0)
    runner.obs = torch.zeros(1)
    runner.collect_rollout = lambda: {}
    updates = iter([{"actor_loss": 0.5}, {"actor_loss": float("nan")}])
    runner.update_agent = lambda: next(updates)
    saved = []
    runner.save = lambda force=False: saved.append(runner.epoch)
    with pytest.raises(TrainingError, match=r"epoch 2: update statistic 'actor_loss' is nan"):
        runner.learn()
    assert saved == [1]  # the diverged epoch never reaches latest.pt


# ------------------------------------------------------------------- item 10: env config floats
def test_env_config_refuses_nan_termination_height():
    with pytest.raises(ConfigError, match="env config key 'termination_height': must be a finite number"):
        env_config_from_dict(HumanoidEnvConfig, {"termination_height": math.nan, "state_init": "Default"})


# -------------------------------------------------- items 11 and 13: motion files and clips
def _save_modified(tmp_path, edit, name="modified.npy") -> Path:
    content = read_poselib_dict(CLIPS / "amp_humanoid_run.npy")
    edit(content)
    path = tmp_path / name
    holder = np.empty((), dtype=object)
    holder[()] = content
    np.save(path, holder, allow_pickle=True)
    return path


def _root_far_up(content):
    content["root_translation"]["arr"][:, 2] = 1e30


def _one_frame(content):
    for key in ("rotation", "root_translation", "global_velocity", "global_angular_velocity"):
        content[key]["arr"] = content[key]["arr"][:1]


def test_reference_clip_with_root_1e30_m_up_is_refused(tmp_path):
    path = _save_modified(tmp_path, _root_far_up, "far.npy")
    with pytest.raises(MotionFileError, match=r"far\.npy: root position reaches 1e\+30 m"):
        MotionLib(path, load_robot("amp_humanoid"))


def test_one_frame_reference_clip_is_refused(tmp_path):
    path = _save_modified(tmp_path, _one_frame, "pose.npy")
    assert load_poselib(path).num_frames == 1  # readable as a pose ...
    with pytest.raises(MotionFileError, match=r"pose\.npy: clip has 1 frame\(s\).*at least 2"):
        MotionLib(path, load_robot("amp_humanoid"))  # ... but not a motion to imitate


def test_npy_with_implausible_fps_is_refused(tmp_path):
    path = _save_modified(tmp_path, lambda c: c.update(fps=1e9), "fast.npy")
    with pytest.raises(MotionFileError, match=r"fast\.npy: fps is 1e\+09, expected 1 to 1000"):
        load_poselib(path)


def test_npy_is_local_must_be_a_bool(tmp_path):
    path = _save_modified(tmp_path, lambda c: c.update(is_local="no"), "flag.npy")
    with pytest.raises(MotionFileError, match=r"flag\.npy: is_local is 'no'.*expected True or False"):
        load_poselib(path)


def test_bvh_with_a_duplicated_channel_names_joint_and_line(tmp_path):
    lines = (DATA / "131_01_first60.bvh").read_text().splitlines()
    assert lines[8].split() == ["CHANNELS", "3", "Zrotation", "Yrotation", "Xrotation"]
    lines[8] = lines[8].replace("Yrotation", "Zrotation")
    path = tmp_path / "dup.bvh"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MotionFileError, match=r"dup\.bvh: hierarchy: line 9: joint '.+' lists channel 'Zrotation' twice"):
        load_bvh(path)


# ------------------------------------------------------------ item 12: checkpoint weights
def _agent_checkpoint(tmp_path, edit) -> Path:
    agent = PPOAgent(5, 3, 2, PPOConfig(actor_units=[8], critic_units=[8], minibatch_size=8, seed=0))
    state = {"agent": agent.state_dict()}
    edit(state["agent"]["model"])
    path = tmp_path / "policy.pt"
    save_checkpoint(state, path)
    return path


def test_checkpoint_with_nan_weights_is_refused(tmp_path):
    def poison(model):
        name = next(k for k in model if k.endswith("weight"))
        model[name][0, 0] = float("nan")

    path = _agent_checkpoint(tmp_path, poison)
    with pytest.raises(CheckpointError, match=r"policy\.pt': tensor 'agent\.model\..*weight' holds NaN"):
        load_checkpoint(path)


def test_checkpoint_with_integer_weights_is_refused(tmp_path):
    def to_int(model):
        name = next(k for k in model if k.endswith("weight"))
        model[name] = model[name].round().to(torch.int64)

    path = _agent_checkpoint(tmp_path, to_int)
    with pytest.raises(CheckpointError, match=r"policy\.pt': tensor 'agent\.model\..*weight' has dtype torch\.int64"):
        load_checkpoint(path)


# ---------------------------------------------------------------- item 14: retarget --out
def _retarget_tool():
    return load_script("tools/retarget_motion.py")


def _retarget(tool, out):
    source = PROJECT_ROOT / "motions" / "mocap" / "cmu_fbx" / "09_11_cmu.fbx"
    return tool.main(["--preset", "cmu", "--source", str(source), "--out", str(out)])


def test_retarget_refuses_a_non_npy_output_name(tmp_path, capsys):
    assert _retarget(_retarget_tool(), tmp_path / "x.bvh") == 2
    assert "output must be a poselib .npy file, got suffix '.bvh'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_retarget_checks_the_output_folder_before_the_work(tmp_path, capsys, monkeypatch):
    tool = _retarget_tool()
    monkeypatch.setattr(tool, "retarget_from_settings", lambda settings: pytest.fail("retargeted before checking --out"))
    assert _retarget(tool, tmp_path / "missing" / "x.npy") == 2
    assert "does not exist" in capsys.readouterr().err
    monkeypatch.setattr("os.access", lambda path, mode: False)  # an unwritable folder (even for root)
    assert _retarget(tool, tmp_path / "x.npy") == 2
    assert "is not writable" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------- the benchmarks' own command lines
@pytest.mark.parametrize("script", ["ase_skills", "disc_slow_motion", "task_policy", "heading_errors"])
def test_a_benchmark_given_a_missing_checkpoint_says_so_without_a_traceback(script, tmp_path, capsys):
    """Run as a command (run_command), a benchmark reports a project error as `error: ...` and
    exits 2, as train.py does; the same message in-process as a CheckpointError."""
    from ase_humanoid.errors import run_command

    missing = tmp_path / "no_such_run" / "latest.pt"
    module = load_script(f"benchmarks/{script}.py")
    with pytest.raises(SystemExit) as exit_info:
        run_command(lambda: module.main([str(missing)]))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.startswith("error: ") and str(missing) in err and "Traceback" not in err


def test_run_command_exits_with_mains_status():
    from ase_humanoid.errors import run_command

    for returned, code in ((3, 3), (0, 0), (None, 0), ({"report": 1}, 0), (True, 0)):
        with pytest.raises(SystemExit) as exit_info:
            run_command(lambda value=returned: value)
        assert exit_info.value.code == code


def test_ase_skills_run_as_a_file_reports_a_missing_checkpoint(tmp_path):
    """The `if __name__ == "__main__"` path itself: the script run by Python, as a user runs it."""
    import subprocess
    import sys

    missing = tmp_path / "nothing.pt"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "ase_skills.py"), str(missing)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: checkpoint") and "Traceback" not in done.stderr
