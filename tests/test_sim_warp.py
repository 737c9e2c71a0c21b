"""MuJoCo Warp backend on warp's CPU device (a handful of worlds) against the native CPU backend.

Kernel compilation: the first run on a machine compiles MuJoCo Warp's kernels for warp's CPU
device (this whole file took 46 s from a cold cache here); warp caches them in
~/.cache/warp/<version> (WARP_CACHE_PATH overrides it), after which the file takes about 11 s on
2 cores. The tests share two backends (module fixtures) so the kernels load once, and the
backend replays its captured substep loop, so stepping a few worlds is cheap.

Tolerances of the equivalence test (30 control steps = 120 substeps of 1/120 s, 4 worlds: one
standing, three pushed, tilted and driven to random PD targets, one of which falls over): root
position 1e-4 m, root rotation 1e-4 (quaternion components), DoF positions 1e-3 rad. Measured
here: root 1.2e-6 m, rotation 1.6e-6, DoF 2.3e-6 rad, body positions 1.8e-6 m, contact forces
0.01 N (of ~500 N); over 40 falling worlds (benchmarks/_warp_bench.py scenario, 5 seeds x 8
worlds) at most 4e-6 m and 3.2e-6 rad. What is left is float32 (MuJoCo Warp) against float64
(MuJoCo) round-off, amplified by contact events; the bounds leave more than an order of
magnitude of margin for other CPUs and compilers and still catch any difference in model,
convention or PD targets (those show up as millimetres and centiradians within a few steps).
Two sources of real divergence were found and removed: MuJoCo Warp's default GJK/EPA box-box
collider made foot-foot contacts differ, so about one falling world in five left the CPU
trajectory by centimetres (the backend selects its analytic box-box collider, see
`model_for_warp`); and a hinge placed exactly at its limit is a tie that float32 and float64
break differently (the limit constraint is active in one engine only), so the test's random
poses stay 0.02 rad inside the limits.
"""

import sys

import mujoco
import pytest
import torch

from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.robots import body_state_from_qpos, load_robot
from ase_humanoid.sim import PropSpec, make_backend
from ase_humanoid.sim.scene import lowest_point_height

GRAVITY = 9.81
TARGET = PropSpec("target", "box", (0.2, 0.2, 0.9), 30.0)  # ASE strike target: 0.4 x 0.4 x 1.8 m
LIMIT_MARGIN = 0.02  # radians
STATE_NAMES = ["root_pos", "root_rot", "root_lin_vel", "root_ang_vel", "dof_pos", "dof_vel"]


@pytest.fixture(scope="module")
def robot():
    return load_robot("amp_humanoid")


@pytest.fixture(scope="module")
def warp_sim(robot):
    """Four worlds of the bare humanoid scene, shared by the tests (each sets all it uses)."""
    pytest.importorskip("mujoco_warp", reason="the 'gpu'/'test' extra (mujoco-warp) is not installed")
    sim = make_backend("mujoco_warp", robot, 4, device="cpu")
    yield sim
    sim.close()


@pytest.fixture(scope="module")
def warp_prop_sim(robot):
    pytest.importorskip("mujoco_warp", reason="the 'gpu'/'test' extra (mujoco-warp) is not installed")
    sim = make_backend("mujoco_warp", robot, 2, props=[TARGET], device="cpu")
    yield sim
    sim.close()


def standing_state(sim, n):
    """Default pose (all hinges 0) with the feet resting on the floor, at rest."""
    robot, model = sim.robot, sim.mj_model
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in robot.body_names]
    root_pos = robot.local_translation[0].expand(n, 3).clone()
    root_pos[:, 2] -= lowest_point_height(model, model.qpos0, body_ids)
    root_rot = torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(n, 4).clone()
    dofs = torch.zeros(n, robot.num_dofs)
    return [root_pos, root_rot, torch.zeros(n, 3), torch.zeros(n, 3), dofs, dofs.clone()]


