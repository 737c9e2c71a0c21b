"""Hostile and careless inputs (issue 13): unsafe checkpoints, fault counters, run folders that
must not be overwritten, resumed logs, bad configs and paths. Each case is a clear error naming
the file or key, or (for faults during training) a counter in the logs."""

import json
import os
from pathlib import Path

import pytest
import torch
from omegaconf import open_dict
from project_scripts import load_script

from ase_humanoid.builders import build_agent, build_env
from ase_humanoid.config import compose_config
from ase_humanoid.errors import CheckpointError, ConfigError
from ase_humanoid.runner import Runner
from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

SMALL = ["train.params.amp_obs_demo_buffer_size=1024", "train.params.amp_replay_buffer_size=1024",
         "train.params.actor_units=[32,32]", "train.params.critic_units=[32,32]",
         "train.params.disc_units=[32,32]", "train.params.mini_epochs=1", "train.params.horizon_length=4",
         "quality_every=0", "final_skill_report=0"]


class _RunsShell:
    """A pickled object whose unpickling runs a shell command (the classic pickle exploit)."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def _malicious_checkpoint(path: Path, marker: Path) -> Path:
    torch.save({"format": "ase_humanoid/1", "agent": _RunsShell(f"touch {marker}")}, path)
    return path


# ------------------------------------------------------------------ checkpoints cannot run code
def test_checkpoint_with_pickled_os_system_is_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"
    path = _malicious_checkpoint(tmp_path / "evil.pt", marker)
    with pytest.raises(CheckpointError, match="evil.pt.*could run code"):
        load_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize("key", ["test", "checkpoint", "llc_checkpoint", "resume"])
def test_train_paths_refuse_a_planted_checkpoint(tmp_path, key):
    from ase_humanoid.app import run

    marker = tmp_path / "pwned"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    evil = _malicious_checkpoint(run_dir / "latest.pt", marker)
    if key == "resume":
        args = ["task=HumanoidAMP", f"run_dir={run_dir}", "resume=true"]
    elif key == "llc_checkpoint":
        args = ["task=HumanoidHeading", f"llc_checkpoint={evil}", f"run_dir={tmp_path / 'new'}"]
    elif key == "checkpoint":  # a new run starting from the file's weights
        args = ["task=HumanoidAMP", f"checkpoint={evil}", f"run_dir={tmp_path / 'new'}"]
    else:
        args = ["task=HumanoidAMP", f"checkpoint={evil}", "test=true"]
    with pytest.raises(CheckpointError, match="could run code"):
        run([*args, "num_envs=2", "max_epochs=1", *(SMALL if key != "llc_checkpoint" else [])])
    assert not marker.exists()


def test_saved_checkpoint_is_plain_data_and_restores_rng(tmp_path):
    import random

    import numpy as np

    from ase_humanoid.runner import rng_state, set_rng_state

    np.random.seed(5)
    random.seed(5)
    save_checkpoint({"rng": rng_state(), "array": np.arange(3.0), "scalar": np.float32(2.5)}, tmp_path / "a.pt")
    expected = (np.random.rand(3), random.random())
    state = torch.load(tmp_path / "a.pt", weights_only=True)  # raises on anything but plain data
    assert torch.equal(state["array"], torch.arange(3.0, dtype=torch.float64)) and state["scalar"] == 2.5
    set_rng_state(state["rng"])
    assert np.array_equal(np.random.rand(3), expected[0]) and random.random() == expected[1]


def test_getup_reward_without_its_weight_is_a_config_error(tmp_path):
    """The getup reward reaches the ASE agent only through task_reward_w (0 in cfg/train/ase.yaml):
    switched on with the weight left at 0 it would do nothing, so it is an error naming both keys."""
    cfg = compose_config(["task=HumanoidASE", "num_envs=2", f"run_dir={tmp_path / 'run'}", *SMALL,
                          "task.env.getup_reward=true", "task.env.fall_pool_size=2", "task.env.fall_steps=5"])
    env = build_env(cfg)
    try:
        with pytest.raises(ConfigError, match="task.env.getup_reward.*train.params.task_reward_w"):
            build_agent(cfg, env)
        with open_dict(cfg):
            cfg.train.params.task_reward_w = 0.5
        assert build_agent(cfg, env).config.task_reward_w == 0.5
    finally:
        env.close()
    # the same when only a later phase turns it on
    cfg = compose_config(["task=HumanoidASE", "num_envs=2", f"run_dir={tmp_path / 'run'}", *SMALL,
                          "task.env.phases=[{from_epoch:100,getup_reward:true}]", "train.params.task_reward_w=0",
                          "task.env.fall_pool_size=2", "task.env.fall_steps=5"])
    env = build_env(cfg)
    try:
        with pytest.raises(ConfigError, match=r"task.env.getup_reward=true \(or in task.env.phases\)"):
            build_agent(cfg, env)
    finally:
        env.close()


# ------------------------------------------------------------------ fault counters
def _small_amp(tmp_path, *extra):
    cfg = compose_config(["task=HumanoidAMP", "num_envs=4", f"run_dir={tmp_path / 'run'}", *SMALL, *extra])
    env = build_env(cfg)
    return cfg, env, build_agent(cfg, env)


def test_nan_actions_are_counted_and_do_not_reach_the_physics(tmp_path):
    _, env, _ = _small_amp(tmp_path)
    env.reset()
    actions = torch.zeros(env.num_envs, env.num_actions)
    actions[1, 3] = float("nan")
    actions[2] = float("inf")
    env.step(actions)
    assert int(env.nonfinite_actions) == 2
    # The zeroed NaN row drives the humanoid like a zero action (PD target at the offset).
    assert torch.isfinite(env.pd_targets).all()
    assert torch.allclose(env.pd_targets[1], env.pd_targets[0])


def test_fault_counters_reach_metrics_and_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from ase_humanoid.errors import TrainingError
    from ase_humanoid.utils.logger import TrainingLogger

    cfg, env, agent = _small_amp(tmp_path)
    with torch.no_grad():  # a diverged policy: every action NaN
        agent.actor.mu.bias.fill_(float("nan"))
    env.nonfinite_resets = 3  # as if three worlds had blown up earlier in the run
    run_dir = tmp_path / "run"
    runner = Runner(env, agent, run_dir, {}, max_epochs=1, quality_every=0)
    logger = TrainingLogger(run_dir, 1)
    with pytest.raises(TrainingError, match="epoch 1"):  # NaN losses stop the run (issue 23, item 9) ...
        runner.learn(logger)
    logger.close()
    assert not (run_dir / "latest.pt").exists()  # ... before the NaN weights are saved
    metrics = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])  # ... after logging
    assert metrics["env/nonfinite_resets"] >= 3
    assert metrics["env/nonfinite_actions"] == 4 * 4  # 4 envs x 4 steps
    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    assert "env/nonfinite_actions" in events.Tags()["scalars"]
    assert "env/nonfinite_resets" in events.Tags()["scalars"]


# ------------------------------------------------------------------ run folders
def _train(run_dir, *extra):
    from ase_humanoid.app import run

    run(["task=HumanoidAMP", "num_envs=4", "max_epochs=1", f"run_dir={run_dir}", *SMALL, *extra])


@pytest.fixture(scope="module")
def amp_run(tmp_path_factory):
    """One finished 1-epoch AMP run, shared by the tests that only read it."""
    run_dir = tmp_path_factory.mktemp("amp") / "run"
    _train(run_dir)
    return run_dir


def test_new_run_refuses_an_existing_run_dir(amp_run):
    from ase_humanoid.errors import ConfigError

    before = (amp_run / "latest.pt").read_bytes(), (amp_run / "metrics.jsonl").read_text()
    with pytest.raises(ConfigError, match="already holds a run.*resume=true"):
        _train(amp_run)
    assert ((amp_run / "latest.pt").read_bytes(), (amp_run / "metrics.jsonl").read_text()) == before


def test_unwritable_run_dir_fails_before_building_anything(tmp_path):
    from ase_humanoid.errors import ConfigError

    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match="run_dir '.*a_file/run' is not writable"):
        _train(blocker / "run")


def test_resume_from_an_older_checkpoint_does_not_repeat_logged_epochs(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    _train(run_dir, "checkpoint_every=1")
    older = (run_dir / "latest.pt").read_bytes()  # epoch 1
    _train(run_dir, "checkpoint_every=1", "resume=true", "max_epochs=3")
    (run_dir / "latest.pt").write_bytes(older)  # e.g. the user restores a backup
    stale = run_dir / ".latest.pt.k1ll3d00.tmp"  # what a kill during a checkpoint write leaves
    stale.write_bytes(b"partial")
    _train(run_dir, "checkpoint_every=1", "resume=true", "max_epochs=3")
    epochs = [json.loads(line)["epoch"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [1, 2, 3]
    assert not stale.exists()
    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    steps = [e.step for e in events.Scalars("perf/samples_per_s")]
    assert steps == sorted(set(steps)) and len(steps) == 3


def test_truncate_metrics_drops_later_epochs_and_a_torn_line(tmp_path):
    from ase_humanoid.run_dir import truncate_metrics

    path = tmp_path / "metrics.jsonl"
    path.write_text('{"epoch": 1}\n{"epoch": 2}\n{"epoch": 3}\n{"epo')
    assert truncate_metrics(path, 2) == 2
    assert path.read_text() == '{"epoch": 1}\n{"epoch": 2}\n'


@pytest.mark.parametrize("override, key", [("train.params.horizon_length=8", "train.params.horizon_length"),
                                           ("motion_file=motions/amp_humanoid/amp_humanoid_run.npy", "motion_file"),
                                           ("num_envs=2", "num_envs")])
def test_resume_with_a_changed_run_key_is_refused(tmp_path, override, key):
    from ase_humanoid.errors import ConfigError

    run_dir = tmp_path / "run"
    _train(run_dir)
    config_before = (run_dir / "config.yaml").read_text()
    with pytest.raises(ConfigError, match=rf"resume=true from .*latest.pt.*{key}="):
        _train(run_dir, "resume=true", "max_epochs=2", override)
    assert (run_dir / "config.yaml").read_text() == config_before


def test_resume_alone_continues_the_run_as_it_was_started(tmp_path, capsys):
    # resume=true run_dir=<run> with none of the run's task, motion file, batch or terrain (with
    # its own terrain.* keys) given: they come from the checkpoint, and the run goes on to its
    # own max_epochs, not the default's, with its own training settings
    from ase_humanoid.app import run
    from ase_humanoid.errors import ConfigError

    run_dir = tmp_path / "run"
    started = ["task=HumanoidAMP", "num_envs=2", "motion_file=motions/amp_humanoid/amp_humanoid_run.npy",
               "terrain=rough", "terrain.num_rows=2", "terrain.rough_amplitude=0.05", "num_threads=1"]
    run([*started, "max_epochs=1", f"run_dir={run_dir}", "train.params.learning_rate=0.001", *SMALL])
    capsys.readouterr()
    run(["resume=true", f"run_dir={run_dir}", "max_epochs=2", "num_threads=1", *SMALL])
    assert ("task=HumanoidAMP terrain=rough motion_file=motions/amp_humanoid/amp_humanoid_run.npy num_envs=2 "
            f"train.params.learning_rate=0.001: as {run_dir} was trained") in capsys.readouterr().err
    state = load_checkpoint(run_dir / "latest.pt")
    assert state["epoch"] == 2 and state["config"]["train"]["params"]["learning_rate"] == 0.001
    assert state["config"]["terrain"]["num_rows"] == 2 and state["config"]["terrain"]["rough_amplitude"] == 0.05
    with pytest.raises(ConfigError, match="at epoch 2 and max_epochs=2; give max_epochs greater than 2"):
        run(["resume=true", f"run_dir={run_dir}", "num_threads=1", *SMALL])


def test_resume_alone_continues_a_flat_task_run_with_its_own_algorithm(tmp_path, capsys):
    # A task trained flat (train=amp_task) resumes as AMP with its task reward weights, not with
    # the task's default hierarchical training (which wanted an ASE controller in its checkpoint)
    from ase_humanoid.app import run

    run_dir = tmp_path / "run"
    run(["task=HumanoidHeading", "train=amp_task", "num_envs=2", "max_epochs=1", "num_threads=1",
         f"run_dir={run_dir}", *SMALL])
    capsys.readouterr()
    run(["resume=true", f"run_dir={run_dir}", "max_epochs=2", "num_threads=1", *SMALL])
    said = capsys.readouterr().err
    assert "task=HumanoidHeading" in said and "train=amp " in said, said
    state = load_checkpoint(run_dir / "latest.pt")
    assert state["epoch"] == 2 and state["config"]["train"]["algo"] == "amp"
    assert state["config"]["train"]["params"]["task_reward_w"] == 0.5


# ------------------------------------------------------------------ checkpoints and config keys
@pytest.mark.parametrize("mode", ["test", "checkpoint", "resume"])
def test_checkpoint_without_agent_is_a_checkpoint_error(tmp_path, mode):
    from ase_humanoid.app import run

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    save_checkpoint({"format": "ase_humanoid/1", "epoch": 3}, run_dir / "latest.pt")
    args = {"test": ["test=true", f"checkpoint={run_dir}"],
            "checkpoint": [f"checkpoint={run_dir}", f"run_dir={tmp_path / 'new'}"],
            "resume": ["resume=true", f"run_dir={run_dir}"]}[mode]
    with pytest.raises(CheckpointError, match="has no 'agent'"):
        run(["task=HumanoidAMP", "num_envs=2", *SMALL, *args])


def test_evaluating_on_another_task_warns(amp_run, capsys):
    from ase_humanoid.app import run

    run(["task=HumanoidASE", "test=true", f"checkpoint={amp_run}", "num_envs=2", "test_episodes=1",
         "task.env.max_episode_length=5", *SMALL])
    err = capsys.readouterr().err
    assert "trained on task=HumanoidAMP" in err and "on task=HumanoidASE" in err


@pytest.mark.parametrize("override, message", [
    ("device=tpu", "'device': 'tpu' is not one of auto, cpu, cuda, cuda:N"),
    ("checkpoint_every=0", "'checkpoint_every' must be an integer >= 1"),
    ("test_episodes=0", "'test_episodes' must be an integer >= 1"),
    ("save_every=-1", "'save_every' must be an integer >= 0"),
    ("video_seconds=0", "'video_seconds' must be a positive number"),
])
def test_bad_run_keys_are_config_errors(override, message):
    from ase_humanoid.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        compose_config(["task=HumanoidAMP", override])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_cuda_device_without_cuda_is_a_config_error():
    from ase_humanoid.errors import ConfigError

    with pytest.raises(ConfigError, match="'device': 'cuda' but torch sees no CUDA GPU"):
        compose_config(["task=HumanoidAMP", "device=cuda"])


def test_video_in_a_missing_folder_is_refused_without_creating_it(amp_run, tmp_path):
    from ase_humanoid.app import run
    from ase_humanoid.errors import ConfigError

    video = tmp_path / "no" / "such" / "folder" / "out.mp4"
    with pytest.raises(ConfigError, match="'video': folder .*folder' does not exist"):
        run(["task=HumanoidAMP", "test=true", f"checkpoint={amp_run}", f"video={video}", "num_envs=2", *SMALL])
    assert not (tmp_path / "no").exists()


# ------------------------------------------------------------------ hostile motion files
WALK = Path(__file__).resolve().parents[1] / "motions" / "amp_humanoid" / "amp_humanoid_walk.npy"


class _PeakMemory:
    """Peak Python + numpy allocation (MB) inside the block, via tracemalloc."""

    def __enter__(self):
        import tracemalloc

        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        import tracemalloc

        self.mb = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + k)}: &{chr(98 + k)} [{', '.join([f'*{chr(97 + k)}'] * 9)}]\n" for k in range(8)) + "motions: [*i]\n"

DATASET_CASES = {
    "binary": (b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 50, "not a text \\(UTF-8\\) dataset YAML"),
    "deep": (b"motions: " + b"[" * 50_000 + b"]" * 50_000, "malformed YAML: collections nested more than 64 deep"),
    "deep_block": (b"motions:\n" + b"- " * 50_000 + b"x\n", "malformed YAML: collections nested more than 64 deep"),
    "laughs": (BILLION_LAUGHS.encode(), r"motions\[0\] must be a mapping"),
    "huge_weight": (f"motions:\n  - {{file: {WALK}, weight: 1e308}}\n".encode(), r"weight must be a finite number >= 0 and <= 1e\+12"),
    "huge_int_weight": (f"motions:\n  - {{file: {WALK}, weight: 1{'0' * 400}}}\n".encode(), "weight must be a finite number"),
}


@pytest.mark.parametrize("case", sorted(DATASET_CASES))
def test_hostile_dataset_yaml_is_a_short_motion_file_error(tmp_path, case):
    from ase_humanoid.errors import MotionFileError
    from ase_humanoid.motion.dataset import read_motion_entries

    content, message = DATASET_CASES[case]
    path = tmp_path / f"{case}.yaml"
    path.write_bytes(content)
    with _PeakMemory() as memory, pytest.raises(MotionFileError, match=message) as info:
        read_motion_entries(path)
    assert str(path) in str(info.value) and len(str(info.value)) < 2000
    assert memory.mb < 100


def test_dataset_weight_in_e_notation_without_a_dot_is_a_number(tmp_path):
    from ase_humanoid.motion.dataset import read_motion_entries

    path = tmp_path / "data.yaml"
    path.write_text(f"motions:\n  - {{file: {WALK}, weight: 1e-3}}\n  - {{file: {WALK}, weight: '2'}}\n")
    assert [e.weight for e in read_motion_entries(path)] == [0.001, 2.0]


def test_bvh_with_a_3000_level_hierarchy_is_a_motion_file_error(tmp_path):
    from ase_humanoid.errors import MotionFileError
    from ase_humanoid.motion.bvh import load_bvh

    depth = 3000
    lines = ["HIERARCHY", "ROOT j0", "{", "OFFSET 0 0 0", "CHANNELS 3 Zrotation Xrotation Yrotation"]
    for k in range(1, depth):
        lines += [f"JOINT j{k}", "{", "OFFSET 0 0 1", "CHANNELS 3 Zrotation Xrotation Yrotation"]
    lines += ["}"] * depth + ["MOTION", "Frames: 1", "Frame Time: 0.033333", " ".join(["0"] * 3 * depth)]
    path = tmp_path / "deep.bvh"
    path.write_text("\n".join(lines))
    with pytest.raises(MotionFileError, match="deep.bvh: hierarchy: joints nest deeper than 256"):
        load_bvh(path)


class _Call:
    """Pickles as `func(*args)` (then `__setstate__(state)` when state is given)."""

    def __init__(self, func, args, state=None):
        self.func, self.args, self.state = func, args, state

    def __reduce__(self):
        return (self.func, self.args) if self.state is None else (self.func, self.args, self.state)


def _npy_with_pickle(path: Path, payload) -> Path:
    import io as io_module
    import pickle

    import numpy as np

    header = io_module.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "|O", "fortran_order": False, "shape": ()})
    path.write_bytes(header.getvalue() + pickle.dumps(payload, protocol=2))
    return path


def _hostile_npy_payloads():
    import numpy as np
    from numpy._core.multiarray import _reconstruct

    empty = (np.ndarray, (0,), b"b")
    return {
        "bytearray": _Call(bytearray, (600_000_000,)),
        "bytes": _Call(bytes, (600_000_000,)),
        "range_list": [_Call(list, (_Call(range, (100_000_000,)),))],
        "huge_shape": _Call(_reconstruct, (np.ndarray, (600_000_000,), b"b")),
        "object_array_short_list": _Call(_reconstruct, empty, (1, (100_000,), np.dtype(object), False, [1])),
        "data_shorter_than_shape": _Call(_reconstruct, empty, (1, (600_000_000,), np.dtype(np.uint8), False, b"x")),
        "shell": _Call(os.system, ("echo pwned",)),
    }


@pytest.mark.parametrize("case", sorted(_hostile_npy_payloads()))
def test_hostile_poselib_npy_is_refused_with_bounded_memory(tmp_path, case):
    from ase_humanoid.errors import MotionFileError
    from ase_humanoid.motion.poselib_npy import load_poselib

    path = _npy_with_pickle(tmp_path / f"{case}.npy", _hostile_npy_payloads()[case])
    assert path.stat().st_size < 400
    with _PeakMemory() as memory, pytest.raises(MotionFileError, match=f"{case}.npy"):
        load_poselib(path)
    assert memory.mb < 10


# ------------------------------------------------------------------ playback tool
def _play_motion_main():
    return load_script("tools/play_motion.py").main


@pytest.mark.parametrize("options, message", [
    (["--fps", "0"], "--fps must be in"),
    (["--width", "0"], "--width must be an integer from 16"),
    (["--height", "100000"], "--height must be an integer from 16"),
    (["--seconds", "-1"], "--seconds must be positive"),
])
def test_play_motion_bad_options_are_clear_errors(tmp_path, capsys, options, message):
    out = tmp_path / "clip.mp4"
    assert _play_motion_main()([str(WALK), "--video", str(out), *options]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "wrote" not in captured.out
    assert not out.exists()


def test_play_motion_unwritable_video_path_is_a_clear_error(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    assert _play_motion_main()([str(WALK), "--video", str(blocker / "clip.mp4")]) == 2
    assert "does not exist" in capsys.readouterr().err


# Runs in a child process: a file-size limit in pytest's own process would also fail pytest's
# writes to a redirected stdout (CI logs) while the test runs.
FULL_DISK_SCRIPT = """
import resource, signal, sys
from pathlib import Path
from ase_humanoid.errors import ConfigError
from ase_humanoid.run_dir import check_writable, write_text_atomic

