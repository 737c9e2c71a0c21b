"""Native MuJoCo CPU backend: exact state round trips, thread-count determinism, contact forces,
props, blow-up isolation and argument errors. Real MuJoCo on the project's humanoid MJCFs."""

import math

import mujoco
import numpy as np
import pytest
import torch

from ase_humanoid.errors import ConfigError
from ase_humanoid.robots import body_state_from_qpos, load_robot
from ase_humanoid.sim import PropSpec, make_backend
from ase_humanoid.sim.scene import lowest_point_height
from ase_humanoid.utils.rotations import quat_normalize, quat_rotate_inverse

GRAVITY = 9.81
TARGET = PropSpec("target", "box", (0.2, 0.2, 0.9), 30.0)  # ASE strike target: 0.4 x 0.4 x 1.8 m


@pytest.fixture(scope="module")
def robot():
    return load_robot("amp_humanoid")


def standing_state(sim, n):
    """Default pose (all hinges 0) with the feet resting on the floor, at rest."""
    robot, model = sim.robot, sim.mj_model
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in robot.body_names]
    root_pos = robot.local_translation[0].expand(n, 3).clone()
    root_pos[:, 2] -= lowest_point_height(model, model.qpos0, body_ids)
    root_rot = torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(n, 4).clone()
    zeros = torch.zeros(n, 3)
    dofs = torch.zeros(n, robot.num_dofs)
    return [root_pos, root_rot, zeros, zeros.clone(), dofs, dofs.clone()]


def random_state(robot, n, generator):
    """Random but valid root and DoF state (DoFs inside their limits)."""
    lower, upper = robot.dof_limits_lower, robot.dof_limits_upper
    u = torch.rand(n, robot.num_dofs, generator=generator)
    return [
        torch.randn(n, 3, generator=generator) + torch.tensor([0.0, 0.0, 1.5]),
        quat_normalize(torch.randn(n, 4, generator=generator)),
        torch.randn(n, 3, generator=generator),
        torch.randn(n, 3, generator=generator) * 2.0,
        lower + (upper - lower) * u,
        torch.randn(n, robot.num_dofs, generator=generator),
    ]


def random_targets(robot, n, generator, amplitude=0.3):
    actions = (torch.rand(n, robot.num_dofs, generator=generator) * 2 - 1) * amplitude
    return robot.action_to_pd_target(actions)


def all_tensors(sim):
    state = sim.state
    tensors = {k: getattr(state, k) for k in state.__dataclass_fields__}
    for name in sim.prop_names:
        prop = sim.prop_state(name)
        tensors.update({f"{name}.{k}": getattr(prop, k) for k in prop.__dataclass_fields__})
    return tensors


