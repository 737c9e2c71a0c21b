"""benchmarks/disc_slow_motion.py: slowed demo windows and the command on the shipped controller."""

import json

import pytest
import torch
from project_scripts import load_script

from ase_humanoid import PROJECT_ROOT
from ase_humanoid.builders import build_env
from ase_humanoid.config import compose_config

SHIPPED_CONTROLLER = PROJECT_ROOT / "pretrained" / "ase_llc_amp_humanoid.pt"


def _command():
    return load_script("benchmarks/disc_slow_motion.py")


@pytest.fixture(scope="module")
def env():
    env = build_env(compose_config(["task=HumanoidASE", "num_envs=1", "task.env.num_amp_obs_steps=3"]))
    yield env
    env.close()


def test_speed_one_gives_the_training_demo_windows(env):
    ids = torch.tensor([0, 1, 3, 5])
    ends = torch.tensor([0.5, 1.0, 2.0, 3.0])
    windows = _command().demo_windows_at_speed(env, ids, ends, 1.0)
    torch.testing.assert_close(windows, env.amp_obs_demo_from_keys(ids, ends))


def test_speed_zero_holds_one_pose_with_no_velocity(env):
    ids, ends = torch.tensor([0, 2]), torch.tensor([1.0, 4.0])
    frozen = _command().demo_windows_at_speed(env, ids, ends, 0.0).reshape(2, 3, -1)  # [n, steps, per_step]
    assert torch.equal(frozen[:, 0], frozen[:, 1]) and torch.equal(frozen[:, 0], frozen[:, 2])
    moving = _command().demo_windows_at_speed(env, ids, ends, 1.0).reshape(2, 3, -1)
    assert not torch.equal(moving[:, 0], moving[:, 2])
    # the newest frame's pose is the same at any speed; only its velocities differ
    differs = (frozen[:, 0] != moving[:, 0]).any(dim=0)  # [per_step]
    assert 0 < int(differs.sum()) < frozen.shape[-1]


def test_command_on_the_shipped_controller(capsys):
    report = _command().main([str(SHIPPED_CONTROLLER), "--samples", "200", "--spans", "4", "--json"])
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == json.loads(json.dumps(report))
    assert report["task"] == "HumanoidASE" and report["amp_steps"] == 2
    assert len(report["clips"]) == 6
    for name, entry in report["clips"].items():
        assert list(entry["style_reward"]) == ["1.0", "0.5", "0.25", "0.0"], name
        assert -1.0 <= entry["encoder_cosine"] <= 1.0
        consistency = entry["encoder_consistency"]
        assert list(consistency) == ["1.0", "0.5", "0.25", "0.0"], name
        assert consistency["0.0"] == pytest.approx(1.0, abs=1e-5), name  # a held pose: every code alike
        assert 0.0 < consistency["1.0"] < 0.99, name  # the moving clip's windows are coded differently
    # a trained discriminator prefers the locomotion clips at their own speed to their poses held still
    for name in ("amp_humanoid_walk", "amp_humanoid_run"):
        assert 0.0 < report["clips"][name]["frozen_share"] < 1.0, name


def test_encoder_consistency_is_the_length_of_the_mean_code(env):
    """On a stand-in encoder that returns each window's newest root height as a 2-D unit code
    (angle = height), a span's consistency is |mean of those unit vectors|, computed here by hand."""
    module = _command()

    class HeightEncoder:
        def encode(self, windows):
            angle = 10.0 * windows[:, 0]  # the newest frame's root height (first AMP feature)
            return torch.stack([angle.cos(), angle.sin()], dim=-1)

    clip, speed, steps = 3, 1.0, 20
    generator = torch.Generator().manual_seed(0)
    measured = module.encoder_consistency(env, HeightEncoder(), clip, speed, 1, steps, generator)
    start = float(torch.rand(1, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
    earliest = (env.num_amp_obs_steps - 1) * env.control_dt
    room = float(env.motion_lib.motion_lengths[clip]) - earliest - speed * env.control_dt * (steps - 1)
    ends = earliest + start * room + speed * env.control_dt * torch.arange(steps, dtype=torch.float64)
    heights = env.amp_obs_demo_from_keys(torch.full((steps,), clip), ends.float())[:, 0]
    codes = torch.stack([(10.0 * heights).cos(), (10.0 * heights).sin()], dim=-1)
    assert measured == pytest.approx(float(codes.mean(0).norm()), rel=1e-5)
    assert measured < 0.999  # the hop clip's root height changes within 20 steps
    held = module.encoder_consistency(env, HeightEncoder(), clip, 0.0, 3, steps, generator)
    assert held == pytest.approx(1.0, abs=1e-6)