def perturbed_state(sim, n, generator):
    """Standing pose lifted 5 cm, tilted 0.15 rad, pushed, with random DoF angles and rates."""
    robot = sim.robot
    state = standing_state(sim, n)
    axis = torch.nn.functional.normalize(torch.randn(n, 3, generator=generator), dim=-1)
    state[0][:, 2] += 0.05
    state[1] = torch.cat([axis * torch.sin(torch.tensor(0.075)), torch.cos(torch.tensor(0.075)).expand(n, 1)], -1)
    state[2] = 0.3 * torch.randn(n, 3, generator=generator)
    state[3] = 0.5 * torch.randn(n, 3, generator=generator)
    # Strictly inside the limits: a hinge exactly at its limit is a tie that float32 and float64
    # break differently (the limit row is active in one engine and not in the other).
    state[4] = (0.15 * torch.randn(n, robot.num_dofs, generator=generator)).clamp(
        robot.dof_limits_lower + LIMIT_MARGIN, robot.dof_limits_upper - LIMIT_MARGIN
    )
    state[5] = 0.5 * torch.randn(n, robot.num_dofs, generator=generator)
    return state


def random_targets(robot, n, generator, amplitude=0.3):
    actions = (torch.rand(n, robot.num_dofs, generator=generator) * 2 - 1) * amplitude
    return robot.action_to_pd_target(actions)


def quat_distance(a, b):
    """Largest component difference of unit quaternions up to sign `[...]`."""
    return torch.minimum((a - b).abs().amax(-1), (a + b).abs().amax(-1))


def test_make_backend_builds_the_same_scene_on_warp_cpu(warp_sim, robot):
    from ase_humanoid.sim.mujoco_warp import MujocoWarpBackend

    cpu = make_backend("mujoco", robot, 1, num_threads=1)
    assert isinstance(warp_sim, MujocoWarpBackend)
    assert warp_sim.device == torch.device("cpu") and warp_sim.num_envs == 4
    assert warp_sim.physics_dt == cpu.physics_dt
    for field in ("nq", "nv", "nu", "nbody", "ngeom", "nsensordata"):
        assert getattr(warp_sim.mj_model, field) == getattr(cpu.mj_model, field), field
    state = warp_sim.state
    assert state.body_pos.shape == (4, robot.num_bodies, 3)
    assert state.contact_forces.shape == (4, robot.num_bodies, 3)
    assert state.dof_pos.dtype == torch.float32
    # Same solver limits as native MuJoCo, which stops at them silently; capacity overflows still warn.
    import mujoco_warp as mjw

    assert warp_sim.mj_model.opt.ls_iterations == cpu.mj_model.opt.ls_iterations
    warn = warp_sim._m.opt.warn_overflow
    assert not warn & (mjw.OverflowType.ITERATIONS | mjw.OverflowType.LS_ITERATIONS)
    assert warn & mjw.OverflowType.NEFC and warn & mjw.OverflowType.NARROWPHASE
    cpu.close()


def test_trajectories_match_native_mujoco(warp_sim, robot):
    """Same MJCF, initial states and PD targets: the two engines follow the same trajectories."""
    n = warp_sim.num_envs
    generator = torch.Generator().manual_seed(1)
    start = standing_state(warp_sim, n)
    pushed = perturbed_state(warp_sim, n - 1, generator)
    for value, other in zip(start, pushed):
        value[1:] = other
    targets = torch.zeros(n, robot.num_dofs)
    targets[1:] = random_targets(robot, n - 1, generator, amplitude=0.2)

    cpu = make_backend("mujoco", robot, n, num_threads=1)
    for sim in (cpu, warp_sim):
        sim.set_robot_state(torch.arange(n), *start)
        sim.set_pd_targets(targets)
        for _ in range(30):
            sim.step(4)
    ref, got = cpu.state, warp_sim.state
    assert ref.root_pos[1:, 2].min() < 0.5  # a pushed world fell: contacts came and went
    torch.testing.assert_close(got.root_pos, ref.root_pos, atol=1e-4, rtol=0)
    assert quat_distance(got.root_rot, ref.root_rot).max() < 1e-4
    torch.testing.assert_close(got.dof_pos, ref.dof_pos, atol=1e-3, rtol=0)
    torch.testing.assert_close(got.dof_vel, ref.dof_vel, atol=2e-2, rtol=0)
    torch.testing.assert_close(got.body_pos, ref.body_pos, atol=1e-4, rtol=0)
    # Contact forces: same constraint solve up to float32 round-off (forces of order 500 N).
    torch.testing.assert_close(got.contact_forces, ref.contact_forces, atol=0.5, rtol=0)
    cpu.close()