def test_state_round_trip_is_exact_and_matches_mujoco_kinematics(robot):
    sim = make_backend("mujoco", robot, 5, props=[TARGET], num_threads=2)
    generator = torch.Generator().manual_seed(1)
    before = {k: v.clone() for k, v in all_tensors(sim).items()}
    ids = torch.tensor([1, 3, 4])
    values = random_state(robot, 3, generator)
    sim.set_robot_state(ids, *values)
    state = sim.state
    names = ["root_pos", "root_rot", "root_lin_vel", "root_ang_vel", "dof_pos", "dof_vel"]
    for name, value in zip(names, values):
        assert torch.equal(getattr(state, name)[ids], value), name
        assert torch.equal(getattr(state, name)[[0, 2]], before[name][[0, 2]]), name
    expected = body_state_from_qpos(robot, *values)
    for name, value in zip(["body_pos", "body_rot", "body_lin_vel", "body_ang_vel"], expected):
        torch.testing.assert_close(getattr(state, name)[ids], value)

    # The written MuJoCo state gives the same bodies under MuJoCo's own kinematics: this checks
    # the wxyz conversion and the body-frame angular velocity of the free joint.
    model, data = sim.mj_model, mujoco.MjData(sim.mj_model)
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in robot.body_names]
    for row, env in enumerate(ids.tolist()):
        data.qpos[:] = sim.qpos_for_render(env)
        q, v = sim._layout.root_qvel_adr, sim._layout.dof_qvel_adr  # noqa: SLF001
        data.qvel[:] = 0.0
        data.qvel[q:q + 3] = values[2][row].double().numpy()
        data.qvel[q + 3:q + 6] = quat_rotate_inverse(values[1][row].double(), values[3][row].double()).numpy()
        data.qvel[v] = values[5][row].double().numpy()
        mujoco.mj_forward(model, data)
        velocity = np.zeros(6)
        lin, ang = [], []
        for b in body_ids:
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, b, velocity, 0)
            ang.append(velocity[:3].copy())
            lin.append(velocity[3:].copy())
        torch.testing.assert_close(state.body_pos[env].double(), torch.from_numpy(data.xpos[body_ids]), atol=1e-5, rtol=0)
        torch.testing.assert_close(state.body_ang_vel[env].double(), torch.from_numpy(np.array(ang)), atol=1e-4, rtol=0)
        torch.testing.assert_close(state.body_lin_vel[env].double(), torch.from_numpy(np.array(lin)), atol=1e-4, rtol=0)

    # Bool masks select the same way; prop states round-trip exactly too.
    mask = torch.tensor([True, False, False, False, True])
    values = random_state(robot, 2, generator)
    sim.set_robot_state(mask, *values)
    assert torch.equal(sim.state.dof_pos[mask], values[4])
    pose = random_state(robot, 2, generator)[:4]
    sim.set_prop_state("target", mask, *pose)
    sim.set_robot_state(mask, *values)  # a later robot reset leaves the prop values untouched
    prop = sim.prop_state("target")
    for name, value in zip(["pos", "rot", "lin_vel", "ang_vel"], pose):
        assert torch.equal(getattr(prop, name)[mask], value), name
    sim.close()


def test_multithreaded_stepping_is_bitwise_identical_to_single_thread(robot):
    generator = torch.Generator().manual_seed(2)
    start = standing_state(make_backend("mujoco", robot, 1, num_threads=1), 7)
    start[0][:, 0] = torch.arange(7.0)  # distinct worlds
    start[4] += 0.05 * torch.randn(7, robot.num_dofs, generator=generator)
    targets = [random_targets(robot, 7, generator) for _ in range(4)]
    results = []
    for threads in (1, 3):
        sim = make_backend("mujoco", robot, 7, props=[TARGET], num_threads=threads)
        sim.set_robot_state(torch.arange(7), *start)
        for t in targets:
            sim.set_pd_targets(t)
            sim.step(4)
        results.append(all_tensors(sim))
        sim.close()
    single, multi = results
    for name in single:
        assert torch.equal(single[name], multi[name]), name
    assert not torch.equal(single["root_pos"], start[0])  # it did move


def test_standing_humanoid_contact_force_equals_weight(robot):
    """PD holding the default pose keeps the humanoid standing still on its feet: with the body
    (nearly) at rest the net external force is ~0, so floor contact carries m g. Averaging over
    0.25 s smooths the small settling oscillation after the feet touch down."""
    sim = make_backend("mujoco", robot, 2, num_threads=2)
    sim.set_robot_state(torch.arange(2), *standing_state(sim, 2))
    sim.set_pd_targets(torch.zeros(2, robot.num_dofs))
    forces = []
    for step in range(30):
        sim.step(4)
        if step >= 22:
            forces.append(sim.state.contact_forces.clone())
    state = sim.state
    mean_force = torch.stack(forces).mean(0)  # [N, B, 3]
    weight = float(robot.body_masses.sum()) * GRAVITY
    total = mean_force.sum(1)  # [N, 3]
    assert state.root_pos[:, 2].min() > 0.8  # still standing
    torch.testing.assert_close(total[:, 2], torch.full((2,), weight), rtol=0.1, atol=0)
    assert total[:, :2].abs().max() < 0.05 * weight
    feet = [robot.body_names.index("right_foot"), robot.body_names.index("left_foot")]
    on_feet = mean_force[:, feet, 2].sum(1)
    torch.testing.assert_close(on_feet, total[:, 2], rtol=1e-3, atol=1e-3)  # only the feet touch
    assert (mean_force[:, feet, 2] > 0.2 * weight).all()  # both feet bear load
    sim.close()


