"""A bad day (issue 23): runs that would lose data (two runs on one folder, an empty run_dir, a
checkpoint with bad counters, a user's temp files, a resume pointed two ways, a resume that
cannot train) and counts that would take the machine down (threads, envs, buffers, a retarget
frame rate). Each is refused with an error naming the key or file, before anything is written."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from project_scripts import load_script

from ase_humanoid.app import run
from ase_humanoid.config import compose_config
from ase_humanoid.errors import CheckpointError, ConfigError
from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["train.params.amp_obs_demo_buffer_size=1024", "train.params.amp_replay_buffer_size=1024",
         "train.params.actor_units=[32,32]", "train.params.critic_units=[32,32]",
         "train.params.disc_units=[32,32]", "train.params.mini_epochs=1", "train.params.horizon_length=4",
         "quality_every=0", "final_skill_report=0", "num_envs=4", "num_threads=1"]


def _train(*args):
    run(["task=HumanoidAMP", "checkpoint_every=1", *SMALL, *args])


def _folder_state(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (relative path -> bytes): "nothing changed" is this staying equal."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def two_epoch_run(tmp_path_factory):
    """A finished 2-epoch AMP run (latest.pt at epoch 2), shared by the tests that only read it."""
    run_dir = tmp_path_factory.mktemp("run2") / "run"
    _train(f"run_dir={run_dir}", "max_epochs=2")
    return run_dir


# ------------------------------------------------------------------ one run per folder
def test_a_second_run_on_a_running_run_dir_is_refused_until_the_first_is_killed(tmp_path):
    import os
    import signal
    import time

    run_dir = tmp_path / "run"
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    first = subprocess.Popen([sys.executable, str(ROOT / "train.py"), "task=HumanoidAMP", "checkpoint_every=1",
                              *SMALL, f"run_dir={run_dir}", "max_epochs=1000000"], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 240
        while time.time() < deadline and first.poll() is None and not (run_dir / "latest.pt").exists():
            time.sleep(0.2)
        assert first.poll() is None and (run_dir / "latest.pt").exists(), first.stderr.read().decode()[-2000:]
        max_epochs = load_checkpoint(run_dir / "latest.pt")["epoch"] + 1
        for resume in ([], ["resume=true"]):  # a new run and a resume of the running one
            with pytest.raises(ConfigError, match=rf"run_dir '{run_dir}' is in use by another training process"):
                _train(f"run_dir={run_dir}", f"max_epochs={max_epochs}", *resume)
        assert first.poll() is None  # undisturbed: still training
    finally:
        first.send_signal(signal.SIGKILL)  # no clean-up runs in the killed run
        first.wait()
    from ase_humanoid.run_dir import hold_run_dir

    with hold_run_dir(run_dir):  # the OS released the killed run's lock
        pass


def test_empty_run_dir_is_refused_and_writes_nothing_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for value in ("", "' '"):
        with pytest.raises(ConfigError, match="'run_dir' is empty"):
            _train(f"run_dir={value}", "max_epochs=1")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ resume checks
@pytest.mark.parametrize("key, value", [("epoch", -5), ("epoch", "abc"), ("epoch", 1.5), ("global_step", -1)])
def test_resume_from_a_checkpoint_with_bad_counters_is_refused(two_epoch_run, tmp_path, key, value):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(two_epoch_run, run_dir)
    state = load_checkpoint(run_dir / "latest.pt")
    save_checkpoint({**state, key: value}, run_dir / "latest.pt")
    before = _folder_state(run_dir)
    with pytest.raises(CheckpointError, match=rf"'{run_dir / 'latest.pt'}': '{key}' is {value!r}, not a whole"):
        _train(f"run_dir={run_dir}", "resume=true", "max_epochs=4")
    assert _folder_state(run_dir) == before  # metrics.jsonl still holds epochs 1 and 2


@pytest.mark.parametrize("max_epochs", [1, 2])
def test_resume_with_max_epochs_not_above_the_checkpoint_changes_nothing(two_epoch_run, max_epochs):
    before = _folder_state(two_epoch_run)
    with pytest.raises(ConfigError, match=rf"at epoch 2 and max_epochs={max_epochs}; give max_epochs greater than 2"):
        _train(f"run_dir={two_epoch_run}", "resume=true", f"max_epochs={max_epochs}")
    assert _folder_state(two_epoch_run) == before


def test_resume_with_run_dir_and_a_checkpoint_elsewhere_is_refused(two_epoch_run, tmp_path):
    before = _folder_state(two_epoch_run)
    other = tmp_path / "other"
    with pytest.raises(ConfigError, match=rf"run_dir='{other}' and checkpoint=.* in another folder "
                                          rf"\('{two_epoch_run}'\)"):
        _train(f"run_dir={other}", f"checkpoint={two_epoch_run / 'latest.pt'}", "resume=true", "max_epochs=3")
    assert _folder_state(two_epoch_run) == before and not other.exists()
    # Both naming the same folder is one run: the resume gets as far as its max_epochs check.
    with pytest.raises(ConfigError, match="at epoch 2 and max_epochs=2"):
        _train(f"run_dir={two_epoch_run}", f"checkpoint={two_epoch_run / 'latest.pt'}", "resume=true", "max_epochs=2")


def test_resume_removes_only_the_temp_files_this_project_writes(tmp_path):
    from ase_humanoid.run_dir import remove_stale_temp_files

    ours = [".latest.pt.k1ll3d_x.tmp", ".epoch_000050.pt.abc123de.tmp", ".config.yaml.q9_zz0ab.tmp",
            ".metrics.jsonl.0a1b2c3d.tmp", ".write_check.h7x2k9pq", "replay/.replay_3.journal.zz99yy88.tmp"]
    users = [".notes.tmp", ".latest.pt.backup.tmp", ".mydata.abcdefgh.tmp", ".latest.pt.ABCDEFGH.tmp",
             "replay/.notes.tmp", ".tensorboard.abcdefgh.tmp"]
    (tmp_path / "replay").mkdir()
    for name in ours + users:
        (tmp_path / name).write_text("x")
    removed = remove_stale_temp_files(tmp_path)
    assert sorted(str(p.relative_to(tmp_path)) for p in removed) == sorted(ours)
    assert all(not (tmp_path / name).exists() for name in ours)
    assert all((tmp_path / name).exists() for name in users)


# ------------------------------------------------------------------ counts the machine cannot hold
@pytest.mark.parametrize("override, message", [
    ("num_threads=100000", r"'num_threads' is 100000: at most \d+ threads \(4 per CPU core"),
    ("torch_threads=100000", r"'torch_threads' is 100000: at most"),
    ("update_threads=100000", r"'update_threads' is 100000: at most"),
    ("num_envs=1000000000", r"'num_envs': 1,000,000,000 envs need at least [\d,.]+ GB .* give at most"),
    ("quality_envs=1000000000", r"'quality_envs': 1,000,000,000 envs need"),
    ("train.params.amp_obs_demo_buffer_size=10000000000", r"'train.params.amp_obs_demo_buffer_size': .* AMP samples"),
    ("train.params.amp_replay_buffer_size=10000000000", r"'train.params.amp_replay_buffer_size': .* AMP samples"),
    ("task.env.reset_pool_size=100000000000", r"'task.env.reset_pool_size': .* pooled states"),
    ("test_episodes=1000000000", r"'test_episodes' must be an integer >= 1 and <= 1000000"),
])
def test_counts_beyond_the_machine_are_config_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        compose_config(["task=HumanoidASE", override])


def test_gymnasium_entry_shares_the_bounds():
    from ase_humanoid.gym_entry import make_vector_env

    with pytest.raises(ConfigError, match="'num_envs': 1,000,000,000 envs need"):
        make_vector_env("HumanoidAMP", num_envs=10**9)


def test_bounds_leave_room_for_the_largest_shipped_settings():
    import os

    from ase_humanoid.config import THREADS_PER_CPU

    cfg = compose_config(["task=HumanoidASE", "profile=paper", "num_envs=4096",
                          f"num_threads={THREADS_PER_CPU * (os.cpu_count() or 1)}"])
    assert cfg.train.params.amp_replay_buffer_size == 200_000


# ------------------------------------------------------------------ retargeting tool
CMU_BVH = ROOT / "motions" / "mocap" / "cmu_bvh" / "131_01.bvh"  # 8.3 s, 31 joints


def _retarget_tool():
    return load_script("tools/retarget_motion.py")


@pytest.mark.parametrize("fps", ["1e7", "0", "-30", "nan", "1001"])
def test_retarget_fps_out_of_range_exits_2_before_allocating(tmp_path, capsys, fps):
    import resource

    out = tmp_path / "clip.npy"
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert _retarget_tool().main(["--preset", "cmu", "--source", str(CMU_BVH), "--out", str(out), "--fps", fps]) == 2
    assert "retarget key 'fps' must be a frame rate from 1 to 1000" in capsys.readouterr().err
    assert not out.exists()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before < 500 * 1024  # KB: < 500 MB


def test_retarget_output_size_is_bounded_before_resampling(tmp_path, capsys, monkeypatch):
    import ase_humanoid.motion.retarget_settings as settings

    # 8.3 s at 1000 fps: 8,276 frames x 31 joints = 256,556, over a lowered bound of 100,000.
    monkeypatch.setattr(settings, "MAX_RESAMPLED_FRAME_JOINTS", 100_000)
    out = tmp_path / "clip.npy"
    assert _retarget_tool().main(["--preset", "cmu", "--source", str(CMU_BVH), "--out", str(out), "--fps", "1000"]) == 2
    err = capsys.readouterr().err
    assert "retarget key 'fps': 1000 fps makes the source (8.3 s, 31 joints) 8,276 frames" in err
    assert "give a lower fps" in err and not out.exists()


def test_resampled_frame_count_matches_resample():
    from ase_humanoid.motion.io import load_motion

    clip = load_motion(CMU_BVH, dtype=torch.float64)
    assert clip.resampled_num_frames(45) == clip.resample(45).num_frames


REFUSED_RUNS = [
    ["task=HumanoidAMP", "num_envs=2", "train.params.learning_rate=inf"],
    ["task=HumanoidAMP", "num_envs=2", "motion_file=bad/corrupt.npy"],
    ["task=HumanoidAMP", "num_envs=2", "terrain=rough", "terrain.num_rows=-3"],
    ["task=HumanoidAMP", "num_envs=2", "checkpoint=missing.pt"],
    ["task=HumanoidHeading", "num_envs=2", "llc_checkpoint=missing.pt"],
    ["task=HumanoidHeading", "num_envs=2", "llc_checkpoint=bad/corrupt.npy"],
    ["task=HumanoidAMP", "num_envs=2", "run_dir=deep/new/run", "train.params.mini_epochs=0"],
    ["resume=true", "run_dir=runs/nothing_here"],
]


@pytest.mark.parametrize("argv", REFUSED_RUNS, ids=lambda a: " ".join(a[1:]))
def test_a_refused_run_leaves_nothing_behind(tmp_path, monkeypatch, argv):
    """Refused before training (a bad number, a bad file, a missing checkpoint): the error says
    why, and the current folder and the run root are exactly as they were (no runs/<task>_<time>/
    with a .lock, no parent folders)."""
    from ase_humanoid.app import run
    from ase_humanoid.errors import AseHumanoidError

    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "corrupt.npy").write_bytes(b"not a numpy file")
    monkeypatch.chdir(tmp_path)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    with pytest.raises(AseHumanoidError):
        run(argv)
    after = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert after == before
