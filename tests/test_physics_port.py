"""The physics port against the ASE release's physics (issue 21, item 6): the sword's densities,
where the PD damping acts (`robot.pd_damping`), a PD step response and a free fall
(benchmarks/pd_step_response.py measures them all and prints JSON)."""

import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from ase_humanoid.errors import ConfigError
from ase_humanoid.robots import build_scene_spec, load_robot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import pd_step_response as bench  # noqa: E402

DT = 1.0 / 120.0


# ---- the sword ----------------------------------------------------------------------------------

def test_sword_has_the_release_densities_mass_and_centre_of_mass():
    spec = mujoco.MjSpec.from_file(str(load_robot("sword_shield").mjcf_path))
    densities = {g.name: g.density for g in spec.geoms if g.name.startswith("sword_")}
    assert densities == bench.RELEASE_SWORD_DENSITIES  # 300 hilt, 600 blade (kg/m^3)
    shipped = bench.sword_mass_properties()
    one_density = bench.sword_mass_properties({"sword_hilt": 506.1, "sword_blade": 506.1})
    # the same mass as the one shared density (and the reference 0.701 kg) ...
    assert shipped["mass_kg"] == pytest.approx(0.701, abs=1e-3)
    assert shipped["mass_kg"] == pytest.approx(one_density["mass_kg"], abs=1e-3)
    # ... but the centre of mass 5.3 cm further from the hand, towards the blade's tip (sword
    # frame, whose origin is 0.74 m out from the hand: -0.417 m against -0.470 m)
    assert shipped["com_m"][0] == pytest.approx(-0.4169, abs=1e-3)
    assert one_density["com_m"][0] - shipped["com_m"][0] == pytest.approx(-0.0529, abs=1e-3)
    assert shipped["total_mass_kg"] == pytest.approx(51.71, abs=0.01)


# ---- where the PD damping acts ------------------------------------------------------------------

def test_drive_moves_the_damping_into_the_clamped_actuator():
    joint, drive = load_robot("amp_humanoid", pd_damping="joint"), load_robot("amp_humanoid", pd_damping="drive")
    assert joint.pd_damping == "joint" and drive.pd_damping == "drive"
    assert torch.equal(joint.kd, drive.kd) and torch.equal(joint.kp, drive.kp)  # the same gains
    mj = build_scene_spec(joint).compile()
    md = build_scene_spec(drive).compile()
    hinges = [mj.jnt_dofadr[mj.actuator_trnid[a, 0]] for a in range(mj.nu)]
    np.testing.assert_allclose(mj.dof_damping[hinges], joint.kd.numpy())
    np.testing.assert_allclose(mj.actuator_biasprm[:, 2], 0.0)
    np.testing.assert_allclose(md.dof_damping[hinges], 0.0)
    np.testing.assert_allclose(-md.actuator_biasprm[:, 2], drive.kd.numpy())
    np.testing.assert_allclose(md.actuator_forcerange, mj.actuator_forcerange)
    with pytest.raises(ConfigError, match="pd_damping"):
        load_robot("amp_humanoid", pd_damping="spring")


def test_drive_implicit_keeps_joint_damping_and_adds_an_unclamped_compensation():
    robot = load_robot("amp_humanoid", pd_damping="drive_implicit")
    model = build_scene_spec(robot).compile()
    n = robot.num_dofs
    assert model.nu == 2 * n and model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    pd, extra = range(n), range(n, 2 * n)  # the position actuators first, in hinge order
    hinges = [model.jnt_dofadr[model.actuator_trnid[a, 0]] for a in pd]
    np.testing.assert_allclose(model.dof_damping[hinges], robot.kd.numpy())  # implicit in Euler
    np.testing.assert_allclose(-model.actuator_biasprm[list(pd), 2], robot.kd.numpy())  # inside the clamp
    np.testing.assert_allclose(model.actuator_biasprm[list(extra), 2], robot.kd.numpy())  # outside it
    assert [model.actuator_trnid[a, 0] for a in extra] == [model.actuator_trnid[a, 0] for a in pd]
    assert model.actuator_forcelimited[list(pd)].all() and not model.actuator_forcelimited[list(extra)].any()


def _knee_forward(model, kp_error: float, qvel: float):
    """(data after mj_forward, the right knee's dof) with PD error `kp_error` rad and velocity
    `qvel` rad/s at the knee, root fixed in the air (humanoid at its zero pose)."""
    data = mujoco.MjData(model)
    knee = model.joint("right_knee")
    data.qpos[knee.qposadr[0]] = 0.5
    data.qvel[knee.dofadr[0]] = qvel
    data.ctrl[model.actuator("right_knee").id] = 0.5 + kp_error
    mujoco.mj_forward(model, data)
    return data, knee.dofadr[0]


