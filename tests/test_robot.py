"""Humanoid MJCFs and RobotDescription against the published humanoid facts (tests/data/humanoid_facts.md)."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from ase_humanoid.errors import ModelError
from ase_humanoid.robots import build_scene_spec, load_robot
from ase_humanoid.robots.description import PROJECT_ROOT

FACTS = Path(__file__).parent / "data" / "humanoid_facts.md"
SECTIONS = {"amp_humanoid": "## AMP humanoid", "sword_shield": "## Sword-and-shield humanoid"}
GRAVITY = 9.81


def _tables(section_title: str) -> dict[str, list[dict[str, str]]]:
    """Markdown tables of one humanoid's section, keyed by their '### ' heading's first word."""
    text = FACTS.read_text()
    start = text.index(section_title)
    end = text.find("\n## ", start + 1)
    tables, title, header = {}, None, None
    for line in text[start : end if end > 0 else None].splitlines():
        if line.startswith("### "):
            title, header = line[4:].split()[0].lower(), None
        elif line.startswith("|") and title:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set(cells[0]) <= {"-"}:
                tables.setdefault(title, []).append(dict(zip(header, cells)))
    return tables


def _total_mass(section_title: str) -> float:
    text = FACTS.read_text()
    line = next(l for l in text[text.index(section_title):].splitlines() if "total mass" in l)
    return float(line.split("total mass")[1].split("kg")[0])


@pytest.fixture(scope="module", params=list(SECTIONS))
def robot_and_facts(request):
    return load_robot(request.param), _tables(SECTIONS[request.param]), _total_mass(SECTIONS[request.param])


def test_counts():
    amp, ss = load_robot("amp_humanoid"), load_robot("sword_shield")
    assert (amp.num_bodies, amp.num_dofs) == (15, 28)
    assert (ss.num_bodies, ss.num_dofs) == (17, 31)
    for robot in (amp, ss):
        model = mujoco.MjModel.from_xml_path(str(robot.mjcf_path))
        assert model.nu == robot.num_dofs
        assert int((model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE).sum()) == robot.num_dofs
        assert model.opt.timestep == pytest.approx(1.0 / 120.0)


def test_skeleton_matches_facts(robot_and_facts):
    robot, facts, _ = robot_and_facts
    bodies = facts["bodies"]
    assert robot.body_names == [row["body"] for row in bodies]
    for i, row in enumerate(bodies):
        parent = robot.parent_indices[i].item()
        assert (robot.body_names[parent] if parent >= 0 else "-") == row["parent"]
        expected = [float(x) for x in row["pos in parent (m)"].split()]
        np.testing.assert_allclose(robot.local_translation[i].numpy(), expected, atol=1e-6)


def test_masses_within_2_percent(robot_and_facts):
    robot, facts, total = robot_and_facts
    for i, row in enumerate(facts["bodies"]):
        assert robot.body_masses[i].item() == pytest.approx(float(row["mass (kg)"]), rel=0.02), row["body"]
    assert robot.body_masses.sum().item() == pytest.approx(total, rel=0.02)


def test_joints_gains_limits_match_facts(robot_and_facts):
    robot, facts, _ = robot_and_facts
    joints = {row["joint"]: row for row in facts["joints"]}
    gear = {row["joint"]: float(row["gear"]) for row in facts["actuators"]}
    assert sorted(robot.dof_names) == sorted(joints)
    for d, name in enumerate(robot.dof_names):
        row = joints[name]
        lo, hi = (math.radians(float(x)) for x in row["range (deg)"].split(".."))
        assert robot.dof_limits_lower[d].item() == pytest.approx(lo, abs=1e-6), name
        assert robot.dof_limits_upper[d].item() == pytest.approx(hi, abs=1e-6), name
        np.testing.assert_allclose(robot.dof_axes[d].numpy(), [float(x) for x in row["axis"].split()])
        assert robot.body_names[_body_of_dof(robot, d)] == row["body"]
        assert robot.kp[d].item() == pytest.approx(float(row["stiffness (kp)"])), name
        assert robot.kd[d].item() == pytest.approx(float(row["damping (kd)"])), name
        assert robot.armature[d].item() == pytest.approx(float(row["armature"])), name
        assert robot.effort_limit[d].item() == pytest.approx(gear[name]), name


