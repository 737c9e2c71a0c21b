"""Left-right symmetry: the mirror maps of robots.mirror and envs.observations, and an env that
is exactly symmetric (mirrored state and actions give the mirrored motion and observations)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from ase_humanoid.agents.ase import ASEAgent, mirror_latents
from ase_humanoid.agents.config import ASEConfig
from ase_humanoid.envs import make_env
from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.robots.description import load_robot
from ase_humanoid.robots.mirror import REFLECTION, robot_mirror, swap_sides

WALK = Path(__file__).resolve().parents[1] / "motions" / "amp_humanoid" / "amp_humanoid_walk.npy"
M = torch.tensor(REFLECTION)
QUAT_REFLECTION = torch.tensor([-1.0, 1.0, -1.0, 1.0])  # xyzw of M R M


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
    reference = env.motion_lib.get_motion_state(torch.tensor([0]), torch.tensor([0.7]))
    state = (reference.root_pos, reference.root_rot, reference.root_lin_vel, reference.root_ang_vel,
             reference.dof_pos, reference.dof_vel)
    mirrored = (state[0] * M, state[1] * QUAT_REFLECTION, state[2] * M, state[3] * -M,
                maps["actions"](state[4]), maps["actions"](state[5]))
    env.reset()
    env.sim.set_robot_state(torch.arange(2), *[torch.cat(pair) for pair in zip(state, mirrored)])
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


# ---- the ASE agent's symmetry loss -------------------------------------------------------------


def small_ase(env, with_maps=True, **overrides):
    config = ASEConfig(**{**dict(actor_units=[32, 32], critic_units=[32], disc_units=[32, 16], style_units=[16],
                                 latent_dim=4, horizon_length=4, minibatch_size=16, mini_epochs=1,
                                 amp_obs_demo_buffer_size=64, amp_replay_buffer_size=48, amp_batch_size=16,
                                 amp_minibatch_size=16, learning_rate=1e-3, seed=3), **overrides})
    maps = env.mirror_maps() if config.mirror_coef and with_maps else None
    return ASEAgent(env.num_obs, env.num_actions, env.amp_observation_space.shape[-1], env.num_envs, env.fetch_amp_obs_demo,
                    config, mirror_maps=maps)


def test_mirror_latents_is_an_orthogonal_involution():
    z = torch.nn.functional.normalize(torch.randn(16, 5), dim=-1)
    torch.testing.assert_close(mirror_latents(mirror_latents(z)), z, atol=0, rtol=0)
    torch.testing.assert_close(mirror_latents(z).norm(dim=-1), torch.ones(16))
    assert (mirror_latents(z)[:, :2] == -z[:, :2]).all() and (mirror_latents(z)[:, 2:] == z[:, 2:]).all()


def test_mirror_loss_makes_the_actor_symmetric():
    env = make_env("HumanoidASE", num_envs=8, motion_file=str(WALK), num_threads=1, seed=0)
    with pytest.raises(ConfigError, match="mirror_coef"):
        small_ase(env, mirror_coef=1.0, with_maps=False)
    agent = small_ase(env, mirror_coef=1.0)
    maps = env.mirror_maps()
    # real states: the walk's reference states and a few random steps from them
    obs = [env.reset()]
    for _ in range(6):
        obs.append(env.step(torch.rand(env.num_envs, env.num_actions) * 2 - 1)[0])
    obs = torch.cat(obs)
    agent.obs_norm.update(obs)
    obs_n = agent._normalize_obs(obs)
    z = agent.sample_latents(len(obs))
    train, held_out = slice(0, 40), slice(40, None)

    def asymmetry(rows):
        """The mirrored state's action against the mirrored action, on raw observations."""
        with torch.no_grad():
            mirrored = agent.action_mean(maps["obs"](obs[rows]), mirror_latents(z[rows]))
            return (mirrored - maps["actions"](agent.action_mean(obs[rows], z[rows]))).square().sum(-1).mean().item()

    before = asymmetry(held_out)
    optimiser = torch.optim.Adam(agent.actor.parameters(), lr=3e-3)
    for _ in range(300):
        loss = agent._mirror_loss(obs_n[train], agent.actor(obs_n[train], z[train]), z[train])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    after = asymmetry(held_out)
    assert after < 0.1 * before, (before, after)


def test_mirror_loss_in_the_ase_update():
    env = make_env("HumanoidASE", num_envs=4, motion_file=str(WALK), num_threads=1, seed=0)
    agent = small_ase(env, mirror_coef=0.5)
    obs = env.reset()
    for _ in range(agent.config.horizon_length):
        out = agent.act(obs)
        next_obs, reward, terminated, truncated, info = env.step(out["actions"])
        agent.record_transition(obs, out["actions"], reward, terminated, truncated, next_obs, info)
        obs = next_obs
    stats = agent.update()
    assert stats["mirror_loss"] > 0