tmp = Path(sys.argv[1])
config = tmp / "config.yaml"
config.write_text("seed: 1\\n")
# Writes beyond 1 KB fail with EFBIG, as on a full disk (SIGXFSZ ignored: an error, not a kill).
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    write_text_atomic(config, "x" * 100_000)
    sys.exit("write_text_atomic did not fail")
except OSError:
    pass
assert config.read_text() == "seed: 1\\n", config.read_text()
assert [p.name for p in tmp.iterdir()] == ["config.yaml"], list(tmp.iterdir())  # no temp file left
try:
    check_writable(tmp / "run")
    sys.exit("check_writable did not fail")
except ConfigError as exc:
    assert "is not writable: File too large" in str(exc), str(exc)
"""


def test_full_disk_keeps_the_old_config_and_fails_the_write_check(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", FULL_DISK_SCRIPT, str(tmp_path)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:] + result.stdout[-500:]


# A training run under a file-size limit: latest.pt (about 4 MB here) cannot be written, the
# logs and config (a few KB) can, as when a disk fills up at the first checkpoint.
FULL_DISK_TRAIN_SCRIPT = """
import resource, signal, sys
from ase_humanoid.app import run
from ase_humanoid.errors import AseHumanoidError

run_dir, max_epochs, limited = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
small = %r
if limited:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, as ENOSPC on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
args = ["task=HumanoidAMP", "num_envs=4", f"max_epochs={max_epochs}", f"run_dir={run_dir}", *small]
if sys.argv[4] == "resume":
    args = ["resume=true", f"run_dir={run_dir}", f"max_epochs={max_epochs}"]