def _knee_torques(model, kp_error: float, qvel: float):
    """(the knee's position actuator force, passive damping force) as `_knee_forward` sets it."""
    data, dof = _knee_forward(model, kp_error, qvel)
    return float(data.actuator_force[model.actuator("right_knee").id]), float(data.qfrc_damper[dof])


@pytest.mark.parametrize("error, qvel", [(1.0, 2.0), (1.0, -2.0), (0.2, 5.0), (-0.5, -4.0)])
def test_clamped_torque_includes_the_damping_cpu(error, qvel):
    kp, kd, effort = bench.RELEASE_GAINS["right_knee"]
    release = float(np.clip(kp * error - kd * qvel, -effort, effort))
    drive = _knee_torques(bench.fixed_root_model("amp_humanoid", "drive"), error, qvel)
    joint = _knee_torques(bench.fixed_root_model("amp_humanoid", "joint"), error, qvel)
    assert drive[0] == pytest.approx(release) and drive[1] == 0.0  # the release's drive
    assert joint[0] == pytest.approx(np.clip(kp * error, -effort, effort)) and joint[1] == pytest.approx(-kd * qvel)


@pytest.mark.parametrize("error, qvel", [(1.0, 2.0), (1.0, -2.0), (0.2, 5.0), (-0.5, -4.0)])
def test_drive_implicit_torque_is_the_release_clamp_at_the_current_velocity(error, qvel):
    """Evaluated at the current velocity (the step then makes the -kd qdot share implicit), the
    hinge's torque, PD actuator + compensation + joint damping, is the release's clamp."""
    kp, kd, effort = bench.RELEASE_GAINS["right_knee"]
    data, dof = _knee_forward(bench.fixed_root_model("amp_humanoid", "drive_implicit"), error, qvel)
    torque = data.qfrc_actuator[dof] + data.qfrc_damper[dof]
    assert torque == pytest.approx(float(np.clip(kp * error - kd * qvel, -effort, effort)))


def test_clamped_torque_includes_the_damping_warp():
    """MuJoCo Warp reads the same scene model: its actuator force is the clamped kp and kd sum."""
    pytest.importorskip("mujoco_warp", reason="the 'gpu'/'test' extra (mujoco-warp) is not installed")
    import mujoco_warp as mjw
    import warp as wp

    from ase_humanoid.sim import make_backend

    robot = load_robot("amp_humanoid", pd_damping="drive")
    sim = make_backend("mujoco_warp", robot, 2, device="cpu")
    try:
        kp, kd, effort = bench.RELEASE_GAINS["right_knee"]
        d = robot.dof_names.index("right_knee")
        assert float(sim.mj_model.dof_damping[sim._layout.dof_qvel_adr[d]]) == 0.0  # noqa: SLF001
        n = 2
        root_pos = torch.tensor([[0.0, 0.0, 2.0]] * n)
        root_rot = torch.tensor([[0.0, 0.0, 0.0, 1.0]] * n)
        zeros3 = torch.zeros(n, 3)
        dof_pos = torch.zeros(n, robot.num_dofs)
        dof_pos[:, d] = 0.5
        dof_vel = torch.zeros(n, robot.num_dofs)
        dof_vel[:, d] = torch.tensor([2.0, 5.0])
        sim.set_robot_state(torch.arange(n), root_pos, root_rot, zeros3, zeros3, dof_pos, dof_vel)
        targets = torch.zeros(n, robot.num_dofs)
        targets[:, d] = 0.5 + torch.tensor([1.0, 0.2])
        sim.set_pd_targets(targets)
        with wp.ScopedDevice(sim._wp_device):  # noqa: SLF001
            mjw.forward(sim._m, sim._d)  # noqa: SLF001
        force = wp.to_torch(sim._d.actuator_force)[:, sim._layout.dof_actuator_ids[d]]  # noqa: SLF001
        release = np.clip(kp * np.array([1.0, 0.2]) - kd * np.array([2.0, 5.0]), -effort, effort)
        np.testing.assert_allclose(force.cpu().numpy(), release, rtol=1e-4)  # [150, -150]
    finally:
        sim.close()


def test_pd_damping_reaches_the_env_and_defaults_to_the_release_law():
    from ase_humanoid.config import compose_config
    from ase_humanoid.envs import make_env

    for robot in ("amp_humanoid", "sword_shield"):
        assert compose_config(["sim=mujoco", f"robot={robot}"]).robot.pd_damping == "drive_implicit"
        assert compose_config(["sim=mujoco", f"robot={robot}", "profile=paper"]).robot.pd_damping == "drive_implicit"
        assert load_robot(robot).pd_damping == "drive_implicit"
    assert compose_config(["sim=mujoco", "robot.pd_damping=drive"]).robot.pd_damping == "drive"
    env = make_env("HumanoidAMP", num_envs=1, pd_damping="drive", state_init="Default", num_threads=1)
    try:
        model = env.sim.mj_model
        assert env.robot.pd_damping == "drive"
        np.testing.assert_allclose(-model.actuator_biasprm[:, 2], env.robot.kd.cpu().numpy()[np.argsort(env.sim._layout.dof_actuator_ids)])  # noqa: SLF001
        assert model.dof_damping[env.sim._layout.dof_qvel_adr].max() == 0.0  # noqa: SLF001
    finally:
        env.close()