def test_state_round_trip_is_exact_and_qpos_matches(warp_sim, robot):
    generator = torch.Generator().manual_seed(2)
    warp_sim.set_robot_state(torch.arange(4), *standing_state(warp_sim, 4))
    before = {name: getattr(warp_sim.state, name).clone() for name in STATE_NAMES}
    ids = torch.tensor([1, 3])
    values = perturbed_state(warp_sim, 2, generator)
    warp_sim.set_robot_state(ids, *values)
    state = warp_sim.state
    for name, value in zip(STATE_NAMES, values):
        assert torch.equal(getattr(state, name)[ids], value), name
        assert torch.equal(getattr(state, name)[[0, 2]], before[name][[0, 2]]), name
    expected = body_state_from_qpos(robot, *values)
    for name, value in zip(["body_pos", "body_rot", "body_lin_vel", "body_ang_vel"], expected):
        torch.testing.assert_close(getattr(state, name)[ids], value)
    assert torch.equal(state.contact_forces[ids], torch.zeros(2, robot.num_bodies, 3))

    # The warp arrays hold MuJoCo's layout: root position, w x y z quaternion, hinge angles.
    layout = warp_sim._layout  # noqa: SLF001
    for row, env in enumerate(ids.tolist()):
        qpos = torch.from_numpy(warp_sim.qpos_for_render(env))
        assert qpos.shape == (warp_sim.mj_model.nq,) and qpos.dtype == torch.float64
        root = layout.root_qpos_adr
        torch.testing.assert_close(qpos[root:root + 3].float(), values[0][row])
        torch.testing.assert_close(qpos[root + 3:root + 7].float(), values[1][row][[3, 0, 1, 2]])
        torch.testing.assert_close(qpos[layout.dof_qpos_adr].float(), values[4][row])

    # Bool masks select the same worlds as index tensors.
    mask = torch.tensor([True, False, True, False])
    values = perturbed_state(warp_sim, 2, generator)
    warp_sim.set_robot_state(mask, *values)
    assert torch.equal(warp_sim.state.dof_vel[mask], values[5])


def test_subset_reset_leaves_other_worlds_alone(warp_sim, robot):
    """Mid-run, worlds 1 and 3 get the same new state and targets: worlds 0 and 2 are untouched,
    and worlds 1 and 3 then evolve bitwise alike, whatever the other worlds do (on warp's CPU
    device; on a GPU, float atomics may reorder sums in the last bits)."""
    generator = torch.Generator().manual_seed(3)
    warp_sim.set_robot_state(torch.arange(4), *perturbed_state(warp_sim, 4, generator))
    targets = random_targets(robot, 4, generator)
    warp_sim.set_pd_targets(targets)
    warp_sim.step(4)
    warp_sim.step(4)
    kept = warp_sim.state
    kept_qpos = [warp_sim.qpos_for_render(i) for i in (0, 2)]
    ids = torch.tensor([1, 3])
    new_state = [v.expand(2, *v.shape[1:]).clone() for v in perturbed_state(warp_sim, 1, generator)]
    warp_sim.set_robot_state(ids, *new_state)
    for name in STATE_NAMES:
        assert torch.equal(getattr(warp_sim.state, name)[[0, 2]], getattr(kept, name)[[0, 2]]), name
    for env, qpos in zip((0, 2), kept_qpos):
        assert (warp_sim.qpos_for_render(env) == qpos).all()
    targets[3] = targets[1].clone()
    warp_sim.set_pd_targets(targets)
    for _ in range(10):
        warp_sim.step(4)
    state = warp_sim.state
    for name in STATE_NAMES + ["body_pos", "contact_forces"]:
        value = getattr(state, name)
        assert torch.equal(value[1], value[3]), name
    assert not torch.allclose(state.root_pos[1], new_state[0][0])  # it did move


def test_graph_replay_equals_eager_launches(warp_sim, robot):
    """The captured substep loop sees targets and resets written between replays: same results,
    bitwise, as launching every kernel from Python."""
    from ase_humanoid.sim.mujoco_warp import MujocoWarpBackend

    eager = MujocoWarpBackend(robot, 4, device="cpu", use_graph=False)
    generator = torch.Generator().manual_seed(6)
    start = perturbed_state(warp_sim, 4, generator)
    targets = [random_targets(robot, 4, generator) for _ in range(3)]
    reset = perturbed_state(warp_sim, 1, generator)
    for sim in (warp_sim, eager):
        sim.set_robot_state(torch.arange(4), *start)
        for k, target in enumerate(targets):
            sim.set_pd_targets(target)
            sim.step(4)
            if k == 0:
                sim.set_robot_state(torch.tensor([2]), *reset)
    for name in STATE_NAMES + ["contact_forces"]:
        assert torch.equal(getattr(warp_sim.state, name), getattr(eager.state, name)), name
    eager.close()


