"""Hierarchical control: the high-level agent, the frozen low-level controller, the
hierarchical env stepping, and the whole path train.py takes (pre-train an ASE controller for two
epochs, train each task on it for two epochs, evaluate with test=true), all on CPU."""

from __future__ import annotations

import pytest
import torch

from ase_humanoid.agents.config import ASEConfig
from ase_humanoid.agents.hrl import (
    HRLAgent,
    HRLConfig,
    HRLEnv,
    LowLevelController,
    latent_from_action,
    load_llc,
    make_hrl_env,
)
from ase_humanoid.app import run
from ase_humanoid.envs import make_env
from ase_humanoid.errors import CheckpointError, ConfigError

FAST = dict(num_threads=1, seed=0, state_init="Default")
TINY_ASE = ASEConfig(actor_units=[32, 32], critic_units=[32, 32], disc_units=[32, 32], style_units=[16])


def random_llc(env, robot_name=None, seed=0) -> LowLevelController:
    """An untrained LLC with the env's sizes (weights from `seed`)."""
    torch.manual_seed(seed)
    return LowLevelController(TINY_ASE, env.num_obs - env.task_obs_size, env.num_actions,
                              env.amp_observation_space.shape[-1], robot_name or env.robot.name)


def test_high_level_policy_defaults_and_reward_mix():
    env = make_env("HumanoidHeading", num_envs=4, robot="amp_humanoid", **FAST)
    config = HRLConfig(horizon_length=2, minibatch_size=8, seed=0)
    assert (config.actor_units, config.init_log_std, config.llc_steps) == ([1024, 512], -2.3, 5)
    agent = HRLAgent.from_llc_checkpoint(None, make_hrl_env(env, random_llc(env)), config)
    assert agent.action_dim == 64 and not agent.log_std.requires_grad
    assert torch.allclose(agent.log_std, torch.full((64,), -2.3))
    out = agent.act(torch.randn(4, env.num_obs) * 100.0, deterministic=True)
    assert out["actions"].abs().max() < 1.0  # tanh on the mean
    # total reward = 0.9 task + 0.1 style, from the rollout's stored parts
    obs = torch.zeros(4, env.num_obs)
    for task_r, style_r in ((1.0, 2.0), (0.5, 0.0)):
        agent.act(obs)
        agent.record_transition(obs, agent._last_act["actions"], torch.full((4,), task_r),
                                torch.zeros(4, dtype=torch.bool), torch.zeros(4, dtype=torch.bool), obs,
                                {"style_reward": torch.full((4,), style_r)})
    stats: dict[str, float] = {}
    total = agent._total_rewards(stats)
    assert torch.allclose(total[:, 0], torch.tensor([0.9 * 1.0 + 0.1 * 2.0, 0.9 * 0.5]))
    assert stats["task_reward_mean"] == pytest.approx(0.75) and stats["disc_reward_mean"] == pytest.approx(1.0)
    env.close()


def test_llc_must_match_the_task_robot():
    sword = make_env("HumanoidReach", num_envs=1, robot="sword_shield", **FAST)
    plain = make_env("HumanoidReach", num_envs=1, robot="amp_humanoid", **FAST)
    with pytest.raises(CheckpointError, match="trained on robot 'amp_humanoid'.*uses robot 'sword_shield'"):
        make_hrl_env(sword, random_llc(plain))
    nameless = random_llc(plain)
    nameless.robot_name = None  # no robot recorded: the sizes still have to fit
    with pytest.raises(CheckpointError, match="has sizes"):
        make_hrl_env(sword, nameless)
    with pytest.raises(ConfigError, match="llc_checkpoint"):
        load_llc(None)
    sword.close()
    plain.close()