def test_saved_runs_without_the_key_used_joint_damping(tmp_path):
    from ase_humanoid.app import check_resume_config
    from ase_humanoid.builders import saved_pd_damping

    assert saved_pd_damping(None) == "joint" and saved_pd_damping({"robot": {"name": "amp_humanoid"}}) == "joint"
    assert saved_pd_damping({"robot": {"pd_damping": "drive"}}) == "drive"
    old = {"robot": {"name": "amp_humanoid"}}
    check_resume_config(old, {"robot": {"name": "amp_humanoid", "pd_damping": "joint"}}, tmp_path)
    with pytest.raises(ConfigError, match="pd_damping"):
        check_resume_config(old, {"robot": {"name": "amp_humanoid", "pd_damping": "drive"}}, tmp_path)


# ---- step response and free fall ----------------------------------------------------------------

@pytest.fixture(scope="module")
def knee_inertia():
    return bench.joint_inertia(bench.fixed_root_model("amp_humanoid", "joint"), "right_knee")


def _metrics(mode, step, seconds=1.0):
    return bench.response_metrics(*bench.mujoco_step_response("amp_humanoid", mode, "right_knee", step, seconds), step)


def test_gains_are_the_release_documented_ones():
    robot = load_robot("amp_humanoid")
    for joint, (kp, kd, effort) in bench.RELEASE_GAINS.items():
        d = robot.dof_names.index(joint)
        assert (float(robot.kp[d]), float(robot.kd[d]), float(robot.effort_limit[d])) == (kp, kd, effort)


def test_small_step_settles_like_the_release_law_in_both_places(knee_inertia):
    kp, kd, effort = bench.RELEASE_GAINS["right_knee"]
    step = 0.15  # kp * step = 75 N m, half the 150 N m limit: no saturation, one law for both
    release = bench.response_metrics(*bench.reference_step_response(knee_inertia, kp, kd, effort, step, 1.0), step)
    for mode in ("joint", "drive", "drive_implicit"):
        m = _metrics(mode, step)
        assert m["overshoot"] < 0.02 and m["final_error_rad"] < 1e-3
        assert m["rise_time_s"] == pytest.approx(release["rise_time_s"], abs=DT)  # 0.20 s
        assert m["settling_time_s"] == pytest.approx(release["settling_time_s"], abs=6 * DT)  # 0.33 vs 0.37 s
        assert m["peak_torque_nm"] <= effort


def test_saturated_step_drive_follows_the_release_law_and_joint_is_slower(knee_inertia):
    kp, kd, effort = bench.RELEASE_GAINS["right_knee"]
    step = 1.5  # kp * step = 750 N m, five times the limit
    release = bench.response_metrics(*bench.reference_step_response(knee_inertia, kp, kd, effort, step, 1.0), step)
    drive, joint = _metrics("drive", step), _metrics("joint", step)
    # the release's drive: the clamp caps the whole torque at the effort limit, and the knee
    # rises as fast as the release's law (0.20 s 10-90 %)
    assert drive["peak_torque_nm"] == pytest.approx(effort, abs=1e-6)
    assert drive["rise_time_s"] == pytest.approx(release["rise_time_s"], abs=DT)
    assert drive["settling_time_s"] == pytest.approx(release["settling_time_s"], abs=6 * DT)
    assert drive["overshoot"] < 0.02 and drive["final_error_rad"] < 1e-3
    # damping outside the clamp: the kd term is subtracted from a torque already at the limit,
    # so a saturated joint moves at most effort / kd (3 rad/s here) and rises about twice as slowly
    assert joint["rise_time_s"] > 1.8 * release["rise_time_s"]
    assert joint["final_error_rad"] < 1e-3 and joint["peak_torque_nm"] <= effort


@pytest.mark.parametrize("mode", ["joint", "drive"])
def test_free_fall_takes_the_time_gravity_gives(mode):
    fall = bench.free_fall("amp_humanoid", drop=0.5, pd_damping=mode)
    assert fall["gravity"] == pytest.approx(9.81)
    assert fall["com_accel_mean"] == pytest.approx(-9.81, abs=1e-3) and fall["com_accel_max_dev"] < 1e-3
    assert fall["time_to_ground_s"] == pytest.approx(fall["ideal_discrete_time_s"], abs=1e-4)  # 38 steps
    assert fall["time_to_ground_s"] == pytest.approx(fall["ideal_time_s"], abs=DT)  # sqrt(2 h / g) = 0.319 s


