"""Humanoid environments: sizes, observation round trips against the MotionLib, resets,
terminations, getup pool and recovery, non-finite isolation, projectiles, kinematic playback."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from ase_humanoid.envs import make_env, task_names
from ase_humanoid.envs.reset_plan import DEFAULT_ROOT_HEIGHT
from ase_humanoid.envs.terminations import fall_termination
from ase_humanoid.errors import ConfigError
from ase_humanoid.robots.kinematics import body_state_from_qpos
from ase_humanoid.utils import rotations as rot

MOTIONS = Path(__file__).resolve().parents[1] / "motions"
CLIPS = MOTIONS / "amp_humanoid"
CARTWHEEL = CLIPS / "amp_humanoid_cartwheel.npy"  # fast whole-body rotation: a demanding round trip
LOCOMOTION = MOTIONS / "dataset_amp_humanoid_locomotion.yaml"  # walk, run
SWORD_KICK = MOTIONS / "retargeted" / "cmu_11_01_kick_sword_shield.npy"  # 30 fps, 17 bodies
FAST = dict(num_threads=1, seed=0)


def hold_pose_actions(env, dof_pos: torch.Tensor) -> torch.Tensor:
    """Actions whose PD targets are `dof_pos [N, D]` (inverse of the robot's action mapping)."""
    return (dof_pos - env.robot.pd_action_offset) / env.robot.pd_action_scale


def set_lying(env, env_ids: torch.Tensor) -> None:
    """Put the humanoids of `env_ids` flat on their backs on the floor, at rest."""
    n = len(env_ids)
    axis = torch.tensor([[0.0, 1.0, 0.0]]).expand(n, 3)
    root_rot = rot.quat_from_axis_angle(axis, torch.full((n,), -math.pi / 2))
    root_pos = torch.tensor([[0.0, 0.0, 0.12]]).expand(n, 3)
    zeros3, dofs = torch.zeros(n, 3), torch.zeros(n, env.num_actions)
    env.sim.set_robot_state(env_ids, root_pos, root_rot, zeros3, zeros3, dofs, dofs)


# ---- sizes and API -------------------------------------------------------------------------------


@pytest.mark.parametrize("robot, obs_size, amp_size, actions", [
    ("amp_humanoid", 223, 125, 28),
    ("sword_shield", 253, 140, 31),
])
def test_sizes(robot, obs_size, amp_size, actions):
    env = make_env("HumanoidAMP", robot=robot, num_envs=2, state_init="Default", **FAST)
    assert (env.num_obs, env.num_amp_obs_per_step, env.num_amp_obs_steps, env.num_actions) == (
        obs_size, amp_size, 10, actions)
    assert env.observation_space.shape == (obs_size,)
    assert env.action_space.shape == (actions,)
    assert float(env.action_space.low.min()) == -1.0 and float(env.action_space.high.max()) == 1.0
    assert env.amp_observation_space.shape == (10 * amp_size,)
    obs = env.reset()
    assert obs.shape == (2, obs_size) and torch.isfinite(obs).all()
    obs, reward, terminated, truncated, info = env.step(torch.zeros(2, actions))
    assert obs.shape == (2, obs_size) and reward.shape == (2,)
    assert terminated.dtype == torch.bool and truncated.dtype == torch.bool
    assert info["amp_obs"].shape == (2, 10 * amp_size)
    assert torch.equal(info["terminate"], terminated)
    assert env.render_state(1).shape == (env.mj_model.nq,)
    # the Default pose: root at 0.89 m, identity rotation, all DoFs at zero
    env.reset()
    torch.testing.assert_close(env.compute_observations()[:, 0], torch.full((2,), DEFAULT_ROOT_HEIGHT))
    torch.testing.assert_close(env.amp_history[:, 0], env.amp_obs_from_sim(), atol=1e-5, rtol=0)
    assert torch.equal(env.sim.state.dof_pos, torch.zeros(2, actions))


def test_config_errors():
    with pytest.raises(ConfigError, match=r"\['num_env'\] for HumanoidEnvConfig \(did you mean 'num_envs'\?\); "
                                          r"valid keys.*num_envs"):
        make_env("HumanoidAMP", num_env=4)
    with pytest.raises(ConfigError, match="state_init"):
        make_env("HumanoidAMP", state_init="Sometimes")
    with pytest.raises(ConfigError, match="motion_file"):
        make_env("HumanoidAMP", state_init="Random")
    with pytest.raises(ConfigError, match="num_envs.*integer"):
        make_env("HumanoidAMP", num_envs="four")
    with pytest.raises(ConfigError, match="HumanoidAMP"):
        make_env("HumanoidWalk")
    with pytest.raises(ConfigError, match="getup_reward_power.*> 0"):
        make_env("HumanoidASE", state_init="Default", getup_reward_power=0.0)
    for phases, expected in [
            ([{"getup_reward": True}], r"phases entry 1 needs from_epoch"),
            ([{"from_epoch": 5}, {"from_epoch": 5}], r"phases entry 2 needs from_epoch, an integer >= 0 above"),
            ([{"from_epoch": 1, "num_envs": 8}], r"\['num_envs'\] cannot change during training; valid keys: "
                                                 r"from_epoch, fall_init_prob"),
            ([{"from_epoch": 1, "fall_init_prob": 1.5}], r"'phases', entry 1 \(from_epoch 1\): env config key "
                                                         r"'fall_init_prob': must be in \[0, 1\]"),
            ([{"from_epoch": 1, "recovery_steps": "long"}], r"entry 1 .*recovery_steps.*integer"),
            (["fall_init_prob"], r"phases entry 1 must be a mapping")]:
        with pytest.raises(ConfigError, match=expected):
            make_env("HumanoidASE", state_init="Default", phases=phases)
    assert {"HumanoidAMP", "HumanoidASE", "HumanoidPerturb", "HumanoidViewMotion"} <= set(task_names())
    env = make_env("HumanoidAMP", num_envs=1, state_init="Default", **FAST)
    with pytest.raises(ConfigError, match="motion_file"):
        env.fetch_amp_obs_demo(2)


def test_observations_ignore_heading_and_ground_position():
    """Turning the character about z and moving it on the ground changes neither observation;
    with policy_root_rotation="world" / local_root_obs=False the root rotation keeps the heading."""
    from ase_humanoid.envs import observations as obs_fn
    from ase_humanoid.robots import load_robot

    robot = load_robot("amp_humanoid")
    gen = torch.Generator().manual_seed(3)
    n, num_bodies = 4, robot.num_bodies
    body_pos = torch.randn(n, num_bodies, 3, generator=gen)
    body_rot = rot.quat_normalize(torch.randn(n, num_bodies, 4, generator=gen))
    lin_vel, ang_vel = torch.randn(n, num_bodies, 3, generator=gen), torch.randn(n, num_bodies, 3, generator=gen)
    dof_pos = torch.rand(n, robot.num_dofs, generator=gen) - 0.5
    joint_vel = torch.randn(n, robot.num_dofs, generator=gen)
    key = torch.tensor(robot.key_body_ids)

    turn = rot.quat_from_axis_angle(torch.tensor([0.0, 0.0, 1.0]).expand(n, 3), torch.tensor([0.3, 1.5, -2.0, 3.0]))
    shift = torch.tensor([[1.0, -2.0, 0.0]])
    turned = dict(
        body_pos=rot.quat_rotate(turn.unsqueeze(1), body_pos) + shift,
        body_rot=rot.quat_mul(turn.unsqueeze(1), body_rot),
        lin_vel=rot.quat_rotate(turn.unsqueeze(1), lin_vel),
        ang_vel=rot.quat_rotate(turn.unsqueeze(1), ang_vel),
    )

    def policy(p, r, v, w, local=True):
        return obs_fn.policy_observation(p, r, v, w, root_rotation="heading_free" if local else "world")

    def amp(p, r, v, w, local=True):
        return obs_fn.amp_observation(p[:, 0], r[:, 0], v[:, 0], w[:, 0], obs_fn.joint_rotations(robot, dof_pos),
                                      joint_vel, p[:, key], local_root_obs=local)

    original = (body_pos, body_rot, lin_vel, ang_vel)
    moved = (turned["body_pos"], turned["body_rot"], turned["lin_vel"], turned["ang_vel"])
    assert policy(*original).shape == (n, 223) and amp(*original).shape == (n, 125)
    torch.testing.assert_close(policy(*moved), policy(*original), atol=1e-5, rtol=0)
    torch.testing.assert_close(amp(*moved), amp(*original), atol=1e-5, rtol=0)
    # world-frame root rotation: the root's tan-norm (policy 1 + 3 (B - 1) ..., AMP 1 ... 7) turns
    root_slot = slice(1 + 3 * (num_bodies - 1), 1 + 3 * (num_bodies - 1) + 6)
    assert not torch.allclose(policy(*moved, local=False)[:, root_slot], policy(*original, local=False)[:, root_slot])
    assert not torch.allclose(amp(*moved, local=False)[:, 1:7], amp(*original, local=False)[:, 1:7])
    torch.testing.assert_close(policy(*original, local=False)[:, root_slot], rot.quat_to_tan_norm(body_rot[:, 0]))

    # The step path computes both in one call: the same numbers. (Body 0 is the root, so its
    # states are the AMP observation's root states.)
    joint_rot = obs_fn.joint_rotations(robot, dof_pos)
    for local_amp in (True, False):  # the two switches are independent
        for local_policy in (True, False):
            for state in (original, moved):
                fused_policy, fused_amp = obs_fn.humanoid_observations(
                    *state, joint_rot, joint_vel, key, local_amp, "heading_free" if local_policy else "world")
                torch.testing.assert_close(fused_policy, policy(*state, local=local_policy), atol=1e-6, rtol=0)
                torch.testing.assert_close(fused_amp, amp(*state, local=local_amp), atol=1e-6, rtol=0)


def tan_norm_by_hand(q: tuple[float, float, float, float]) -> list[float]:
    """Tangent (rotated x axis) and normal (rotated z axis) of unit quaternion q = (x, y, z, w),
    columns 0 and 2 of its rotation matrix written out."""
    x, y, z, w = q
    tangent = [1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)]
    normal = [2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)]
    return tangent + normal