try:
    run(args)
except AseHumanoidError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)
""" % (SMALL,)


def _train_limited(run_dir, max_epochs, limited, mode="new"):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", FULL_DISK_TRAIN_SCRIPT, str(run_dir), str(max_epochs),
                           "1" if limited else "0", mode], capture_output=True, text=True, timeout=300)


def test_a_full_disk_at_a_checkpoint_ends_in_one_line_and_loses_nothing(tmp_path):
    run_dir = tmp_path / "run"
    # the first checkpoint does not fit: one line, no traceback; the folder starts afresh later
    first = _train_limited(run_dir, 1, limited=True)
    assert first.returncode == 2 and "Traceback" not in first.stderr, first.stderr[-2000:]
    assert "could not write" in first.stderr and "no checkpoint yet" in first.stderr
    assert not (run_dir / "latest.pt").exists() and not list(run_dir.glob(".latest.pt.*"))
    again = _train_limited(run_dir, 1, limited=False)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "starting afresh" in again.stdout and load_checkpoint(run_dir / "latest.pt")["epoch"] == 1
    # a later checkpoint that does not fit keeps the last one, and the run resumes from it
    before = (run_dir / "latest.pt").read_bytes()
    full = _train_limited(run_dir, 2, limited=True, mode="resume")
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr[-2000:]
    assert "is intact" in full.stderr and "resume=true" in full.stderr
    assert (run_dir / "latest.pt").read_bytes() == before
    resumed = _train_limited(run_dir, 2, limited=False, mode="resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert load_checkpoint(run_dir / "latest.pt")["epoch"] == 2
