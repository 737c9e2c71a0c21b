"""Left-right symmetry: the mirror maps of robots.mirror and envs.observations, and an env that
is exactly symmetric (mirrored state and actions give the mirrored motion and observations)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from ase_humanoid.agents.ase import ASEAgent
from ase_humanoid.agents.config import ASEConfig
from ase_humanoid.agents.hrl import LowLevelController
from ase_humanoid.agents.networks import mirror_latents
from ase_humanoid.agents.normalizer import RunningMeanStd
from ase_humanoid.envs import make_env
from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.policy_export import policy_models
from ase_humanoid.robots.description import load_robot
from ase_humanoid.robots.mirror import (
    QUATERNION_REFLECTION,
    REFLECTION,
    robot_mirror,
    swap_sides,
)

WALK = Path(__file__).resolve().parents[1] / "motions" / "amp_humanoid" / "amp_humanoid_walk.npy"
M = torch.tensor(REFLECTION)


def set_walk_and_its_mirror_image(env, maps) -> None:
    """World 0 in the walk's reference state at 0.7 s, world 1 in its mirror image."""
    reference = env.motion_lib.get_motion_state(torch.tensor([0]), torch.tensor([0.7]))
    state = (reference.root_pos, reference.root_rot, reference.root_lin_vel, reference.root_ang_vel,
             reference.dof_pos, reference.dof_vel)
    mirrored = (state[0] * M, state[1] * torch.tensor(QUATERNION_REFLECTION), state[2] * M, state[3] * -M,
                maps["actions"](state[4]), maps["actions"](state[5]))
    env.sim.set_robot_state(torch.arange(2), *[torch.cat(pair) for pair in zip(state, mirrored)])


def test_swap_sides_keeps_case():
    assert [swap_sides(n) for n in ("left_foot", "RightUpLeg", "LEFT_HAND", "pelvis")] == \
        ["right_foot", "LeftUpLeg", "RIGHT_HAND", "pelvis"]


def test_robot_mirror_of_the_amp_humanoid():
    robot = load_robot("amp_humanoid")
    mirror = robot_mirror(robot)
    names = robot.body_names
    assert names[int(mirror.body_partners[names.index("left_foot")])] == "right_foot"
    assert names[int(mirror.body_partners[0])] == names[0]  # the root is its own image
    dofs = robot.dof_names
    partner = {dofs[d]: dofs[int(mirror.dofs.index[d])] for d in range(len(dofs))}
    assert partner["right_hip_x"] == "left_hip_x" and partner["abdomen_y"] == "abdomen_y"
    # a ball joint's x, y, z hinges: roll and yaw flip, pitch stays
    hip = [dofs.index(f"right_hip_{a}") for a in "xyz"]
    assert mirror.dofs.sign[hip].tolist() == [-1.0, 1.0, -1.0]
    # the knee bends about y: the same on both sides
    assert float(mirror.dofs.sign[dofs.index("right_knee")]) == 1.0
    # mirroring twice gives every vector back
    x = torch.randn(4, robot.num_dofs)
    torch.testing.assert_close(mirror.dofs(mirror.dofs(x)), x, atol=0, rtol=0)
    # the action -> PD target mapping commutes with the mirror
    actions = torch.rand(8, robot.num_dofs) * 2 - 1
    torch.testing.assert_close(robot.action_to_pd_target(mirror.dofs(actions)),
                               mirror.dofs(robot.action_to_pd_target(actions)), atol=1e-6, rtol=0)


def test_asymmetric_humanoids_are_named():
    with pytest.raises(ModelError, match="'sword'"):  # hangs from right_hand alone
        robot_mirror(load_robot("sword_shield"))
    robot = load_robot("amp_humanoid")
    knee = robot.dof_names.index("left_knee")
    axes = robot.dof_axes.clone()
    axes[knee] = torch.tensor([1.0, 0.0, 0.0])
    with pytest.raises(ModelError, match="'right_knee' turns about .* its partner 'left_knee'"):
        robot_mirror(dataclasses.replace(robot, dof_axes=axes))
    upper = robot.dof_limits_upper.clone()
    upper[knee] += 0.1
    with pytest.raises(ModelError, match="'right_knee' has range .* its partner 'left_knee'"):
        robot_mirror(dataclasses.replace(robot, dof_limits_upper=upper))
    kp = robot.kp.clone()
    kp[knee] *= 2
    with pytest.raises(ModelError, match="'right_knee' has kp .* its partner 'left_knee'"):
        robot_mirror(dataclasses.replace(robot, kp=kp))


