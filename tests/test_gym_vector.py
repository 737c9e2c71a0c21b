"""The gymnasium vector-env interface: registration and make_vec, the gymnasium >= 1.0 API
(reset with seed, same-step autoreset with final observations under gymnasium's keys, batched
spaces, render), episode summaries in info["log"], the AMP extras, and equality with the env
train.py builds."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import ase_humanoid  # noqa: F401  (registers the ids)
from ase_humanoid.builders import build_env
from ase_humanoid.config import compose_config
from ase_humanoid.envs import gym_id, make_env, task_names
from ase_humanoid.envs.gym_vector import HumanoidVectorEnv, episode_log
from ase_humanoid.gym_entry import hydra_value
from ase_humanoid.errors import ConfigError

FAST = dict(num_threads=1, seed=0)


def make(num_envs: int = 3, **options) -> HumanoidVectorEnv:
    return gymnasium.make_vec("ase_humanoid/HumanoidAMP-v0", num_envs=num_envs, **FAST, **options)


def test_every_task_is_registered_for_make_vec():
    assert [gym_id(t) for t in task_names()] == sorted(k for k in gymnasium.registry if k.startswith("ase_humanoid/"))
    env = make(3)
    assert isinstance(env, gymnasium.vector.VectorEnv) and env.num_envs == 3
    assert env.spec.id == "ase_humanoid/HumanoidAMP-v0"
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert env.metadata["device"] == "cpu" and env.metadata["array_type"] == "torch"
    assert env.single_observation_space.shape == (223,) and env.observation_space.shape == (3, 223)
    assert env.single_action_space.shape == (28,) and env.action_space.shape == (3, 28)
    obs, info = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape == (3, 223) and obs.dtype == torch.float32
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())  # numpy actions
    assert reward.shape == (3,) and terminated.dtype == torch.bool and truncated.dtype == torch.bool
    env.close()
    assert env.closed


def test_same_env_as_train_py_builds():
    """Task defaults (motion file, state init) and the profile's AMP history as train.py has them."""
    vec = make(2, state_init="Start")
    cfg = compose_config(["task=HumanoidAMP", "num_envs=2", "num_threads=1", "seed=0", "task.env.state_init=Start"])
    env = build_env(cfg)
    assert vec.env.cfg.to_dict() == env.cfg.to_dict()
    assert vec.env.cfg.motion_file is not None and vec.env.cfg.state_init == "Start"
    obs_vec, _ = vec.reset()
    assert torch.equal(obs_vec, env.reset())  # Start init at t = 0: deterministic
    vec.close()
    env.close()


def test_reset_seed_makes_episodes_reproducible():
    env = make(4, state_init="Random")
    actions = torch.zeros(4, 28)
    first, _ = env.reset(seed=5)
    after = env.step(actions)[0]
    for _ in range(3):
        env.step(torch.rand(4, 28) * 2 - 1)
    again, _ = env.reset(seed=5)
    assert torch.equal(first, again) and torch.equal(after, env.step(actions)[0])
    other, _ = env.reset(seed=6)
    assert not torch.equal(first, other)
    with pytest.raises(ConfigError, match="reset options"):
        env.reset(options={"env_ids": [0]})
    env.close()


def test_autoreset_reports_final_obs_and_episode_log():
    env = make(3, max_episode_length=3, enable_early_termination=False)
    obs, info = env.reset(seed=0)
    assert info["amp_obs"].shape == (3, env.amp_observation_space.shape[0])
    actions = torch.zeros(3, 28)
    for _ in range(2):
        obs, reward, terminated, truncated, info = env.step(actions)
        assert not info["_final_obs"].any() and info["log"] == {}
        assert torch.equal(info["final_obs"], obs)
    obs, reward, terminated, truncated, info = env.step(actions)
    assert truncated.all() and not terminated.any() and info["_final_obs"].all()
    assert not torch.allclose(info["final_obs"], obs)  # obs: the new episodes' first
    log = info["log"]
    assert set(log) == {"Episode/return", "Episode/length", "Episode/terminated", "Episode/count"}
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in log.values())
    assert float(log["Episode/length"]) == 3.0 and float(log["Episode/count"]) == 3.0
    assert float(log["Episode/terminated"]) == 0.0
    assert info["episode"]["length"].tolist() == [3, 3, 3]  # the per-episode vectors stay
    env.close()


def test_episode_log_summarises_only_the_ended_episodes():
    terminated = torch.tensor([True, False, False, False])
    truncated = torch.tensor([False, False, True, False])
    log = episode_log({"return": torch.tensor([1.0, 3.0]), "length": torch.tensor([10, 300])}, terminated, truncated)
    assert {k: float(v) for k, v in log.items()} == {"Episode/return": 2.0, "Episode/length": 155.0,
                                                     "Episode/terminated": 0.5, "Episode/count": 2.0}
    empty = {"return": torch.zeros(0), "length": torch.zeros(0, dtype=torch.long)}
    assert episode_log(empty, torch.zeros(4, dtype=torch.bool), torch.zeros(4, dtype=torch.bool)) == {}