def test_strike_target_falls_and_rests_on_floor(robot):
    sim = make_backend("mujoco", robot, 2, props=[TARGET], num_threads=1)
    assert sim.prop_names == ["target"]
    sim.set_robot_state(torch.arange(2), *standing_state(sim, 2))
    sim.set_pd_targets(torch.zeros(2, robot.num_dofs))
    pos = torch.tensor([[3.0, 1.0, 2.0], [-2.0, 2.0, 1.5]])
    yaw = torch.tensor([[0.0, 0.0, math.sin(0.3), math.cos(0.3)]]).expand(2, 4)
    sim.set_prop_state("target", torch.arange(2), pos, yaw, torch.zeros(2, 3), torch.zeros(2, 3))
    sim.step(4)
    assert not sim.prop_state("target").in_contact.any()  # still falling
    assert (sim.prop_state("target").lin_vel[:, 2] < -0.1).all()
    for _ in range(40):
        sim.step(4)
    target = sim.prop_state("target")
    mass = 0.4 * 0.4 * 1.8 * 30.0
    torch.testing.assert_close(target.pos[:, 2], torch.full((2,), 0.9), atol=5e-3, rtol=0)
    torch.testing.assert_close(target.pos[:, :2], pos[:, :2], atol=1e-3, rtol=0)
    assert target.in_contact.all()
    assert target.lin_vel.abs().max() < 0.05
    torch.testing.assert_close(target.contact_force[:, 2], torch.full((2,), mass * GRAVITY), rtol=0.05, atol=0)
    sim.close()


def test_non_finite_world_is_isolated_and_repaired_by_reset(robot):
    """A NaN in one world leaves the others bitwise equal to a clean run; resetting it repairs it."""
    n, bad = 6, 2
    generator = torch.Generator().manual_seed(3)
    sims = [make_backend("mujoco", robot, n, props=[TARGET], num_threads=2) for _ in range(2)]
    clean, broken = sims
    start = standing_state(clean, n)
    start[0][:, 1] = torch.arange(float(n))
    targets = [random_targets(robot, n, generator) for _ in range(6)]
    for sim in sims:
        sim.set_robot_state(torch.arange(n), *start)
    poisoned = [v[bad:bad + 1].clone() for v in start]
    poisoned[2][0, 0] = float("nan")  # NaN root velocity
    broken.set_robot_state(torch.tensor([bad]), *poisoned)

    others = [i for i in range(n) if i != bad]
    for t in targets[:3]:
        for sim in sims:
            sim.set_pd_targets(t)
            sim.step(4)
        assert not torch.isfinite(broken.state.root_pos[bad]).all()
        for name, value in all_tensors(clean).items():
            assert torch.equal(all_tensors(broken)[name][others], value[others]), name

    # The env's reset: new robot (and prop) state for the broken world, in both runs alike.
    reset = [v[bad:bad + 1] for v in standing_state(clean, n)]
    prop_pose = [torch.tensor([[2.0, 0.0, 0.9]]), torch.tensor([[0.0, 0.0, 0.0, 1.0]]), torch.zeros(1, 3), torch.zeros(1, 3)]
    for sim in sims:
        sim.set_robot_state([bad], *reset)
        sim.set_prop_state("target", [bad], *prop_pose)
    assert all(torch.isfinite(v).all() for v in all_tensors(broken).values())
    for t in targets[3:]:
        for sim in sims:
            sim.set_pd_targets(t)
            sim.step(4)
    for name, value in all_tensors(clean).items():
        assert torch.equal(all_tensors(broken)[name], value), name
    for sim in sims:
        sim.close()