@pytest.mark.parametrize("root_rotation", ["heading_free", "world"])
def test_policy_root_rotation_against_hand_computation(root_rotation):
    """Root yawed 90 degrees and pitched 30 degrees: "world" observes the root's own rotation
    (the release's localRootObs: True), "heading_free" the pitch alone."""
    env = make_env("HumanoidAMP", num_envs=1, state_init="Default", policy_root_rotation=root_rotation, **FAST)
    states = env.default_states(1)
    half_yaw, half_pitch = math.pi / 4, math.radians(30.0) / 2
    yaw = (0.0, 0.0, math.sin(half_yaw), math.cos(half_yaw))
    pitch = (0.0, math.sin(half_pitch), 0.0, math.cos(half_pitch))
    root = rot.quat_mul(torch.tensor([yaw]), torch.tensor([pitch]))  # yaw after pitch
    states.root_rot = root
    obs = env.policy_obs_of(env.kinematics_of(states))
    num_bodies = env.robot.num_bodies
    start = 1 + 3 * (num_bodies - 1)
    expected = tan_norm_by_hand(tuple(root[0].tolist()) if root_rotation == "world" else pitch)
    torch.testing.assert_close(obs[0, start:start + 6], torch.tensor(expected), atol=1e-6, rtol=0)
    # the AMP observation's root rotation is heading-free either way (local_root_obs defaults on)
    amp = env.amp_obs_from_states(states)
    torch.testing.assert_close(amp[0, 1:7], torch.tensor(tan_norm_by_hand(pitch)), atol=1e-6, rtol=0)
    with pytest.raises(ConfigError, match="policy_root_rotation.*heading_free"):
        make_env("HumanoidAMP", num_envs=1, policy_root_rotation="local", **FAST)
    env.close()