def test_state_dict_resumes_bitwise(warp_sim, robot):
    generator = torch.Generator().manual_seed(5)
    warp_sim.set_robot_state(torch.arange(4), *perturbed_state(warp_sim, 4, generator))
    warp_sim.set_pd_targets(random_targets(robot, 4, generator))
    warp_sim.step(4)
    saved = warp_sim.state_dict()
    runs = []
    for _ in range(2):
        warp_sim.load_state_dict(saved)
        for _ in range(3):
            warp_sim.step(4)
        runs.append({name: getattr(warp_sim.state, name).clone() for name in STATE_NAMES + ["contact_forces"]})
    for name in runs[0]:
        assert torch.equal(runs[0][name], runs[1][name]), name
    with pytest.raises(ModelError, match="backend 'mujoco'"):
        warp_sim.load_state_dict({"backend": "mujoco"})
    wrong = dict(saved, qpos=saved["qpos"][:2])
    with pytest.raises(ModelError, match=r"'qpos' has shape \[2, 35\]"):
        warp_sim.load_state_dict(wrong)


def test_standing_humanoid_contact_force_equals_weight(warp_sim, robot):
    """Same check as the CPU backend: PD holding the default pose keeps the humanoid standing,
    and floor contact on the two feet carries m g (averaged over the last 0.25 s)."""
    n = warp_sim.num_envs
    warp_sim.set_robot_state(torch.arange(n), *standing_state(warp_sim, n))
    warp_sim.set_pd_targets(torch.zeros(n, robot.num_dofs))
    forces = []
    for step in range(30):
        warp_sim.step(4)
        if step >= 22:
            forces.append(warp_sim.state.contact_forces.clone())
    mean_force = torch.stack(forces).mean(0)  # [N, B, 3]
    weight = float(robot.body_masses.sum()) * GRAVITY
    total = mean_force.sum(1)
    assert warp_sim.state.root_pos[:, 2].min() > 0.8  # still standing
    torch.testing.assert_close(total[:, 2], torch.full((n,), weight), rtol=0.1, atol=0)
    assert total[:, :2].abs().max() < 0.05 * weight
    feet = [robot.body_names.index("right_foot"), robot.body_names.index("left_foot")]
    on_feet = mean_force[:, feet, 2].sum(1)
    torch.testing.assert_close(on_feet, total[:, 2], rtol=1e-3, atol=1e-3)  # only the feet touch
    assert (mean_force[:, feet, 2] > 0.2 * weight).all()  # both feet bear load


def test_non_finite_world_is_isolated_and_repaired(warp_sim, robot):
    n, bad = warp_sim.num_envs, 2
    start = standing_state(warp_sim, n)
    warp_sim.set_robot_state(torch.arange(n), *start)
    warp_sim.set_pd_targets(torch.zeros(n, robot.num_dofs))
    poisoned = [v[bad:bad + 1].clone() for v in start]
    poisoned[2][0, 0] = float("nan")  # NaN root velocity
    warp_sim.set_robot_state(torch.tensor([bad]), *poisoned)
    for _ in range(3):
        warp_sim.step(4)
    state = warp_sim.state
    assert not torch.isfinite(state.root_pos[bad]).all()
    others = [i for i in range(n) if i != bad]
    assert torch.isfinite(state.body_pos[others]).all()
    torch.testing.assert_close(state.root_pos[others], state.root_pos[[0, 0, 0]], atol=1e-5, rtol=0)

    fresh = [v[:2] for v in standing_state(warp_sim, n)]
    warp_sim.set_robot_state(torch.tensor([0, bad]), *fresh)
    for _ in range(3):
        warp_sim.step(4)
    state = warp_sim.state
    assert torch.isfinite(torch.from_numpy(warp_sim.qpos_for_render(bad))).all()
    for name in ("root_pos", "dof_pos", "contact_forces"):
        value = getattr(state, name)
        torch.testing.assert_close(value[bad], value[0], atol=1e-4, rtol=0)