def test_bad_arguments_raise_clear_errors(robot):
    sim = make_backend("mujoco", robot, 3, props=[TARGET], num_threads=1)
    state = standing_state(sim, 2)
    with pytest.raises(ValueError, match=r"root_pos must have shape \[2, 3\], got \[2, 4\]"):
        sim.set_robot_state(torch.tensor([0, 1]), torch.zeros(2, 4), *state[1:])
    with pytest.raises(ValueError, match=r"dof_vel must have shape \[2, 28\]"):
        sim.set_robot_state(torch.tensor([0, 1]), *state[:5], torch.zeros(2, 27))
    with pytest.raises(ValueError, match=r"targets must have shape \[3, 28\], got \[2, 28\]"):
        sim.set_pd_targets(torch.zeros(2, robot.num_dofs))
    with pytest.raises(ValueError, match=r"env_ids must lie in \[0, 3\)"):
        sim.set_robot_state(torch.tensor([0, 3]), *state)
    with pytest.raises(ValueError, match=r"bool mask must have shape \[3\]"):
        sim.set_robot_state(torch.tensor([True, False]), *state)
    with pytest.raises(KeyError, match=r"unknown prop 'ball'.*\['target'\]"):
        sim.prop_state("ball")
    with pytest.raises(KeyError, match="valid props"):
        sim.set_prop_state("ball", [0], torch.zeros(1, 3), torch.zeros(1, 4), torch.zeros(1, 3), torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"target rot must have shape \[1, 4\]"):
        sim.set_prop_state("target", [0], torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 3))
    with pytest.raises(ValueError, match="substeps"):
        sim.step(0)
    sim.close()
    with pytest.raises(ConfigError, match=r"unknown sim backend 'bullet'.*'mujoco'"):
        make_backend("bullet", robot, 1)
    with pytest.raises(ConfigError, match="shape 'cone'"):
        PropSpec("x", "cone", (1.0,), 1.0)
    with pytest.raises(ConfigError, match="takes 3 positive size numbers"):
        PropSpec("x", "box", (1.0, 1.0), 1.0)


def test_sword_shield_humanoid_steps_with_its_own_layout():
    robot = load_robot("sword_shield")
    sim = make_backend("mujoco", robot, 2, num_threads=2)
    sim.set_robot_state(torch.arange(2), *standing_state(sim, 2))
    sim.set_pd_targets(torch.zeros(2, robot.num_dofs))
    sim.step(4)
    state = sim.state
    assert state.body_pos.shape == (2, 17, 3) and state.dof_pos.shape == (2, 31)
    assert state.contact_forces.shape == (2, 17, 3)
    assert torch.isfinite(state.body_pos).all()
    assert sim.qpos_for_render(1).shape == (sim.mj_model.nq,)
    sim.close()


def test_mujoco_warnings_become_python_warnings_not_a_log_file(tmp_path, monkeypatch):
    """A huge qpos makes MuJoCo warn; the warning is a RuntimeWarning and no MUJOCO_LOG.TXT
    appears in the current folder (MuJoCo's default writes one there)."""
    import mujoco

    import ase_humanoid.sim  # noqa: F401  (routes MuJoCo's warnings on import)
    from ase_humanoid.robots import build_scene_spec, load_robot

    monkeypatch.chdir(tmp_path)
    model = build_scene_spec(load_robot("amp_humanoid")).compile()
    data = mujoco.MjData(model)
    data.qpos[2] = 1e30
    with pytest.warns(RuntimeWarning, match="MuJoCo: Nan, Inf or huge value in QPOS"):
        mujoco.mj_step(model, data)
    assert list(tmp_path.iterdir()) == []