# ---- round trips against the MotionLib -----------------------------------------------------------


@pytest.fixture(scope="module")
def cartwheel_env():
    return make_env("HumanoidAMP", num_envs=6, motion_file=str(CARTWHEEL), state_init="Random", **FAST)


def reference_reset(env, times):
    ids = torch.arange(len(times))
    motion_ids = torch.zeros(len(times), dtype=torch.long)
    env.reset_reference(ids, motion_ids=motion_ids, times=times)
    return motion_ids


@pytest.fixture(scope="module")
def sword_env():
    return make_env("HumanoidAMP", robot="sword_shield", num_envs=6, motion_file=str(SWORD_KICK),
                    state_init="Random", **FAST)


@pytest.mark.parametrize("env_name", ["cartwheel_env", "sword_env"])
def test_amp_obs_round_trip(env_name, request):
    """After reference-state init at t, the AMP history from the simulator equals the demo
    observations of the clip at t - k dt, and the current frame matches the clip's own data."""
    env = request.getfixturevalue(env_name)
    lib, steps, per = env.motion_lib, env.num_amp_obs_steps, env.num_amp_obs_per_step
    fps = float(lib.motion_fps[0])
    # on frames, between frames, and before 9 dt (times clamp to the clip start)
    times = torch.tensor([0.0, 0.1, 10 / fps, 0.55, 1.2345, 2.0])
    motion_ids = reference_reset(env, times)
    demo_times = times.unsqueeze(-1) - env.control_dt * torch.arange(steps)
    demo = env.amp_obs_from_motion(motion_ids.repeat_interleave(steps), demo_times.reshape(-1))
    demo = demo.reshape(-1, steps, per)
    torch.testing.assert_close(env.amp_history, demo, atol=1e-3, rtol=0)
    # the current frame as the simulator's state gives it
    torch.testing.assert_close(env.amp_obs_from_sim(), demo[:, 0], atol=1e-3, rtol=0)

    # Independent of the observation functions: on a frame, the current AMP frame holds the
    # clip's root height, joint rotations and key-body positions (heading frame).
    frame = 2  # t = 10 / fps s is frame 10 of the clip
    state = lib.get_motion_state(motion_ids[:1], times[frame:frame + 1])
    current = env.amp_history[frame, 0]
    heading_inv = rot.calc_heading_quat_inv(state.root_rot)
    assert current[0].item() == pytest.approx(state.root_pos[0, 2].item(), abs=1e-5)
    key_local = rot.quat_rotate(heading_inv.unsqueeze(1), state.key_body_pos - state.root_pos.unsqueeze(1))
    torch.testing.assert_close(current[-3 * len(env.key_body_ids):], key_local.reshape(-1), atol=1e-3, rtol=0)
    joints = rot.quat_to_tan_norm(lib.local_rot[int(lib.motion_start[0]) + 10, env.robot.dof_body_ids])
    num_joints = env.robot.num_joints
    torch.testing.assert_close(current[13:13 + 6 * num_joints], joints.reshape(-1), atol=1e-3, rtol=0)
    torch.testing.assert_close(current[13 + 6 * num_joints:13 + 6 * num_joints + env.num_actions],
                               state.joint_vel[0], atol=1e-3, rtol=0)