def _body_of_dof(robot, dof):
    group = int(np.searchsorted(robot.dof_offsets, dof, side="right")) - 1
    return robot.dof_body_ids[group]


def test_geoms_match_facts(robot_and_facts):
    robot, facts, _ = robot_and_facts
    model = mujoco.MjModel.from_xml_path(str(robot.mjcf_path))
    types = {"sphere": mujoco.mjtGeom.mjGEOM_SPHERE, "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE,
             "box": mujoco.mjtGeom.mjGEOM_BOX, "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER}
    assert model.ngeom == len(facts["geoms"])
    for row in facts["geoms"]:
        g = model.geom(row["geom"])
        assert g.type[0] == types[row["type"]]
        assert model.body(g.bodyid[0]).name == row["body"]
        size = [float(x) for x in row["size (m)"].split()]
        np.testing.assert_allclose(g.size[: len(size)], size, atol=1e-6)
        np.testing.assert_allclose(g.pos, [float(x) for x in row["pos in body"].split()], atol=1e-6)
        quat = np.array([float(x) for x in row["quat (wxyz)"].split()])
        assert abs(np.dot(g.quat, quat / np.linalg.norm(quat))) == pytest.approx(1.0, abs=1e-6)
        assert g.friction[0] == pytest.approx(1.0)


def test_actuators_are_pd_in_hinge_order(robot_and_facts):
    robot, _, _ = robot_and_facts
    model = mujoco.MjModel.from_xml_path(str(robot.mjcf_path))
    for a, name in enumerate(robot.dof_names):
        assert model.joint(model.actuator_trnid[a, 0]).name == name
        assert model.actuator_forcelimited[a]
    # One step of the PD law from a known state: qfrc = clip(kp (target - q)) - kd qdot (+ bias).
    data = mujoco.MjData(model)
    data.qpos[7:] = 0.1
    data.qvel[6:] = 0.5
    data.ctrl[:] = 0.3
    mujoco.mj_forward(model, data)
    kp, kd, effort = robot.kp.double().numpy(), robot.kd.double().numpy(), robot.effort_limit.double().numpy()
    np.testing.assert_allclose(data.actuator_force, np.clip(kp * 0.2, -effort, effort), rtol=1e-9)
    np.testing.assert_allclose(data.qfrc_damper[6:], -kd * 0.5, rtol=1e-9)


def test_pd_action_mapping():
    robot = load_robot("amp_humanoid")
    index = {n: i for i, n in enumerate(robot.dof_names)}
    rad = math.radians
    # 3-DoF joints: offset 0, scale min(1.2 * max |limit|, pi).
    assert robot.pd_action_scale[index["abdomen_y"]].item() == pytest.approx(1.2 * rad(90), rel=1e-6)
    assert robot.pd_action_scale[index["neck_z"]].item() == pytest.approx(1.2 * rad(60), rel=1e-6)
    assert robot.pd_action_scale[index["right_shoulder_x"]].item() == pytest.approx(math.pi, rel=1e-6)
    assert robot.pd_action_scale[index["right_ankle_y"]].item() == pytest.approx(1.2 * rad(55), rel=1e-6)
    assert robot.pd_action_offset[index["left_hip_z"]].item() == 0.0
    # Hinges: offset mid-range, scale 0.7 * range.
    assert robot.pd_action_offset[index["right_elbow"]].item() == pytest.approx(rad(-80), rel=1e-6)
    assert robot.pd_action_scale[index["right_elbow"]].item() == pytest.approx(0.7 * rad(160), rel=1e-6)
    assert robot.pd_action_offset[index["left_knee"]].item() == pytest.approx(rad(80), rel=1e-6)

    actions = torch.tensor([[0.0] * 28, [1.0] * 28, [5.0] * 28, [-3.0] * 28])
    targets = robot.action_to_pd_target(actions)
    assert targets.shape == (4, 28)
    torch.testing.assert_close(targets[0], robot.pd_action_offset)
    torch.testing.assert_close(targets[1], robot.pd_action_offset + robot.pd_action_scale)
    torch.testing.assert_close(targets[2], targets[1])  # clipped to +1
    torch.testing.assert_close(targets[3], robot.pd_action_offset - robot.pd_action_scale)
    assert robot.action_to_pd_target(actions.double()).dtype == torch.float64


def test_config_bodies():
    amp = load_robot("amp_humanoid")
    assert amp.key_body_names == ["right_hand", "left_hand", "right_foot", "left_foot"]
    assert [amp.body_names[i] for i in amp.key_body_ids] == amp.key_body_names
    assert [amp.body_names[i] for i in amp.contact_body_ids] == ["right_foot", "left_foot"]
    assert amp.reach_body_name == "right_hand" and amp.body_names[amp.reach_body_id] == "right_hand"
    heights = dict(zip(amp.body_names, amp.termination_heights.tolist()))
    assert heights["head"] == pytest.approx(0.3) and heights["torso"] == pytest.approx(0.15)

    ss = load_robot("sword_shield")
    assert [ss.body_names[i] for i in ss.key_body_ids] == ["right_hand", "left_hand", "right_foot", "left_foot", "sword", "shield"]
    assert ss.body_names[ss.reach_body_id] == "sword"

    custom = load_robot(PROJECT_ROOT / "assets/mjcf/amp_humanoid.xml", key_bodies=["head"], contact_bodies=[])
    assert custom.key_body_ids == [custom.body_names.index("head")] and custom.contact_body_ids == []
    assert custom.reach_body_id is None


def test_to_device_and_dtype():
    robot = load_robot("amp_humanoid").to(dtype=torch.float64)
    assert robot.local_translation.dtype == torch.float64 and robot.parent_indices.dtype == torch.long
    assert robot.spherical_dof_ids.shape == (8, 3) and robot.hinge_dof_ids.shape == (4,)


# ---- errors ----------------------------------------------------------------------------------------------

def test_missing_file(tmp_path):
    with pytest.raises(ModelError, match="not found.*nowhere.xml"):
        load_robot(tmp_path / "nowhere.xml")
    with pytest.raises(ModelError, match="neither a known robot.*amp_humanoid"):
        load_robot("no_such_robot")


def test_malformed_xml(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text("<mujoco><worldbody><body name='pelvis'></worldbody></mujoco>")
    with pytest.raises(ModelError) as info:
        load_robot(path)
    assert "broken.xml" in str(info.value) and "MuJoCo" in str(info.value)


def test_unknown_key_body_lists_valid_names():
    with pytest.raises(ModelError) as info:
        load_robot("amp_humanoid", key_bodies=["right_hand", "tail"])
    message = str(info.value)
    assert "'tail'" in message and "pelvis" in message and "left_foot" in message
    with pytest.raises(ModelError, match="contact body 'hoof'"):
        load_robot("sword_shield", contact_bodies=["hoof"])


def _write_variant(tmp_path, old, new):
    src = (PROJECT_ROOT / "assets/mjcf/amp_humanoid.xml").read_text()
    assert old in src
    path = tmp_path / "variant.xml"
    path.write_text(src.replace(old, new))
    return path


def test_two_hinge_body_rejected(tmp_path):
    path = _write_variant(tmp_path, '<joint name="neck_z" axis="0 0 1" range="-45 45" damping="10" armature="0.01"/>', "")
    path.write_text(path.read_text().replace('<position name="neck_z" joint="neck_z" kp="100" forcerange="-50 50"/>', ""))
    with pytest.raises(ModelError, match="'head' has 2 hinges"):
        load_robot(path)


def test_non_hinge_joint_rejected(tmp_path):
    path = _write_variant(tmp_path, '<joint name="right_knee" axis="0 1 0" range="0 160" damping="50" armature="0.02"/>',
                          '<joint name="right_knee" type="slide" axis="0 1 0" range="0 0.1" damping="50" armature="0.02"/>')
    with pytest.raises(ModelError, match="'right_knee'.*not a hinge"):
        load_robot(path)


# ---- scene and physics -----------------------------------------------------------------------------------

class _Prop:
    name, shape, size, density, rgba, contype, conaffinity = "target", "box", (0.2, 0.2, 0.9), 30.0, (1, 0, 0, 1), 1, 1


def test_scene_has_floor_humanoid_and_props():
    robot = load_robot("sword_shield")
    model = build_scene_spec(robot, props=[_Prop()]).compile()
    humanoid = mujoco.MjModel.from_xml_path(str(robot.mjcf_path))
    assert [model.body(b).name for b in range(1, robot.num_bodies + 1)] == robot.body_names
    assert model.body(robot.num_bodies + 1).name == "target"
    assert model.geom("scene/floor").friction[0] == pytest.approx(1.0)
    # the default PD law adds one unclamped damping actuator per hinge (robots/scene.py)
    assert robot.pd_damping == "drive_implicit" and model.nu == 2 * robot.num_dofs and model.nq == humanoid.nq + 7
    # ... and steps with Euler, which keeps the joint damping implicit (robots/scene.py)
    assert model.opt.timestep == humanoid.opt.timestep and model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    np.testing.assert_array_equal(model.jnt_range[: humanoid.njnt], humanoid.jnt_range)


def _standing_sim(name, pd_damping=None):
    robot = load_robot(name, pd_damping=pd_damping)
    model = build_scene_spec(robot).compile()
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    # Lower the default pose (pelvis at 1 m) until the lowest foot-box corner touches the floor.
    lowest = min(_lowest_corner_z(model, data, robot.body_names.index(f) + 1) for f in ("right_foot", "left_foot"))
    data.qpos[2] -= lowest
    mujoco.mj_forward(model, data)
    return robot, model, data


def _lowest_corner_z(model, data, body_id):
    geom = model.body_geomadr[body_id]
    half = model.geom_size[geom]
    corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half
    return (data.geom_xpos[geom] + corners @ data.geom_xmat[geom].reshape(3, 3).T)[:, 2].min()


@pytest.mark.parametrize("name", list(SECTIONS))
def test_standing_pose_supports_weight(name):
    """Standing with PD targets at the default pose for 1 s: the feet carry m g and the humanoid stays up.

    The floor's vertical contact force on the feet equals the weight only if the model stands
    still on them (no sinking, bouncing or tipping): it checks masses, contact and PD together.
    """
    robot, model, data = _standing_sim(name)
    assert data.qpos[2] == pytest.approx(0.8814, abs=2e-3)  # pelvis height with feet on the floor
    data.ctrl[:] = 0.0
    feet = {robot.body_names.index(f) + 1 for f in ("right_foot", "left_foot")}
    floor = model.geom("scene/floor").id
    support = []
    force = np.zeros(6)
    for step in range(120):
        mujoco.mj_step(model, data)
        if step >= 60:
            total = 0.0
            for i in range(data.ncon):
                c = data.contact[i]
                assert {model.geom_bodyid[c.geom1], model.geom_bodyid[c.geom2]} <= feet | {0}  # only feet touch
                if floor in (c.geom1, c.geom2):
                    mujoco.mj_contactForce(model, data, i, force)
                    total += abs((c.frame.reshape(3, 3).T @ force[:3])[2])
            support.append(total)
    weight = robot.body_masses.double().sum().item() * GRAVITY
    assert np.mean(support) == pytest.approx(weight, rel=0.03)
    assert data.xmat[1].reshape(3, 3)[2, 2] > 0.98  # pelvis z axis still near vertical
    assert data.qpos[2] == pytest.approx(0.8814, abs=0.02)


def test_random_pd_targets_stay_bounded():
    """Random PD targets at 30 Hz for 10 s stay finite with plausible root spin.

    Under the joint law (joint damping, implicit and unsaturated); with the damping inside the
    force-limited actuator alone ("drive") the humanoid spun at ~14 rad/s median and blew up a
    few times here. The default law's test: test_physics_port.py, random actions through the env.
    """
    robot, model, data = _standing_sim("amp_humanoid", pd_damping="joint")
    rng = np.random.default_rng(0)
    spins = []
    for step in range(1200):
        if step % 4 == 0:
            data.ctrl[:] = robot.action_to_pd_target(torch.from_numpy(rng.uniform(-1, 1, robot.num_dofs))).numpy()
        mujoco.mj_step(model, data)
        spins.append(np.abs(data.qvel[3:6]).max())
    assert np.isfinite(data.qpos).all()
    assert np.median(spins) < 6.0 and max(spins) < 30.0