@pytest.mark.parametrize("pd_damping", ["joint", "drive_implicit"])
def test_env_is_mirror_symmetric(pd_damping):
    """Two worlds, one the mirror image of the other, driven by mirrored random actions through
    a step, a fall and contacts: bodies, policy and AMP observations stay exact mirror images
    (the physics, the PD law, the action mapping and the observations hold no left-right bias)."""
    env = make_env("HumanoidAMP", num_envs=2, motion_file=str(WALK), state_init="Default",
                   pd_damping=pd_damping, enable_early_termination=False, num_threads=1, seed=0)
    maps = env.mirror_maps()
    bodies = robot_mirror(env.robot).body_partners
    env.reset()
    set_walk_and_its_mirror_image(env, maps)
    env.amp_frames[:] = env.amp_obs_from_sim().unsqueeze(1)  # a history of the present state
    generator = torch.Generator().manual_seed(0)
    max_yaw_rate = 0.0
    for _ in range(30):
        actions = torch.rand(1, env.num_actions, generator=generator) * 2 - 1
        obs, _, terminated, _, info = env.step(torch.cat([actions, maps["actions"](actions)]))
        assert not terminated.any()
        s = env.sim.state
        torch.testing.assert_close(s.body_pos[1], (s.body_pos[0] * M)[bodies], atol=1e-5, rtol=0)
        torch.testing.assert_close(obs[1], maps["obs"](obs[0]), atol=1e-5, rtol=0)
        torch.testing.assert_close(info["amp_obs"][1], maps["amp_obs"](info["amp_obs"][0]), atol=1e-5, rtol=0)
        max_yaw_rate = max(max_yaw_rate, abs(float(s.root_ang_vel[0, 2])))
    assert max_yaw_rate > 1.0  # the random actions did turn the character: a real test of the yaw


def test_mirror_maps_refuse_task_observations():
    env = make_env("HumanoidHeading", num_envs=1, state_init="Default", num_threads=1, seed=0)
    with pytest.raises(ConfigError, match="task or height-scan"):
        env.mirror_maps()


# ---- the symmetric ASE actor ----------------------------------------------------------------


def small_ase(env, with_maps=True, **overrides):
    config = ASEConfig(**{**dict(actor_units=[32, 32], critic_units=[32], disc_units=[32, 16], style_units=[16],
                                 latent_dim=4, horizon_length=8, minibatch_size=16, mini_epochs=1,
                                 amp_obs_demo_buffer_size=64, amp_replay_buffer_size=48, amp_batch_size=16,
                                 amp_minibatch_size=16, learning_rate=1e-3, seed=3), **overrides})
    maps = env.mirror_maps() if with_maps else None
    return ASEAgent(env.num_obs, env.num_actions, env.amp_observation_space.shape[-1], env.num_envs,
                    env.fetch_amp_obs_demo, config, mirror_maps=maps)


def test_mirror_latents_is_an_orthogonal_involution():
    z = torch.nn.functional.normalize(torch.randn(16, 5), dim=-1)
    torch.testing.assert_close(mirror_latents(mirror_latents(z)), z, atol=0, rtol=0)
    torch.testing.assert_close(mirror_latents(z).norm(dim=-1), torch.ones(16))
    assert (mirror_latents(z)[:, :2] == -z[:, :2]).all() and (mirror_latents(z)[:, 2:] == z[:, 2:]).all()