def test_policy_obs_round_trip(cartwheel_env):
    """Policy observation after reference-state init equals the one computed from the clip's
    state; pose terms also match the clip's stored body positions on a frame."""
    env = cartwheel_env
    times = torch.tensor([0.0, 0.1, 10 / 60, 0.55, 1.2345, 2.0])
    motion_ids = reference_reset(env, times)
    obs = env.compute_observations()
    torch.testing.assert_close(obs, env.policy_obs_from_motion(motion_ids, times), atol=1e-3, rtol=0)

    state = env.motion_lib.get_motion_state(motion_ids[2:3], times[2:3])
    num_bodies = env.robot.num_bodies
    heading_inv = rot.calc_heading_quat_inv(state.root_rot).unsqueeze(1)
    body_local = rot.quat_rotate(heading_inv, state.body_pos[:, 1:] - state.root_pos.unsqueeze(1))
    assert obs[2, 0].item() == pytest.approx(state.root_pos[0, 2].item(), abs=1e-5)
    torch.testing.assert_close(obs[2, 1:3 * num_bodies - 2], body_local.reshape(-1), atol=1e-3, rtol=0)
    # velocities: the simulator's world-frame root velocity is the clip's
    root_vel_local = rot.quat_rotate(heading_inv[:, 0], state.root_lin_vel)[0]
    start = 1 + 3 * (num_bodies - 1) + 6 * num_bodies
    torch.testing.assert_close(obs[2, start:start + 3], root_vel_local, atol=1e-3, rtol=0)


def test_amp_history_shifts_and_demo_fetch(cartwheel_env):
    env = cartwheel_env
    per = env.num_amp_obs_per_step
    env.reset()
    actions = torch.zeros(env.num_envs, env.num_actions)
    _, _, _, _, info1 = env.step(actions)
    _, _, terminated, truncated, info2 = env.step(actions)
    kept = ~(terminated | truncated)
    # newest first: what was the newest frame is now the second
    torch.testing.assert_close(info2["amp_obs"][kept, per:2 * per], info1["amp_obs"][kept, :per])
    torch.testing.assert_close(info2["amp_obs"][kept, per:], info1["amp_obs"][kept, :-per])

    # fetch_amp_obs_demo = the clip at t - k dt for sampled (clip, t), through the same functions
    saved = env.generator.get_state()
    demo = env.fetch_amp_obs_demo(5)
    env.generator.set_state(saved)
    ids = env.motion_lib.sample_motions(5, generator=env.generator)
    t = env.motion_lib.sample_time(ids, truncate_time=9 * env.control_dt, generator=env.generator)
    t = t + 9 * env.control_dt  # the newest frame: the whole window lies inside the clip
    assert demo.shape == (5, 10 * per) and torch.isfinite(demo).all()
    for k in (0, 4, 9):
        torch.testing.assert_close(demo[:, k * per:(k + 1) * per],
                                   env.amp_obs_from_motion(ids, t - k * env.control_dt))
    assert env.collect_reference_motions(3).shape == (3, 10 * per)


def test_demo_windows_lie_inside_the_clip(cartwheel_env):
    # The newest frame of a demo window is drawn in [(steps - 1) dt, length] (as the ASE
    # release): no window reaches before the clip's first frame (which would repeat a frozen
    # frame in the discriminator's "real" set) and the clip's last (steps - 1) dt is reachable.
    env = cartwheel_env
    window = (env.num_amp_obs_steps - 1) * env.control_dt
    length = float(env.motion_lib.motion_lengths[0])
    saved = env.generator.get_state()
    ids, newest = env.sample_amp_obs_demo_keys(4000)
    env.generator.set_state(saved)
    assert (ids == 0).all()
    assert newest.min() >= window - 1e-6 and newest.max() <= length + 1e-6
    assert (newest > length - window / 2).any()  # the end of the clip is a newest frame too
    # and the observation has no repeated frames: consecutive steps of the window differ
    demo = env.amp_obs_demo_from_keys(ids[:200], newest[:200]).reshape(200, env.num_amp_obs_steps, -1)
    step_change = (demo[:, :-1] - demo[:, 1:]).abs().amax(dim=-1)
    assert (step_change > 1e-6).all()


# ---- terminations --------------------------------------------------------------------------------


def test_early_termination_lying_not_standing():
    env = make_env("HumanoidAMP", num_envs=2, state_init="Default", **FAST)
    env.reset()
    set_lying(env, torch.tensor([1]))
    hold = hold_pose_actions(env, torch.zeros(2, env.num_actions))
    _, _, terminated, _, _ = env.step(hold)
    assert not terminated.any()  # never on the first step of an episode
    obs_before = env.compute_observations()
    obs, _, terminated, truncated, info = env.step(hold)
    assert terminated.tolist() == [False, True] and not truncated.any()
    assert info["episode"]["length"].tolist() == [2]
    # auto-reset: env 1 stands again; its last observation of the old episode is in final_obs
    assert obs[1, 0].item() == pytest.approx(DEFAULT_ROOT_HEIGHT, abs=1e-5)
    assert info["final_obs"][1, 0].item() < 0.3 and obs_before[1, 0].item() < 0.3
    for _ in range(4):
        _, _, terminated, _, _ = env.step(hold)
        assert not terminated[0]