def test_one_high_level_step_is_llc_steps_control_steps():
    """The hierarchical env equals stepping the task env by hand with the LLC's actions."""
    hier = make_env("HumanoidLocation", num_envs=3, robot="amp_humanoid", **FAST)
    plain = make_env("HumanoidLocation", num_envs=3, robot="amp_humanoid", **FAST)
    llc = random_llc(plain)
    make_hrl_env(hier, llc, llc_steps=5)
    assert isinstance(hier, HRLEnv) and type(hier).__name__ == "HumanoidLocationHRL"
    assert hier.action_space.shape == (64,) and hier.control_freq == pytest.approx(6.0)
    obs_h, obs_p = hier.reset(), plain.reset()
    assert torch.equal(obs_h, obs_p)
    latent = 2.0 * torch.rand(3, 64, generator=torch.Generator().manual_seed(1)) - 1.0
    z = torch.nn.functional.normalize(latent, dim=-1)
    task_rewards, style_rewards = [], []
    for _ in range(5):
        obs_p, reward, _, _, info = plain.step(llc.actions(obs_p[:, :llc.obs_dim], z))
        task_rewards.append(reward)
        style_rewards.append(llc.calc_style_reward(info["amp_obs"]))
    obs_h, reward_h, terminated, truncated, info_h = hier.step(0.5 * latent)  # scale inside [-1, 1]: irrelevant
    assert torch.equal(hier.episode_steps, plain.episode_steps) and int(hier.episode_steps[0]) == 5
    if not bool((terminated | truncated).any()):
        assert torch.allclose(obs_h, obs_p, atol=1e-4)  # z normalised from a scaled latent: float noise
        assert torch.allclose(reward_h, torch.stack(task_rewards).mean(0), atol=1e-6)
        assert torch.allclose(info_h["style_reward"], torch.stack(style_rewards).mean(0), atol=1e-5)
    hier.close()
    plain.close()


def test_style_embedding_once_per_high_level_step_gives_the_same_actions():
    """The latent holds for llc_steps steps, so its style embedding is computed once: same numbers."""
    env = make_env("HumanoidHeading", num_envs=1, robot="amp_humanoid", **FAST)
    llc = random_llc(env)
    gen = torch.Generator().manual_seed(3)
    obs = torch.randn(6, llc.obs_dim, generator=gen)
    z = latent_from_action(torch.randn(6, 64, generator=gen))
    style = llc.style(z)
    assert style.shape == (6, TINY_ASE.latent_dim)
    with torch.no_grad():
        expected = llc.actor(llc.obs_norm.normalize(obs), z)
    assert torch.equal(llc.actions_for_style(obs, style), expected)
    assert torch.equal(llc.actions(obs, z), expected)
    env.close()


def test_batched_style_reward_equals_the_per_step_rewards_of_the_episode():
    """The LLC discriminator rates the llc_steps AMP observations of a high-level step in one
    batch; the result is the mean of the per-step rewards over the steps inside the episode.
    Episodes of 7 control steps, high-level steps of 5: the second high-level step counts 2."""
    kwargs = dict(num_envs=3, robot="amp_humanoid", max_episode_length=7, **FAST)
    hier, plain = make_env("HumanoidReach", **kwargs), make_env("HumanoidReach", **kwargs)
    llc = random_llc(plain)
    gen = torch.Generator().manual_seed(2)
    llc.amp_norm.mean.normal_(generator=gen)  # a non-trivial normaliser, as a trained LLC has
    llc.amp_norm.var.uniform_(0.5, 2.0, generator=gen)
    make_hrl_env(hier, llc, llc_steps=5)
    obs_p = plain.reset()
    hier.reset()
    latents = [2.0 * torch.rand(3, 64, generator=gen) - 1.0 for _ in range(2)]
    per_step_style, per_step_task = [], []
    for latent in latents:
        z = latent_from_action(latent)
        for _ in range(5):
            obs_p, reward, _, _, info = plain.step(llc.actions(obs_p[:, :llc.obs_dim], z))
            per_step_style.append(llc.calc_style_reward(info["amp_obs"]))
            per_step_task.append(reward)
    infos, rewards = [], []
    for latent in latents:
        _, reward, _, truncated, info = hier.step(latent)
        infos.append(info)
        rewards.append(reward)
    assert bool(truncated.all())  # the episodes ended at low-level step 2 of the second step
    style, task = torch.stack(per_step_style), torch.stack(per_step_task)  # [10, 3]
    for got, expected in ((infos[0]["style_reward"], style[:5].mean(0)), (infos[1]["style_reward"], style[5:7].mean(0)),
                          (rewards[0], task[:5].mean(0)), (rewards[1], task[5:7].mean(0))):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    # the batch gives the per-step rewards themselves, masked as the episode says
    amp_obs = [torch.randn(3, llc.amp_obs_dim, generator=gen) for _ in range(5)]
    counted = torch.tensor([[1.0, 1.0, 1.0]] * 2 + [[0.0, 1.0, 1.0]] * 3)  # env 0: two steps
    one_by_one = torch.stack([llc.calc_style_reward(x) for x in amp_obs])  # [5, 3]
    expected = torch.cat([one_by_one[:2, :1].mean(0), one_by_one[:, 1:].mean(0)])
    torch.testing.assert_close(hier.mean_style_reward(amp_obs, counted), expected, rtol=1e-6, atol=1e-7)
    hier.close()
    plain.close()