def test_symmetrized_normaliser_holds_the_statistics_of_samples_and_mirror_images():
    mirror = robot_mirror(load_robot("amp_humanoid")).dofs
    x = torch.randn(500, len(mirror), dtype=torch.float64) * torch.linspace(0.5, 3.0, len(mirror)) + 0.7
    norm, both = RunningMeanStd(len(mirror)), RunningMeanStd(len(mirror))
    norm.update(x)
    norm.symmetrize(mirror)
    both.update(torch.cat([x, mirror(x)]))
    torch.testing.assert_close(norm.mean, both.mean)
    torch.testing.assert_close(norm.var, both.var)
    # normalising commutes with mirroring now
    torch.testing.assert_close(norm.normalize(mirror(x)), mirror(norm.normalize(x)))


@pytest.fixture(scope="module")
def walk_env():
    return make_env("HumanoidASE", num_envs=2, motion_file=str(WALK), state_init="Default",
                    enable_early_termination=False, num_threads=1, seed=0)


def test_symmetric_actor_needs_the_mirror_maps(walk_env):
    with pytest.raises(ConfigError, match="symmetric_actor"):
        small_ase(walk_env, with_maps=False, symmetric_actor=True)


def test_symmetric_controller_moves_mirror_worlds_as_mirror_images(walk_env):
    """A world and its mirror image, driven by a symmetric actor with latents z and P z, stay
    exact mirror images; a plain actor's do not. The LLC a task loads acts the same."""
    env, maps = walk_env, walk_env.mirror_maps()
    bodies = robot_mirror(env.robot).body_partners
    plain = small_ase(env, symmetric_actor=False)
    symmetric = small_ase(env, symmetric_actor=True)
    symmetric.load_policy_state_dict(plain.state_dict())  # the same weights: plain and symmetric load alike
    z = torch.nn.functional.normalize(torch.tensor([[0.9, -0.3, 0.2, 0.1]]), dim=-1)
    latents = torch.cat([z, mirror_latents(z)])

    def mirror_error(agent, steps=20):
        env.reset()
        set_walk_and_its_mirror_image(env, maps)
        obs = env.compute_observations()
        for _ in range(steps):
            obs = env.step(agent.action_mean(obs, latents))[0]
        s = env.sim.state
        return (s.body_pos[1] - (s.body_pos[0] * M)[bodies]).abs().max().item()

    assert mirror_error(symmetric) < 1e-4
    assert mirror_error(plain) > 1e-2
    llc = LowLevelController.from_ase_state(symmetric.state_dict(), "amp_humanoid", "<test>")
    obs = env.compute_observations()
    torch.testing.assert_close(llc.actions(obs, latents), symmetric.action_mean(obs, latents))
    torch.testing.assert_close(llc.actions_for_style(obs, llc.style(latents)), symmetric.action_mean(obs, latents))
    # and so does the exported policy (raw observations in, the normaliser folded in)
    exported = policy_models(symmetric.state_dict(), "amp_humanoid")[0].module
    with torch.no_grad():
        actions = exported(obs, latents)[0]
        torch.testing.assert_close(actions, symmetric.action_mean(obs, latents), atol=1e-5, rtol=0)
        torch.testing.assert_close(exported(maps["obs"](obs), mirror_latents(latents))[0], maps["actions"](actions),
                                   atol=1e-5, rtol=0)


def test_symmetric_actor_trains_and_stays_symmetric(walk_env):
    env, maps = walk_env, walk_env.mirror_maps()
    agent = small_ase(env, symmetric_actor=True)
    obs = env.reset()
    for _ in range(agent.config.horizon_length):
        out = agent.act(obs)
        next_obs, reward, terminated, truncated, info = env.step(out["actions"])
        agent.record_transition(obs, out["actions"], reward, terminated, truncated, next_obs, info)
        obs = next_obs
    stats = agent.update()
    assert all(math.isfinite(v) for v in stats.values())
    assert agent.obs_norm.count > 0
    z = agent.sample_latents(len(obs))
    torch.testing.assert_close(agent.action_mean(maps["obs"](obs), mirror_latents(z)),
                               maps["actions"](agent.action_mean(obs, z)), atol=1e-5, rtol=0)