def test_fall_propped_on_the_shield_terminates():
    """Sword-and-shield humanoid lying on its left side, propped up by the shield: every body
    but the shield arm stays above its height (head 0.3 m, others 0.15 m), so only the
    release's `left_lower_arm` height (0.32 m) ends the episode. Body heights are the
    simulator's kinematics of that pose; the floor's push on the shield is the contact."""
    env = make_env("HumanoidAMP", robot="sword_shield", num_envs=1, state_init="Default", **FAST)
    env.reset()
    names = env.robot.body_names
    arm = names.index("left_lower_arm")
    assert env.termination_heights[arm].item() == pytest.approx(0.32)
    assert env.termination_heights[names.index("head")].item() == pytest.approx(0.3)
    states = env.default_states(1)
    # rolled 69 degrees onto the left side (about the forward axis), pelvis 0.39 m up
    states.root_rot = rot.quat_from_axis_angle(torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([-1.2]))
    states.root_pos = torch.tensor([[0.0, 0.0, 0.39]])
    body_pos = env.kinematics_of(states).body_pos  # [1, B, 3]
    height = body_pos[0, :, 2]
    others = env.non_contact_mask.clone()
    others[arm] = False
    assert height[arm] < 0.32 and bool((height[others] >= 0.15).all()) and height[names.index("head")] > 0.3
    contact = torch.zeros(1, len(names), 3)
    contact[0, names.index("shield"), 2] = 50.0  # the floor holds the shield up
    steps = torch.tensor([10])
    assert bool(fall_termination(contact, body_pos, env.termination_heights, env.non_contact_mask, steps)[0])
    without_arm_height = env.termination_heights.clone()
    without_arm_height[arm] = 0.15  # the configuration before: this fall went on
    assert not bool(fall_termination(contact, body_pos, without_arm_height, env.non_contact_mask, steps)[0])
    env.close()


def test_truncation_is_not_termination():
    env = make_env("HumanoidAMP", num_envs=2, state_init="Default", enable_early_termination=False,
                   max_episode_length=300, **FAST)
    env.reset()
    actions = torch.zeros(2, env.num_actions)
    for step in range(1, 301):
        obs, _, terminated, truncated, info = env.step(actions)
        assert not terminated.any()
        assert truncated.all() == (step == 300) and truncated.any() == (step == 300)
    assert info["episode"]["length"].tolist() == [300, 300]
    assert not torch.equal(info["final_obs"], obs)
    assert env.episode_steps.tolist() == [0, 0]


def test_nonfinite_env_is_reset_and_isolated():
    kwargs = dict(num_envs=3, state_init="Default", **FAST)
    env, twin = make_env("HumanoidAMP", **kwargs), make_env("HumanoidAMP", **kwargs)
    actions = 0.3 * torch.ones(3, env.num_actions)
    for e in (env, twin):
        e.reset()
        e.step(actions)
    s = env.sim.state
    bad = torch.tensor([1])
    env.sim.set_robot_state(bad, s.root_pos[bad], s.root_rot[bad], s.root_lin_vel[bad],
                            s.root_ang_vel[bad], s.dof_pos[bad], torch.full((1, env.num_actions), float("nan")))
    obs, reward, terminated, _, info = env.step(actions)
    _, _, _, _, twin_info = twin.step(actions)
    assert info["nonfinite"].tolist() == [False, True, False]
    assert terminated[1] and info["nonfinite_resets"] == 1 and info["nonfinite_resets_step"] == 1
    assert torch.isfinite(obs).all() and torch.isfinite(reward).all()
    assert torch.isfinite(info["amp_obs"]).all() and torch.isfinite(info["final_obs"]).all()
    assert obs[1, 0].item() == pytest.approx(DEFAULT_ROOT_HEIGHT, abs=1e-5)  # reset to standing
    # the other worlds evolve exactly as in an env where nothing went wrong
    for k in (0, 2):
        assert torch.equal(env.sim.state.body_pos[k], twin.sim.state.body_pos[k])
        assert torch.equal(info["amp_obs"][k], twin_info["amp_obs"][k])
    _, _, _, _, info = env.step(actions)
    assert info["nonfinite_resets"] == 1 and info["nonfinite_resets_step"] == 0
    assert torch.isfinite(env.sim.state.body_pos).all()


# ---- ASE getup -----------------------------------------------------------------------------------


def test_fall_pool_is_on_the_ground():
    env = make_env("HumanoidASE", num_envs=2, state_init="Default", fall_pool_size=12, **FAST)
    assert env.fall_pool_size == 12
    zeros = torch.zeros_like(env.fall_root_pos)
    body_pos = body_state_from_qpos(env.robot, env.fall_root_pos, env.fall_root_rot, zeros, zeros,
                                    env.fall_dof_pos, torch.zeros_like(env.fall_dof_pos))[0]
    assert (env.fall_root_pos[:, 2] < 0.5).all()  # standing: 0.89 m
    assert (body_pos[..., 2].amax(dim=-1) < 0.9).all()  # nobody upright
    # the pool's rotations differ (random drops), i.e. it is not one pose repeated
    assert rot.quat_angle_between(env.fall_root_rot[:1], env.fall_root_rot[1:]).max() > 0.5


