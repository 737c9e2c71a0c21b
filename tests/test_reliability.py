"""Hostile and careless inputs (issue 13): unsafe checkpoints, fault counters, run folders that
must not be overwritten, resumed logs, bad configs and paths. Each case is a clear error naming
the file or key, or (for faults during training) a counter in the logs."""

import json
import os
from pathlib import Path

import pytest
import torch

from ase_humanoid.app import build_agent, build_env
from ase_humanoid.config import compose_config
from ase_humanoid.errors import CheckpointError
from ase_humanoid.runner import Runner
from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

SMALL = ["train.params.amp_obs_demo_buffer_size=1024", "train.params.amp_replay_buffer_size=1024",
         "train.params.actor_units=[32,32]", "train.params.critic_units=[32,32]",
         "train.params.disc_units=[32,32]", "train.params.mini_epochs=1", "train.params.horizon_length=4",
         "quality_every=0"]


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


@pytest.mark.parametrize("key", ["checkpoint", "llc_checkpoint", "resume"])
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

    from ase_humanoid.utils.logger import TrainingLogger

    cfg, env, agent = _small_amp(tmp_path)
    with torch.no_grad():  # a diverged policy: every action NaN
        agent.actor.mu.bias.fill_(float("nan"))
    env.nonfinite_resets = 3  # as if three worlds had blown up earlier in the run
    run_dir = tmp_path / "run"
    runner = Runner(env, agent, run_dir, {}, max_epochs=1, quality_every=0)
    logger = TrainingLogger(run_dir, 1)
    runner.learn(logger)
    logger.close()
    metrics = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])
    assert metrics["env/nonfinite_resets"] >= 3
    assert metrics["env/nonfinite_actions"] == 4 * 4  # 4 envs x 4 steps
    events = EventAccumulator(str(run_dir / "tensorboard"))
    events.Reload()
    assert "env/nonfinite_actions" in events.Tags()["scalars"]
    assert "env/nonfinite_resets" in events.Tags()["scalars"]
