"""End-to-end training through train.py: outputs, evaluation, exact resume, kill safety."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from ase_humanoid import PROJECT_ROOT
from ase_humanoid.app import run
from ase_humanoid.builders import build_agent, build_env
from ase_humanoid.config import compose_config
from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

# The AMP demo/replay buffers default to the paper's 200k samples (seconds to fill on a CPU);
# a few thousand are plenty for two epochs.
SMALL_BUFFERS = ["train.params.amp_obs_demo_buffer_size=2048", "train.params.amp_replay_buffer_size=2048"]
# The skill report at the end of ASE pre-training has its own test (test_skills.py).
NO_FINAL_REPORT = ["final_skill_report=0"]
# Small networks where the test is about the training machinery rather than the paper's sizes.
SMALL_NETS = ["train.params.actor_units=[64,64]", "train.params.critic_units=[64,64]",
              "train.params.disc_units=[64,64]", "train.params.mini_epochs=2"]
ENV = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "PYTHONUNBUFFERED": "1"}


def train_cli(*overrides, timeout=300):
    cmd = [sys.executable, str(PROJECT_ROOT / "train.py"), *overrides]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, env=ENV, capture_output=True, text=True, timeout=timeout)


def read_metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("task, algo", [("HumanoidASE", "ase"), ("HumanoidAMP", "amp")])
def test_train_cli_writes_tensorboard_checkpoint_and_evaluates(task, algo, tmp_path):
    run_dir = tmp_path / "run"
    result = train_cli(f"task={task}", "max_epochs=2", "num_envs=16", f"run_dir={run_dir}", *SMALL_BUFFERS,
                       *NO_FINAL_REPORT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "epoch      2/2" in result.stdout
    events = list((run_dir / "tensorboard").glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0
    metrics = read_metrics(run_dir)
    assert [m["epoch"] for m in metrics] == [1, 2]
    for key in ("train/disc_loss", "train/disc_agent_acc", "train/disc_demo_acc", "perf/samples_per_s"):
        assert key in metrics[-1]
    if algo == "ase":
        assert "train/enc_reward_mean" in metrics[-1] and "train/diversity_loss" in metrics[-1]
    state = load_checkpoint(run_dir / "latest.pt")
    assert state["epoch"] == 2 and state["agent"]["algo"].lower().startswith(algo)
    assert (run_dir / "config.yaml").is_file()

    # Evaluation of the checkpoint: deterministic policy, statistics printed.
    result = train_cli(f"task={task}", "test=true", f"checkpoint={run_dir / 'latest.pt'}", "num_envs=4",
                       "test_episodes=4", "task.env.max_episode_length=20", *SMALL_BUFFERS)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "episode/length=" in result.stdout and "episode/fall_rate=" in result.stdout
    assert "quality/key_body_error_cm=" in result.stdout and "quality/root_speed=" in result.stdout
    assert "quality/nearest_clip/" in result.stdout  # which clips the policy looks like


# HumanoidASE's getup phase begins after epoch 1, i.e. just where the interrupted run resumes.
GETUP_PHASE = ["train.params.task_reward_w=2.0",
               "task.env.phases=[{from_epoch:1,getup_reward:true,fall_init_prob:0.5,recovery_steps:30}]"]


@pytest.mark.parametrize("extra", [[], GETUP_PHASE], ids=["plain", "getup_phase"])
def test_resume_from_epoch_1_matches_uninterrupted_run(tmp_path, capsys, extra):
    common = ["task=HumanoidASE", "num_envs=8", "seed=3", *SMALL_BUFFERS, *SMALL_NETS, *NO_FINAL_REPORT, *extra]
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    run([*common, "max_epochs=2", f"run_dir={straight}"])
    run([*common, "max_epochs=1", f"run_dir={interrupted}"])
    run([*common, "max_epochs=2", f"run_dir={interrupted}", "resume=true"])
    phase_lines = [line for line in capsys.readouterr().out.splitlines() if "(task.env.phases)" in line]
    entered = "from epoch 2 (task.env.phases): fall_init_prob 0.5, recovery_steps 30, getup_reward True"
    assert phase_lines == ([entered] * 2 if extra else [])
    a, b = read_metrics(straight)[-1], read_metrics(interrupted)[-1]
    assert a["epoch"] == b["epoch"] == 2
    losses = [k for k in a if k.startswith("train/") and ("loss" in k or "reward" in k or "acc" in k)]
    assert len(losses) >= 8
    for key in losses:
        assert a[key] == b[key], key
    pa = load_checkpoint(straight / "latest.pt")["agent"]["model"]
    pb = load_checkpoint(interrupted / "latest.pt")["agent"]["model"]
    for name in pa:
        assert torch.equal(pa[name], pb[name]), name


def test_kill_while_writing_checkpoint_keeps_previous_one(tmp_path):
    path = tmp_path / "latest.pt"
    save_checkpoint({"epoch": 1, "weights": torch.arange(10)}, path)
    # A second process writes a large checkpoint to the same path and is killed mid-write.
    script = (
        "import torch, sys; sys.path.insert(0, %r)\n"
        "from ase_humanoid.utils.checkpoint import save_checkpoint\n"
        "save_checkpoint({'epoch': 2, 'weights': torch.zeros(400_000_000, dtype=torch.uint8)}, %r)\n"
    ) % (str(PROJECT_ROOT), str(path))
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 60
    while time.time() < deadline and not list(tmp_path.glob(".latest.pt.*.tmp")):
        time.sleep(0.01)
    assert list(tmp_path.glob(".latest.pt.*.tmp")), "the writer never started its temp file"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    state = load_checkpoint(path)
    assert state["epoch"] == 1 and torch.equal(state["weights"], torch.arange(10))


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt during the test, as in a terminal, even when pytest runs as
    a background job (`cmd &` without job control starts with SIGINT ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def default_sigint_in_child():
    """Popen preexec_fn: the child starts with SIGINT at its default, so Python installs its
    KeyboardInterrupt handler however pytest was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_while_writing_checkpoint_finishes_the_file_first(tmp_path, monkeypatch, sigint_raises):
    # Ctrl-C inside torch.save used to break its zip writer, whose cleanup then raised a
    # RuntimeError over the KeyboardInterrupt (a traceback and exit status 1, not 130).
    path = tmp_path / "latest.pt"
    big = torch.arange(2_000_000)
    real_save = torch.save

    def torch_save_interrupted(obj, f, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # arrives as the zip file starts being written
        return real_save(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", torch_save_interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint({"epoch": 3, "weights": big}, path)
    monkeypatch.undo()
    assert torch.equal(load_checkpoint(path)["weights"], big)
    assert not list(tmp_path.glob("*.tmp"))
    # Outside a write, Ctrl-C is an ordinary KeyboardInterrupt again.
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT])
def test_training_killed_mid_run_resumes_from_last_checkpoint(tmp_path, stop):
    # SIGKILL: nothing of the run's own runs; SIGINT (Ctrl-C): it says how to go on, no traceback
    run_dir = tmp_path / "run"
    args = ["task=HumanoidAMP", "num_envs=8", "checkpoint_every=1", f"run_dir={run_dir}", *SMALL_BUFFERS, *SMALL_NETS]
    proc = subprocess.Popen([sys.executable, str(PROJECT_ROOT / "train.py"), *args, "max_epochs=1000"],
                            cwd=PROJECT_ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=default_sigint_in_child)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if (run_dir / "metrics.jsonl").exists() and len(read_metrics(run_dir)) >= 2:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    proc.send_signal(stop)
    proc.wait(timeout=120)
    if stop == signal.SIGINT:
        stderr = proc.stderr.read().decode()
        assert proc.returncode == 130 and "Traceback" not in stderr, stderr[-3000:]
        assert f"continue with python train.py resume=true run_dir={run_dir}" in stderr
    saved_epoch = load_checkpoint(run_dir / "latest.pt")["epoch"]
    assert saved_epoch >= 1
    result = train_cli(*args, "resume=true", f"max_epochs={saved_epoch + 1}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"resumed from {run_dir / 'latest.pt'} at epoch {saved_epoch}" in result.stdout
    assert load_checkpoint(run_dir / "latest.pt")["epoch"] == saved_epoch + 1
    # Epochs logged after the checkpoint were cut on resume and logged again: no repeats, no gaps.
    assert [m["epoch"] for m in read_metrics(run_dir)] == list(range(1, saved_epoch + 2))


def test_bad_config_key_is_a_clear_error():
    result = train_cli("task=HumanoidASE", "num_env=16")
    assert result.returncode == 2
    assert "unknown config key 'num_env'" in result.stderr and "num_envs" in result.stderr
    assert "Traceback" not in result.stderr


def test_amp_checkpoint_holds_demo_keys_and_recomputes_the_samples(tmp_path):
    """The demo buffer is a function of the motion data: latest.pt stores (clip, time) keys."""
    def make(seed):
        cfg = compose_config(["task=HumanoidAMP", "num_envs=4", f"seed={seed}", *SMALL_NETS,
                              "train.params.amp_obs_demo_buffer_size=3000",
                              "train.params.amp_replay_buffer_size=64"])
        env = build_env(cfg)
        return env, build_agent(cfg, env)

    env, agent = make(seed=1)
    demo = agent.demo_buffer
    state = agent.state_dict()["demo_buffer"]
    assert "samples" not in state and state["motion_ids"].shape == (3000,)
    agent.save(tmp_path / "latest.pt")
    samples_mb = demo.samples.numel() * 4 / 2**20
    checkpoint_mb = (tmp_path / "latest.pt").stat().st_size / 2**20
    assert checkpoint_mb < samples_mb  # the samples alone would not fit

    other_env, other = make(seed=2)
    assert not torch.equal(other.demo_buffer.samples, demo.samples)
    other.load(tmp_path / "latest.pt")
    assert torch.equal(other.demo_buffer.samples, demo.samples)
    env.close()
    other_env.close()


def test_paper_profile_checkpoint_evaluates_under_the_cpu_default(tmp_path, capsys):
    """test=true builds the env with the AMP history the checkpoint's discriminator saw."""
    run_dir = tmp_path / "paper"
    run(["task=HumanoidAMP", "profile=paper", "max_epochs=1", "num_envs=4", f"run_dir={run_dir}",
         *SMALL_BUFFERS, *SMALL_NETS])
    assert load_checkpoint(run_dir / "latest.pt")["config"]["task"]["env"]["num_amp_obs_steps"] == 10
    capsys.readouterr()
    run(["task=HumanoidAMP", "test=true", f"checkpoint={run_dir}", "num_envs=2", "test_episodes=2",
         "task.env.max_episode_length=10"])
    out = capsys.readouterr().out
    assert "episode/length=" in out and "quality/key_body_error_cm=" in out