def test_recovery_episode_suppresses_early_termination():
    env = make_env("HumanoidASE", num_envs=2, state_init="Default", fall_pool_size=2, fall_steps=5,
                   recovery_episode_prob=1.0, fall_init_prob=0.0, recovery_steps=20, **FAST)
    env.reset()
    set_lying(env, torch.tensor([1]))
    hold = hold_pose_actions(env, torch.zeros(2, env.num_actions))
    env.step(hold)
    obs, _, terminated, _, info = env.step(hold)
    assert terminated.tolist() == [False, True]
    # a recovery episode continues from where the humanoid lies
    torch.testing.assert_close(obs[1], info["final_obs"][1])
    assert torch.equal(env.amp_history[1].reshape(-1), info["amp_obs"][1])  # history continues too
    assert env.episode_steps[1].item() == 0 and env.recovery_counter[1].item() == 20
    for step in range(1, 20):
        obs, _, terminated, _, _ = env.step(hold)
        assert not terminated[1], f"terminated during the recovery grace period (step {step})"
        assert obs[1, 0].item() < 0.5  # still lying: termination was suppressed, not avoided
    _, _, terminated, _, _ = env.step(hold)
    assert terminated[1]  # the grace period is over


def test_recovery_grace_period_suppresses_time_outs():
    """As the release: an episode in its grace period does not time out (4-step episodes here),
    it ends when the grace period (10 steps) is over."""
    env = make_env("HumanoidASE", num_envs=2, state_init="Default", fall_pool_size=2, fall_steps=5,
                   fall_init_prob=1.0, recovery_steps=10, max_episode_length=4, **FAST)
    env.reset()
    assert (env.recovery_counter == 10).all()
    hold = hold_pose_actions(env, torch.zeros(2, env.num_actions))
    for step in range(1, 10):
        _, _, terminated, truncated, _ = env.step(hold)
        assert not bool((terminated | truncated).any()), step
    _, _, terminated, truncated, info = env.step(hold)
    assert bool((terminated | truncated).all()) and info["episode"]["length"].tolist() == [10, 10]


def test_getup_reward_is_the_head_share_during_the_grace_period_only():
    """task.env.getup_reward: the env's reward is head height / standing head height while a
    getup episode's grace period runs, 0 once it is over (and 0 with the option off)."""
    env = make_env("HumanoidASE", num_envs=2, state_init="Default", fall_pool_size=2, fall_steps=60,
                   fall_init_prob=1.0, recovery_steps=3, enable_early_termination=False, getup_reward=True, **FAST)
    env.reset()
    head = env.robot.body_names.index("head")
    assert env.standing_head_height == pytest.approx(float(env.default_kinematics.body_pos[0, head, 2]))
    hold = hold_pose_actions(env, torch.zeros(2, env.num_actions))
    for step in range(1, 6):
        _, reward, _, _, _ = env.step(hold)
        share = (env.sim.state.body_pos[:, head, 2] / env.standing_head_height).clamp(0, 1)
        expected = share if step < 3 else torch.zeros(2)  # the counter reaches 0 on the third step
        torch.testing.assert_close(reward, expected)
        if step < 3:
            assert (reward > 0.05).all() and (reward < 0.5).all()  # lying: the head near the floor
    env.recovery_counter[:] = 1  # back in the grace period: task.env.getup_reward_power squares the share
    env.cfg.getup_reward_power = 2.0
    share = (env.sim.state.body_pos[:, head, 2] / env.standing_head_height).clamp(0, 1)
    torch.testing.assert_close(env.compute_task_reward(), share ** 2)
    plain = make_env("HumanoidASE", num_envs=2, state_init="Default", fall_pool_size=2, fall_steps=5,
                     fall_init_prob=1.0, **FAST)
    plain.reset()
    assert torch.equal(plain.step(hold)[1], torch.zeros(2))


