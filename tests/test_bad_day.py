"""A bad day, continued (issue 23, items 15-17): the gymnasium entry accepts what train.py accepts
(one set of checks), user errors that were tracebacks are one-line errors naming the key or file,
and messages that misled now say what is wrong and what is valid."""

from __future__ import annotations

import os
import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from project_scripts import load_script

import ase_humanoid  # noqa: F401  (registers the gymnasium ids)
from ase_humanoid.app import run
from ase_humanoid.builders import build_env
from ase_humanoid.config import compose_config
from ase_humanoid.errors import CheckpointError, ConfigError, EnvStateError, MotionFileError
from ase_humanoid.utils import shipped_models
from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

DATA = Path(__file__).parent / "data"
FAST = dict(num_threads=1, seed=0)
SEED_ERROR = r"must be an integer from 0 to 2147483647"


def _make(task: str = "HumanoidAMP", num_envs=1, **options):
    return gymnasium.make_vec(f"ase_humanoid/{task}-v0", num_envs=num_envs, **{**FAST, **options})


def _tool(name: str):
    return load_script(f"tools/{name}.py")


# ------------------------------------------------------ item 15: the gymnasium entry's checks
def test_gym_step_before_reset_is_refused():
    env = _make()
    with pytest.raises(EnvStateError, match=r"step\(\) before reset\(\); call reset\(\) first"):
        env.step(env.action_space.sample())
    env.reset()
    env.step(env.action_space.sample())
    env.close()


def test_gym_num_envs_must_be_an_integer_as_for_train_py():
    for num_envs in ("4", 4.0, True):
        with pytest.raises(ConfigError, match=rf"config key 'num_envs' must be an integer, got {num_envs!r}"):
            _make(num_envs=num_envs)
    # train.py's own check, with the same words
    with pytest.raises(ConfigError, match=r"config key 'num_envs' must be an integer, got '4'"):
        compose_config(["num_envs='4'"])
    with pytest.raises(ConfigError, match=r"render_env_id must be an integer from 0 to 0, got '0'"):
        _make(render_env_id="0")


def test_gym_hierarchical_task_without_llc_is_built_as_train_py_builds_it(monkeypatch):
    # amp_humanoid: the shipped controller, as train.py uses it (64-d latent actions) ...
    env = _make("HumanoidHeading")
    assert env.single_action_space.shape == (64,)
    env.close()
    # ... a robot with no shipped controller: the same error from both (builders.use_shipped_llc)
    monkeypatch.delitem(shipped_models.SHIPPED_LLC, "sword_shield")
    with pytest.raises(ConfigError, match=r"needs llc_checkpoint.*no pretrained controller ships for robot "
                                          r"'sword_shield'") as from_gym:
        _make("HumanoidHeading", robot="sword_shield")
    with pytest.raises(ConfigError) as from_train:
        build_env(compose_config(["task=HumanoidHeading", "robot=sword_shield", "num_envs=1", "num_threads=1"]))
    assert str(from_gym.value) == str(from_train.value)


def test_gym_train_keyword_gives_the_flat_task():
    env = _make("HumanoidHeading", train="amp_task")
    assert env.single_action_space.shape == (28,)
    env.close()


# ------------------------------------------------------- item 16: tracebacks become errors
@pytest.mark.parametrize("seed", [-1, 2**40])
def test_seed_out_of_range_is_one_error_for_train_py_and_gymnasium(seed):
    with pytest.raises(ConfigError, match=rf"config key 'seed' {SEED_ERROR}, got {seed}"):
        compose_config([f"seed={seed}"])
    with pytest.raises(ConfigError, match=rf"config key 'seed' {SEED_ERROR}, got {seed}"):
        gymnasium.make_vec("ase_humanoid/HumanoidAMP-v0", num_envs=1, num_threads=1, seed=seed)


def test_gym_reset_seed_out_of_range_is_refused():
    env = _make()
    with pytest.raises(ConfigError, match=rf"'reset\(seed=...\)' {SEED_ERROR}, got {2**70}"):
        env.reset(seed=2**70)
    env.reset(seed=np.int64(7))  # a numpy integer is an integer
    env.close()


def test_unresolvable_interpolation_names_the_key(monkeypatch):
    monkeypatch.delenv("NOPE", raising=False)
    with pytest.raises(ConfigError, match=r"config key 'run_dir': cannot resolve '\$\{oc.env:NOPE\}'.*"
                                          r"Environment variable 'NOPE' not found"):
        compose_config(["run_dir=${oc.env:NOPE}"])


def _asf_with_root_as_child(tmp_path) -> Path:
    text = (DATA / "01.asf").read_text()
    assert "    lfemur ltibia\n" in text
    path = tmp_path / "rootchild.asf"
    path.write_text(text.replace("    lfemur ltibia\n", "    lfemur ltibia root\n"))
    return path