def test_high_level_actions_are_clamped_before_normalising():
    """As the release: components beyond [-1, 1] (sampling noise around the tanh mean) are cut."""
    actions = torch.tensor([[3.0, 0.5, 0.0], [1.0, 0.5, 0.0], [-0.2, 0.0, 0.0]])
    z = latent_from_action(actions)
    expected = torch.nn.functional.normalize(torch.tensor([[1.0, 0.5, 0.0]]), dim=-1)
    torch.testing.assert_close(z[0:1], expected)
    torch.testing.assert_close(z[1:2], expected)
    torch.testing.assert_close(z[2], torch.tensor([-1.0, 0.0, 0.0]))


def test_an_episode_ending_inside_a_high_level_step_restarts_at_the_next():
    """Episodes of 7 control steps, high-level steps of 5: the first episode ends at low step 2 of
    the second high-level step. The env then starts a fresh episode at the high-level boundary
    (0 steps run, first observation of a reset), not 3 steps into one driven by the old latent."""
    env = make_env("HumanoidReach", num_envs=2, robot="amp_humanoid", max_episode_length=7, **FAST)
    make_hrl_env(env, random_llc(env), llc_steps=5)
    env.reset()
    latent = torch.full((2, 64), 0.1)
    _, _, terminated, truncated, _ = env.step(latent)
    assert not bool((terminated | truncated).any()) and env.episode_steps.tolist() == [5, 5]
    obs, _, terminated, truncated, info = env.step(latent)
    assert bool(truncated.all()) and info["episode"]["length"].tolist() == [7, 7]
    assert env.episode_steps.tolist() == [0, 0]  # restarted at the boundary
    assert int(env.goal_steps.sum()) == 0
    torch.testing.assert_close(obs, env.compute_observations())  # the reset state's observation
    assert obs[:, 0].tolist() == pytest.approx([0.89, 0.89], abs=1e-4)  # standing (Default) root height
    assert env.task_metrics()["task/distance"] > 0  # the real episode's metrics are kept
    env.close()


TRAIN = ["num_envs=4", "device=cpu", "sim=mujoco", "num_threads=1", "save_every=0", "max_epochs=2",
         "train.params.actor_units=[32,32]", "train.params.critic_units=[32,32]",
         "train.params.horizon_length=4", "train.params.mini_epochs=1", "final_skill_report=0"]


def test_pretrain_llc_then_train_and_evaluate_every_task(tmp_path, capsys):
    llc_dir = tmp_path / "llc"
    run(["task=HumanoidASE", f"run_dir={llc_dir}", "task.env.fall_pool_size=4", "task.env.fall_steps=5",
         "train.params.amp_obs_demo_buffer_size=64", "train.params.amp_replay_buffer_size=64",
         "train.params.amp_batch_size=16", "train.params.amp_minibatch_size=16",
         "train.params.disc_units=[32,32]", "train.params.style_units=[16]"] + TRAIN)
    llc_ckpt = llc_dir / "latest.pt"
    assert llc_ckpt.is_file()
    expected_metrics = {"HumanoidHeading": "task/speed_error", "HumanoidLocation": "task/final_distance",
                        "HumanoidReach": "task/distance", "HumanoidStrike": "task/success_rate"}
    for task, metric in expected_metrics.items():
        run_dir = tmp_path / task
        run([f"task={task}", f"run_dir={run_dir}", f"llc_checkpoint={llc_ckpt}"] + TRAIN)
        state = torch.load(run_dir / "latest.pt", weights_only=False)
        assert state["agent"]["algo"] == "HRLAgent" and state["agent"]["epoch"] == 2
        capsys.readouterr()
        # the HRL checkpoint carries its LLC: evaluation needs no llc_checkpoint
        run([f"task={task}", "test=true", f"checkpoint={run_dir / 'latest.pt'}", "test_episodes=2"] + TRAIN)
        printed = capsys.readouterr().out
        assert f"{metric}=" in printed and "episode/count=" in printed, printed
    # resume continues the run from its own checkpoint (LLC included)
    strike_dir = tmp_path / "HumanoidStrike"
    run(["task=HumanoidStrike", "resume=true", f"run_dir={strike_dir}"] + 
        [a for a in TRAIN if not a.startswith("max_epochs=")] + ["max_epochs=3"])
    assert torch.load(strike_dir / "latest.pt", weights_only=False)["agent"]["epoch"] == 3
    # the low-level controller stayed frozen through high-level training
    before, after = load_llc(llc_ckpt).export(), load_llc(tmp_path / "HumanoidStrike" / "latest.pt").export()
    assert before["robot"] == "amp_humanoid"
    for name, weight in before["weights"].items():
        assert torch.equal(weight, after["weights"][name]), name