def test_saturated_step_drive_implicit_follows_the_release_law(knee_inertia):
    """The release's speed at the effort limit, where the joint law caps the knee at effort / kd."""
    kp, kd, effort = bench.RELEASE_GAINS["right_knee"]
    step = 1.5
    times, q, torque = bench.reference_step_response(knee_inertia, kp, kd, effort, step, 1.0)
    release = bench.response_metrics(times, q, torque, step)
    split = _metrics("drive_implicit", step)
    assert split["rise_time_s"] == pytest.approx(release["rise_time_s"], abs=DT)  # 0.20 s (joint: 0.42)
    assert split["settling_time_s"] == pytest.approx(release["settling_time_s"], abs=6 * DT)
    assert split["overshoot"] < 0.02 and split["final_error_rad"] < 1e-3
    _, q_split, _ = bench.mujoco_step_response("amp_humanoid", "drive_implicit", "right_knee", step, 1.0)
    _, q_joint, _ = bench.mujoco_step_response("amp_humanoid", "joint", "right_knee", step, 1.0)
    peak = {name: float(np.abs(np.diff(x)).max() / DT) for name, x in
            (("release", q[:: max(1, round(len(q) / len(q_split)))]), ("split", q_split), ("joint", q_joint))}
    assert peak["joint"] < 1.05 * effort / kd  # 3 rad/s
    assert peak["split"] > 3 * peak["joint"] and peak["split"] == pytest.approx(peak["release"], rel=0.15)  # ~12 rad/s


@pytest.mark.parametrize("action_std", [bench.RELEASE_ACTION_STD, None])
def test_drive_implicit_is_stable_at_the_simulators_step(action_std):
    """Random PD targets at 30 Hz from standing: no blown-up world and no chatter between the
    effort limits ("drive" spins the root at 13.5 rad/s median with the release's noise)."""
    split = bench.random_targets("amp_humanoid", "drive_implicit", action_std, worlds=2, steps=150)
    joint = bench.random_targets("amp_humanoid", "joint", action_std, worlds=2, steps=150)
    assert split["blown_up"] == 0
    if action_std is not None:
        assert split["root_ang_speed_median"] < 1.5 * joint["root_ang_speed_median"] + 0.5


def test_drive_implicit_env_steps_with_the_extra_actuators_at_zero():
    from ase_humanoid.envs import make_env

    env = make_env("HumanoidAMP", num_envs=2, pd_damping="drive_implicit", state_init="Default", num_threads=1)
    try:
        env.reset()
        n = env.robot.num_dofs
        for _ in range(5):
            env.step(torch.full((2, n), 0.3))
        ctrl = env.sim._ctrl_targets  # noqa: SLF001
        assert ctrl.shape == (2, 2 * n) and not ctrl[:, n:].any() and ctrl[:, :n].any()
        assert torch.isfinite(env.sim.state.dof_vel).all()
    finally:
        env.close()


# ---- the default law ----------------------------------------------------------------------------

def test_saturated_knee_step_under_the_default_law_reaches_10_rad_per_s():
    """The default PD law moves a saturated knee at the release's speed (the joint law: 3 rad/s)."""
    from ase_humanoid.config import compose_config

    mode = compose_config(["sim=mujoco"]).robot.pd_damping
    _, q, _ = bench.mujoco_step_response("amp_humanoid", mode, "right_knee", 1.5, 0.5)
    assert float(np.abs(np.diff(q)).max() / DT) >= 10.0


@pytest.mark.parametrize("robot_name", ["amp_humanoid", "sword_shield"])
def test_whole_body_under_random_actions_at_the_default_law_never_blows_up(robot_name):
    """Uniform random actions in [-1, 1] (PD targets anywhere in range, every actuator
    saturating) for 8 worlds x 10 s at the default 1/120 s step through the env: no world
    blows up, none is reset for non-finite state, every body stays within plausible speeds."""
    from ase_humanoid.envs import make_env

    env = make_env("HumanoidAMP", num_envs=8, robot=robot_name, state_init="Default", num_threads=1,
                   enable_early_termination=False)
    try:
        assert env.robot.pd_damping == "drive_implicit"
        env.reset()
        generator = torch.Generator().manual_seed(0)
        peak_speed = 0.0
        for _ in range(300):
            actions = torch.rand(env.num_envs, env.num_actions, generator=generator) * 2 - 1
            env.step(actions)
            state = env.sim.state
            assert torch.isfinite(state.root_pos).all()
            peak_speed = max(peak_speed, float(state.body_lin_vel.norm(dim=-1).max()))
        assert int(env.nonfinite_resets) == 0
        assert peak_speed < 30.0, peak_speed  # m/s of any body; a blow-up reaches 1e3 and more
    finally:
        env.close()