def test_asf_listing_root_as_a_child_is_refused(tmp_path):
    from ase_humanoid.motion.asf_amc import read_asf

    with pytest.raises(MotionFileError, match=r"rootchild\.asf: line \d+: :hierarchy lists 'root' as a child of "
                                              r"'lfemur'"):
        read_asf(_asf_with_root_as_child(tmp_path))


def test_export_with_another_robot_than_the_policy_is_a_clear_error(tmp_path, capsys):
    from ase_humanoid.agents import PPOAgent, PPOConfig

    agent = PPOAgent(5, 28, 2, PPOConfig(actor_units=[8], critic_units=[8], minibatch_size=8, seed=0))
    path = tmp_path / "amp.pt"
    save_checkpoint({"agent": agent.state_dict(), "config": {"robot": {"name": "amp_humanoid"}}}, path)
    out = tmp_path / "policy.pt"
    assert _tool("export_policy").main([str(path), "--out", str(out), "--robot", "sword_shield"]) == 2
    assert re.search(r"the policy has 28 actions but robot 'sword_shield' has \d+ actuators; give the robot the "
                     r"policy was trained on", capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize("name, make, message", [
    ("metrics.jsonl", Path.mkdir, r"'metrics.jsonl' is a folder, but the run writes it as a file"),
    ("config.yaml", Path.mkdir, r"'config.yaml' is a folder, but the run writes it as a file"),
    ("tensorboard", Path.touch, r"'tensorboard' is a file, but the run writes it as a folder"),
])
def test_resume_checks_the_run_folder_before_training(tmp_path, monkeypatch, name, make, message):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # What the resume checks read from a checkpoint; nothing of it is built before the check.
    save_checkpoint({"agent": {}, "env": {}, "epoch": 1, "global_step": 8, "rng": {}, "config": {}},
                    run_dir / "latest.pt")
    make(run_dir / name)
    monkeypatch.setattr("ase_humanoid.app.build_env", lambda *a, **k: pytest.fail("built the env before the check"))
    with pytest.raises(ConfigError, match=message):
        run(["task=HumanoidAMP", "resume=true", f"run_dir={run_dir}", "max_epochs=3", "num_envs=1", "num_threads=1"])


def test_a_run_dir_that_is_a_file_says_so(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("mine")
    with pytest.raises(ConfigError, match=r"run_dir '.*notes\.txt' is a file, not a folder"):
        run(["task=HumanoidAMP", f"run_dir={path}", "max_epochs=1", "num_envs=1", "num_threads=1"])
    assert path.read_text() == "mine"


def test_gym_use_after_close_is_refused():
    env = _make()
    env.reset(seed=0)
    env.close()
    for call in (lambda: env.step(env.action_space.sample()), lambda: env.reset(), env.render):
        with pytest.raises(EnvStateError, match=r"on a closed HumanoidVectorEnv"):
            call()


# ---------------------------------------------------------- item 17: messages that misled
def _not_a_file(tmp_path, kind: str, name: str) -> tuple[Path, str]:
    """(path, what the error must call it) for a FIFO, a link to /dev/zero or a folder."""
    path = tmp_path / name
    if kind == "fifo":
        os.mkfifo(path)
        return path, "is a FIFO"
    if kind == "zero":
        path.symlink_to("/dev/zero")
        return path, r"is a character device \(a link to '/dev/zero'\)"
    path.mkdir()
    return path, "is a folder, not a file"


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder"])
def test_an_input_that_is_not_a_regular_file_is_said_to_be_what_it_is(tmp_path, kind):
    from ase_humanoid.motion.bvh import load_bvh
    from ase_humanoid.motion.dataset import read_motion_entries
    from ase_humanoid.motion.retarget_settings import load_retarget_settings

    path, what = _not_a_file(tmp_path, kind, "clip.npy")
    with pytest.raises(MotionFileError, match=rf"motion file '.*{path.name}' {what}"):
        read_motion_entries(path)  # motion_file=
    bvh, what = _not_a_file(tmp_path, kind, "take.bvh")
    with pytest.raises(MotionFileError, match=rf"{bvh.name}: motion file {what}"):
        load_bvh(bvh)  # read without blocking on the FIFO or reading /dev/zero forever
    settings, what = _not_a_file(tmp_path, kind, "settings.yaml")
    with pytest.raises(ConfigError, match=rf"retarget config '.*{settings.name}' {what}"):
        load_retarget_settings(settings)
    if kind != "folder":  # a folder is a run folder for checkpoints: tested below
        checkpoint, what = _not_a_file(tmp_path, kind, "policy.pt")
        with pytest.raises(CheckpointError, match=rf"checkpoint '.*{checkpoint.name}' {what}"):
            load_checkpoint(checkpoint)
        with pytest.raises(CheckpointError, match=rf"resume=true: checkpoint '.*{checkpoint.name}' {what}"):
            run(["task=HumanoidAMP", "resume=true", f"checkpoint={checkpoint}", "num_envs=1", "num_threads=1"])


def test_a_folder_given_as_checkpoint_says_it_has_no_latest_pt(tmp_path):
    with pytest.raises(CheckpointError, match=r"is a folder with no latest\.pt in it"):
        load_checkpoint(tmp_path)


def _bvh_with(tmp_path, edit, name: str) -> Path:
    lines = (DATA / "131_01_first60.bvh").read_text().splitlines()
    edit(lines)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bvh_with_an_implausible_frame_time_names_the_file(tmp_path):
    from ase_humanoid.motion.bvh import load_bvh

    def tiny_frame_time(lines):
        index = next(i for i, line in enumerate(lines) if line.startswith("Frame Time:"))
        lines[index] = "Frame Time: 1e-300"

    path = _bvh_with(tmp_path, tiny_frame_time, "fast.bvh")
    with pytest.raises(MotionFileError, match=r"fast\.bvh: Frame Time is 1e-300 s \(1e\+300 fps\); expected a frame "
                                              r"rate from 1 to 1000 fps"):
        load_bvh(path)


def test_bvh_with_huge_values_names_the_file_and_frame(tmp_path):
    from ase_humanoid.motion.bvh import load_bvh

    def huge_root(lines):
        index = next(i for i, line in enumerate(lines) if line.startswith("Frame Time:")) + 1
        values = lines[index].split()
        lines[index] = " ".join(["1e308", *values[1:]])

    path = _bvh_with(tmp_path, huge_root, "huge.bvh")
    with pytest.raises(MotionFileError, match=r"huge\.bvh: frame 1 \(line \d+\) channel 1 is 1e\+308; values must "
                                              r"be within \+-1e\+06"):
        load_bvh(path)

    def huge_offset(lines):
        index = next(i for i, line in enumerate(lines) if line.strip().startswith("OFFSET"))
        lines[index] = "  OFFSET 1e308 0 0"

    path = _bvh_with(tmp_path, huge_offset, "far.bvh")
    with pytest.raises(MotionFileError, match=r"far\.bvh: hierarchy: OFFSET of '.+' is 1e\+308; values must be within"):
        load_bvh(path)


def test_a_run_dir_with_spaces_and_brackets_is_taken_as_a_path(tmp_path):
    for name in ("my runs", "run (1)", "a,b", "it's"):
        assert compose_config([f"run_dir={tmp_path / name}"]).run_dir == str(tmp_path / name)
    # other keys: a parse error names the key and shows the quoted form
    with pytest.raises(ConfigError, match=r"config key 'task.env.state_init'.*must be quoted for Hydra: "
                                          r"task.env.state_init='a \(b\)'"):
        compose_config(["task=HumanoidAMP", "task.env.state_init=a (b)"])
    # a value the shell split in two: say to quote the whole argument
    with pytest.raises(ConfigError, match=r"override 'runs'' is not of the form key=value.*quote the whole argument"):
        compose_config(["run_dir='my", "runs'"])


@pytest.mark.parametrize("content, message", [
    (b"hello world\n", r"is not a torch checkpoint: it starts with text 'hello world\\n'"),
    (b"e", r"is not a torch checkpoint: it starts with text 'e'"),
    (b"", r"is empty \(0 bytes\)"),
])
def test_a_text_or_empty_pt_file_says_so(tmp_path, content, message):
    path = tmp_path / "policy.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=rf"policy\.pt' {message}"):
        load_checkpoint(path)


def test_hrl_on_a_task_that_is_not_hierarchical_says_so():
    with pytest.raises(ConfigError, match=r"train=hrl: task HumanoidAMP is not hierarchical.*hierarchical tasks: "
                                          r"HumanoidHeading, HumanoidLocation, HumanoidReach, HumanoidStrike; "
                                          r"HumanoidAMP trains with train=amp"):
        compose_config(["task=HumanoidAMP", "train=hrl"])


def test_gymnasium_make_points_to_make_vec():
    with pytest.raises(ConfigError, match=r"is a batched vector env: build it with "
                                          r"gymnasium.make_vec\('ase_humanoid/HumanoidAMP-v0', num_envs=N"):
        gymnasium.make("ase_humanoid/HumanoidAMP-v0")


def test_tools_exit_2_on_a_user_error(tmp_path, capsys):
    # retarget_motion: an ASF error (was a KeyError traceback, exit 1)
    amc = DATA / "01_01_first60.amc"
    args = ["--preset", "cmu", "--source", str(amc), "--asf", str(_asf_with_root_as_child(tmp_path)),
            "--out", str(tmp_path / "out.npy")]
    assert _tool("retarget_motion").main(args) == 2
    assert ":hierarchy lists 'root' as a child" in capsys.readouterr().err
    # ship_model: a bad name (was exit 1)
    assert _tool("ship_model").main([str(tmp_path), "--name", "bad name", "--metrics", "m.json", "--hours", "1",
                                     "--command", "x", "--out", str(tmp_path / "shipped")]) == 2
    assert "--name 'bad name'" in capsys.readouterr().err