def test_strike_target_rests_on_floor_like_on_cpu(warp_prop_sim, robot):
    sim = warp_prop_sim
    assert sim.prop_names == ["target"]
    cpu = make_backend("mujoco", robot, 2, props=[TARGET], num_threads=1)
    pos = torch.tensor([[3.0, 1.0, 1.2], [-2.0, 2.0, 1.0]])
    yaw = torch.tensor([[0.0, 0.0, 0.29552, 0.95534]]).expand(2, 4)
    for backend in (cpu, sim):
        backend.set_robot_state(torch.arange(2), *standing_state(backend, 2))
        backend.set_pd_targets(torch.zeros(2, robot.num_dofs))
        backend.set_prop_state("target", torch.arange(2), pos, yaw, torch.zeros(2, 3), torch.zeros(2, 3))
        assert torch.equal(backend.prop_state("target").pos, pos)
        for _ in range(30):
            backend.step(4)
    target, ref = sim.prop_state("target"), cpu.prop_state("target")
    mass = 0.4 * 0.4 * 1.8 * 30.0
    assert target.in_contact.all()
    torch.testing.assert_close(target.pos, ref.pos, atol=1e-3, rtol=0)
    assert quat_distance(target.rot, ref.rot).max() < 1e-3
    torch.testing.assert_close(target.pos[:, 2], torch.full((2,), 0.9), atol=5e-3, rtol=0)
    torch.testing.assert_close(target.contact_force[:, 2], torch.full((2,), mass * GRAVITY), rtol=0.05, atol=0)
    cpu.close()


def test_bad_arguments_raise_clear_errors(warp_prop_sim, robot):
    sim = warp_prop_sim
    state = standing_state(sim, 2)
    with pytest.raises(ValueError, match=r"root_pos must have shape \[2, 3\], got \[2, 4\]"):
        sim.set_robot_state(torch.tensor([0, 1]), torch.zeros(2, 4), *state[1:])
    with pytest.raises(ValueError, match=r"targets must have shape \[2, 28\], got \[3, 28\]"):
        sim.set_pd_targets(torch.zeros(3, robot.num_dofs))
    with pytest.raises(ValueError, match=r"env_ids must lie in \[0, 2\)"):
        sim.set_robot_state(torch.tensor([0, 2]), *state)
    with pytest.raises(KeyError, match=r"unknown prop 'ball'.*\['target'\]"):
        sim.prop_state("ball")
    with pytest.raises(ValueError, match="substeps"):
        sim.step(0)
    with pytest.raises(ConfigError, match="runs on 'cpu' or 'cuda'"):
        make_backend("mujoco_warp", robot, 1, device="meta")


def test_missing_warp_names_the_gpu_extra(robot, monkeypatch):
    """Without warp installed, asking for the backend says which extra to install."""
    monkeypatch.setitem(sys.modules, "warp", None)  # None in sys.modules: import raises
    monkeypatch.setitem(sys.modules, "mujoco_warp", None)
    monkeypatch.delitem(sys.modules, "ase_humanoid.sim.mujoco_warp", raising=False)
    with pytest.raises(ConfigError, match=r"'gpu' extra"):
        make_backend("mujoco_warp", robot, 1)
    monkeypatch.delitem(sys.modules, "ase_humanoid.sim.mujoco_warp", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'ase_humanoid\[gpu\]'"):
        import ase_humanoid.sim.mujoco_warp  # noqa: F401


def test_isaacgym_adapter_without_isaacgym_says_so(monkeypatch):
    """The Isaac Gym adapter is optional and not exercised here: importing it without Isaac Gym
    fails with a message that says what is missing and what to use instead."""
    monkeypatch.setitem(sys.modules, "isaacgym", None)
    monkeypatch.delitem(sys.modules, "ase_humanoid.sim.isaacgym", raising=False)
    with pytest.raises(ImportError, match=r"Isaac Gym.*sim=mujoco"):
        import ase_humanoid.sim.isaacgym  # noqa: F401


def test_train_ase_two_epochs_on_mujoco_warp(tmp_path):
    """`sim=mujoco_warp` trains HumanoidASE end to end (warp's CPU device here, a GPU elsewhere)."""
    pytest.importorskip("mujoco_warp", reason="the 'gpu'/'test' extra (mujoco-warp) is not installed")
    import json

    from ase_humanoid.app import run

    run(["task=HumanoidASE", "sim=mujoco_warp", "device=cpu", "num_envs=4", "max_epochs=2", f"run_dir={tmp_path}",
         "train.params.actor_units=[64,64]", "train.params.critic_units=[64,64]", "train.params.disc_units=[64,64]",
         "train.params.mini_epochs=1", "train.params.amp_obs_demo_buffer_size=1024",
         "train.params.amp_replay_buffer_size=1024", "task.env.fall_pool_size=4", "task.env.fall_steps=10",
         "final_skill_report=0"])
    epochs = [json.loads(line)["epoch"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [1, 2]
    assert (tmp_path / "latest.pt").is_file()