def test_amp_extras_and_attributes_pass_through():
    env = make(2)
    size = env.amp_observation_space.shape[0]
    assert size == env.num_amp_obs_steps * env.num_amp_obs_per_step
    demo = env.collect_reference_motions(5)
    assert demo.shape == (5, size) and torch.isfinite(demo).all()
    env.reset()
    _, _, _, _, info = env.step(torch.zeros(2, 28))
    assert info["amp_obs"].shape == (2, size)
    assert env.dt == pytest.approx(1 / 30) and env.robot.name == "amp_humanoid"
    with pytest.raises(AttributeError):
        env.no_such_attribute
    env.close()


def test_render_returns_an_rgb_frame():
    env = make(2)
    env.reset()
    frame = env.render()
    assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8 and frame.std() > 5  # not blank
    # skrl's wrapper renders through call() (the renderer's very first frame differs in a few pixels)
    assert np.array_equal(env.call("render"), env.render())
    env.close()


def test_keyword_errors_list_the_valid_keys():
    with pytest.raises(ConfigError, match=r"unknown keyword 'stat_init' for .*\(did you mean 'state_init'\?\)"):
        make(2, stat_init="Random")
    with pytest.raises(ConfigError, match="state_init"):
        make(2, state_init="Sometimes")


def test_wraps_an_env_built_directly_and_hydra_values():
    env = HumanoidVectorEnv(make_env("HumanoidHeading", num_envs=2, state_init="Default", **FAST))
    assert env.single_observation_space.shape == (228,)
    obs, _ = env.reset()
    assert obs.shape == (2, 228)
    env.close()
    assert hydra_value(None) == "null" and hydra_value(True) == "true" and hydra_value([1, "a"]) == "[1,a]"
    assert hydra_value("motions/walk.npy") == "motions/walk.npy" and hydra_value("a b") == "'a b'"


def test_llc_checkpoint_makes_a_task_hierarchical(tmp_path):
    from ase_humanoid.agents.ase import ASEAgent
    from ase_humanoid.agents.config import ASEConfig
    from ase_humanoid.utils.checkpoint import save_checkpoint

    steps = 2
    config = ASEConfig(actor_units=[32], critic_units=[32], disc_units=[32], style_units=[16],
                       amp_obs_demo_buffer_size=16, amp_replay_buffer_size=16, amp_batch_size=16,
                       horizon_length=2, minibatch_size=4, seed=0)
    llc = ASEAgent(223, 28, steps * 125, 2, lambda n: torch.zeros(n, steps * 125), config)
    path = tmp_path / "llc.pt"
    save_checkpoint({"agent": llc.state_dict(), "config": {"robot": {"name": "amp_humanoid"},
                                                            "task": {"env": {"num_amp_obs_steps": steps}}}}, path)
    env = gymnasium.make_vec("ase_humanoid/HumanoidHeading-v0", num_envs=2, llc_checkpoint=str(path),
                             llc_steps=3, state_init="Default", **FAST)
    assert env.single_action_space.shape == (64,) and env.metadata["render_fps"] == pytest.approx(10.0)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(torch.randn(2, 64))
    assert obs.shape == (2, 228) and info["style_reward"].shape == (2,)
    assert int(env.env.episode_steps[0]) == 3  # three control steps per high-level step
    env.close()


def test_terrain_keyword_builds_what_train_py_builds():
    from ase_humanoid.gym_entry import vector_env_overrides

    assert vector_env_overrides("HumanoidAMP", 2, {"terrain": "rough"})[-1] == "terrain=rough"
    assert vector_env_overrides("HumanoidAMP", 2, {"terrain": {"name": "mixed", "num_rows": 2}})[-2:] == \
        ["terrain=mixed", "terrain.num_rows=2"]
    env = gymnasium.make_vec(gym_id("HumanoidAMP"), num_envs=2,
                             terrain={"name": "rough", "num_rows": 2, "num_cols": 2})
    try:
        obs, _ = env.reset(seed=3)
        assert np.isfinite(np.asarray(obs)).all()
        terrain = env.unwrapped.env.terrain  # HumanoidVectorEnv.env: the humanoid env
        assert terrain is not None and terrain.num_rows == 2 and terrain.num_cols == 2
    finally:
        env.close()
    with pytest.raises(ConfigError, match="keyword 'terrain' must be a terrain name"):
        vector_env_overrides("HumanoidAMP", 2, {"terrain": 3})
    with pytest.raises(ConfigError, match="rough"):  # a wrong name lists the valid ones
        gymnasium.make_vec(gym_id("HumanoidAMP"), num_envs=2, terrain="lava")