def test_phases_change_the_getup_settings_once_their_epoch_is_reached():
    """task.env.phases: before the first entry's epoch the env is the release's (no getup reward,
    the base fall_init_prob and recovery_steps); from it on the entry's settings, with the resets
    drawn ahead under the old ones dropped once; a later entry changes only what it names."""
    phases = [{"from_epoch": 2, "getup_reward": True, "fall_init_prob": 1.0, "recovery_steps": 7},
              {"from_epoch": 5, "getup_reward_power": 2.0}]
    env = make_env("HumanoidASE", num_envs=4, state_init="Default", fall_pool_size=4, fall_steps=5,
                   fall_init_prob=0.0, recovery_steps=60, enable_early_termination=False, phases=phases, **FAST)
    env.reset()
    assert env.uses_getup_reward and env.head_body_id is not None
    hold = hold_pose_actions(env, torch.zeros(4, env.num_actions))
    assert env.set_training_epoch(0) is None and env.set_training_epoch(1) is None
    assert (env.active_cfg.fall_init_prob, env.active_cfg.recovery_steps, env.active_cfg.getup_reward) == (0.0, 60, False)
    env.recovery_counter[:] = 5  # a grace period, but no getup reward before the phase
    assert torch.equal(env.step(hold)[1], torch.zeros(4))
    assert env.reset_draws.available > 8 and not env.take_resets(8)["from_fall_pool"].any()  # drawn with 0.0
    message = env.set_training_epoch(2)
    assert message == "from epoch 3 (task.env.phases): fall_init_prob 1.0, recovery_steps 7, getup_reward True"
    assert env.reset_draws.available == 0  # what was drawn ahead under fall_init_prob 0 is gone
    assert env.take_resets(8)["from_fall_pool"].all()
    env.reset_envs(torch.arange(4))
    assert (env.recovery_counter == 7).all()
    share = env.step(hold)[1]
    assert (share > 0).all()  # the getup reward now pays
    assert env.set_training_epoch(3) is None  # entered once
    assert env.set_training_epoch(5) == "from epoch 6 (task.env.phases): getup_reward_power 2.0"
    assert (env.active_cfg.fall_init_prob, env.active_cfg.recovery_steps, env.active_cfg.getup_reward_power) == (1.0, 7, 2.0)
    env.recovery_counter[:] = 3
    head = env.robot.body_names.index("head")
    expected = (env.sim.state.body_pos[:, head, 2] / env.standing_head_height).clamp(0, 1) ** 2
    torch.testing.assert_close(env.compute_task_reward(), expected)
    # a run resumed after a phase began enters it without dropping its saved draws
    resumed = make_env("HumanoidASE", num_envs=4, state_init="Default", fall_pool_size=4, fall_steps=5,
                       phases=phases, **FAST)
    resumed.reset()
    before = resumed.reset_draws.available
    assert resumed.set_training_epoch(10) is not None and resumed.reset_draws.available == before
    assert resumed.active_cfg.getup_reward_power == 2.0 and resumed.cfg.getup_reward_power == 1.0
    # none (the default): the settings as configured throughout
    plain = make_env("HumanoidASE", num_envs=2, state_init="Default", fall_pool_size=2, fall_steps=5, **FAST)
    assert plain.active_cfg is plain.cfg and not plain.uses_getup_reward and plain.set_training_epoch(100) is None


def test_getup_reward_pure_function():
    from ase_humanoid.envs.humanoid_ase import getup_reward

    head = torch.tensor([0.2, 0.7, 1.6, -0.1])
    reward = getup_reward(head, 1.4, torch.tensor([True, True, True, False]))
    torch.testing.assert_close(reward, torch.tensor([0.2 / 1.4, 0.5, 1.0, 0.0]))
    # getup_reward_power: lying pays less, standing the same
    squared = getup_reward(head, 1.4, torch.tensor([True, True, True, False]), power=2.0)
    torch.testing.assert_close(squared, torch.tensor([(0.2 / 1.4) ** 2, 0.25, 1.0, 0.0]))


def test_fall_init_starts_from_pool():
    # Hybrid init is configured, but every reset draws from the pool (no reference resets at all)
    env = make_env("HumanoidASE", num_envs=4, motion_file=str(CARTWHEEL), state_init="Hybrid",
                   fall_pool_size=4, fall_steps=60, fall_init_prob=1.0, **FAST)
    env.reset()
    assert (env.sim.state.root_pos[:, 2] < 0.5).all()
    assert (env.recovery_counter == env.cfg.recovery_steps).all()
    # the pool's precomputed AMP frames are what the simulator gives for those states
    torch.testing.assert_close(env.amp_history[:, 0], env.amp_obs_from_sim(), atol=1e-4, rtol=0)
    torch.testing.assert_close(env.amp_history[:, -1], env.amp_obs_from_sim(), atol=1e-4, rtol=0)


def test_step_observations_equal_the_simulator_state_after_resets():
    # Every kind of reset in one run: Default and reference (Hybrid), fall pool, recovery; short
    # episodes so that most steps reset someone. The observation the step returns for a reset env
    # comes precomputed with its reset state (and recovery envs keep theirs): it must be what the
    # simulator's state gives, and the AMP frame what the simulator gives too.
    env = make_env("HumanoidASE", num_envs=8, motion_file=str(LOCOMOTION), fall_pool_size=4, fall_steps=5,
                   max_episode_length=4, fall_init_prob=0.3, recovery_episode_prob=0.5, reset_pool_size=16, **FAST)
    env.reset()
    generator = torch.Generator().manual_seed(1)
    resets = 0
    for _ in range(12):
        actions = 2.0 * torch.rand(env.num_envs, env.num_actions, generator=generator) - 1.0
        obs, _, terminated, truncated, info = env.step(actions)
        resets += int((terminated | truncated).sum())
        torch.testing.assert_close(obs, env.compute_observations(), atol=1e-5, rtol=0)
        torch.testing.assert_close(env.amp_history[:, 0], env.amp_obs_from_sim(), atol=1e-5, rtol=0)
    assert resets >= 8


# ---- perturbations and playback ------------------------------------------------------------------


def test_projectiles_as_the_release():
    """13 boxes per world with the release's masses (1.6 kg small, 12.5 kg large), launched on
    its schedule (steps 60, 67, 77, 112, 114, 116, 119, 121, 123, 126, 128, 188, 488) from 4-5 m
    and 0.25-2 m up, at 30-40 m/s towards the torso."""
    import mujoco

    from ase_humanoid.envs.humanoid_perturb import launch_steps, launch_states

    assert launch_steps([60, 7, 10, 35, 2, 2, 3, 2, 2, 3, 2, 60, 300]) == [
        60, 67, 77, 112, 114, 116, 119, 121, 123, 126, 128, 188, 488]
    env = make_env("HumanoidPerturb", num_envs=2, **FAST)
    model = env.mj_model
    masses = sorted(model.body_mass[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)]
                    if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name) >= 0 else
                    model.body_mass[[i for i in range(model.nbody) if model.body(i).name.endswith(name)][0]]
                    for name in env.sim.prop_names)
    assert len(masses) == 13
    assert masses[:12] == pytest.approx([1.6] * 12, rel=1e-4) and masses[12] == pytest.approx(12.5, rel=1e-4)
    env.close()

    # a short schedule to watch: small at step 2, large at step 4
    env = make_env("HumanoidPerturb", num_envs=2, projectile_kinds=["small", "large"],
                   projectile_intervals=[2, 2], flight_steps=4, **FAST)
    env.reset()
    hold = hold_pose_actions(env, torch.zeros(2, env.num_actions))
    for step in range(1, 8):
        env.step(hold)
        torso = env.sim.state.body_pos[:, env.target_body_id]
        small, large = (env.sim.prop_state(f"projectile_{k}") for k in range(2))
        d_small, d_large = ((p.pos - torso).norm(dim=-1) for p in (small, large))
        if step < 2:
            assert (d_small > 50).all() and (d_large > 50).all()  # parked far away
        if step == 2:
            assert ((d_small > 3.5) & (d_small < 5.6)).all() and (d_large > 50).all()
            assert bool(((small.pos[:, 2] >= 0.25) & (small.pos[:, 2] <= 2.0)).all())
            previous = d_small
            speeds = small.lin_vel.norm(dim=-1)
            aim = torch.nn.functional.normalize(small.lin_vel, dim=-1)
            to_torso = torch.nn.functional.normalize(torso - small.pos, dim=-1)
            assert bool(((speeds >= 30.0) & (speeds <= 40.0)).all())
            assert bool(((aim * to_torso).sum(-1) > 0.9).all())  # 0.1 noise on a 4-5 m offset
        if step == 3:
            assert (d_small < previous - 0.8).all()  # 30-40 m/s: > 1 m per control step closer
        if step == 4:
            assert ((d_large > 3.5) & (d_large < 5.6)).all()
    assert not env.cfg.enable_early_termination
    env.close()

    # falls are counted, not terminated: env 0 holds its pose, env 1 lies down (no projectiles)
    env = make_env("HumanoidPerturb", num_envs=2, projectile_kinds=["small"], projectile_intervals=[1000],
                   max_episode_length=20, **FAST)
    env.reset()
    set_lying(env, torch.tensor([1]))
    hold = hold_pose_actions(env, torch.zeros(2, env.num_actions))
    for _ in range(20):
        _, _, terminated, truncated, _ = env.step(hold)
        assert not bool(terminated.any())
    assert bool(truncated.all())  # both episodes ran to the time limit
    assert env.task_metrics() == {"task/fall_rate": 0.5}
    env.close()

    # the launch itself against a hand computation: straight at the target, no noise
    start, velocity = launch_states(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([[0.5, 0.0]]),
                                    torch.zeros(1, 2), torch.tensor([4.0]), torch.tensor([0.0]),
                                    torch.tensor([1.0]), torch.tensor([30.0]), torch.zeros(1, 3))
    torch.testing.assert_close(start, torch.tensor([[4.0, 0.0, 1.0]]))
    torch.testing.assert_close(velocity, torch.tensor([[-29.5, 0.0, 0.0]]))


def test_view_motion_plays_clips():
    env = make_env("HumanoidViewMotion", num_envs=3, motion_file=str(LOCOMOTION), **FAST)
    lib = env.motion_lib
    assert env.env_motion_ids.tolist() == [0, 1, 0]
    env.reset()
    for _ in range(7):
        _, _, terminated, _, _ = env.step(None)
        assert not terminated.any()
    times = env.motion_times()
    torch.testing.assert_close(times, torch.full((3,), 7 / 30).remainder(lib.get_motion_length(env.env_motion_ids)))
    state = lib.get_motion_state(env.env_motion_ids, times)
    # 7 / 30 s is a frame of the 60 fps clips: FK of the clip's frame, no interpolation involved
    torch.testing.assert_close(env.sim.state.body_pos, state.body_pos, atol=1e-3, rtol=0)
    torch.testing.assert_close(env.sim.state.root_rot, state.root_rot, atol=1e-5, rtol=0)
