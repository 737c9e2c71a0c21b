"""The MuJoCo model every world of a backend shares: floor + humanoid + props + contact sensors.

`ase_humanoid.robots.scene.build_scene_spec` combines the humanoid MJCF (the parent spec, so its
options, bodies, joints and actuators keep their names and order) with the shared world
(`assets/mjcf/scene.xml`: floor, light) and one free body per prop. Here the simulator adds
what it needs on top: the 120 Hz timestep, no automatic reset of blown-up worlds, and one MuJoCo
contact sensor (net force) per humanoid body and per prop.

`SceneLayout` records where each quantity lives in MuJoCo's qpos/qvel/ctrl/sensordata arrays, so
backends can read and write batched state without name lookups on the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ase_humanoid.errors import ModelError
from ase_humanoid.robots.scene import build_scene_spec, is_damping_compensation
from ase_humanoid.sim.base import PHYSICS_DT, PropSpec

# MuJoCo contact sensor parameters (intprm): data bits, reduction, number of slots.
_CONTACT_DATA_FOUND = 1
_CONTACT_DATA_FORCE = 2
_CONTACT_REDUCE_NETFORCE = 3


@dataclass
class SceneLayout:
    """Where the humanoid and the props live in the combined model's arrays (one world)."""

    model: mujoco.MjModel
    robot_body_ids: np.ndarray  # [B] MuJoCo body id of each robot body (robot order)
    root_qpos_adr: int  # free joint: pos (3) then quat wxyz (4)
    root_qvel_adr: int  # free joint: world linear vel (3) then body-frame angular vel (3)
    dof_qpos_adr: np.ndarray  # [D]
    dof_qvel_adr: np.ndarray  # [D]
    dof_actuator_ids: np.ndarray  # [D] position actuator driving each DoF
    num_pd_actuators: int  # actuators taking a PD target (not pd_damping=drive_implicit's extra ones)
    body_contact_adr: np.ndarray  # [B] sensordata offset of each body's net force (3)
    prop_qpos_adr: dict  # name -> free joint qpos address
    prop_qvel_adr: dict  # name -> free joint qvel address
    prop_contact_adr: dict  # name -> sensordata offset of (found, fx, fy, fz)
    prop_names: list


def build_scene(robot, props=(), physics_dt: float = PHYSICS_DT, terrain=None) -> SceneLayout:
    """Compile floor + `robot` (RobotDescription) + `props` into one MjModel and lay it out;
    `terrain` (a `ase_humanoid.terrain.Terrain`, None: the floor plane) replaces the floor by
    its heightfield.

    Raises ModelError if the scene does not compile or the MJCF lacks a body, hinge or actuator
    of the description; ConfigError/ModelError for bad or clashing prop names.
    """
    props = tuple(props)
    _check_props(props, robot.body_names, robot.mjcf_path)
    spec = build_scene_spec(robot, props, terrain=terrain)
    spec.option.timestep = physics_dt
    # A world that blows up must stay non-finite (the env detects and resets it) instead of being
    # silently reset to the model's default pose by MuJoCo.
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
    for name in robot.body_names:
        _add_contact_sensor(spec, name, _CONTACT_DATA_FORCE)
    for prop in props:
        _add_contact_sensor(spec, prop.name, _CONTACT_DATA_FOUND | _CONTACT_DATA_FORCE)
    try:
        model = spec.compile()
    except ValueError as exc:
        raise ModelError(f"{robot.mjcf_path}: the combined scene does not compile: {exc}") from exc
    return _layout(model, robot.mjcf_path, robot.body_names, robot.dof_names, props)


def _check_props(props, body_names, path):
    for prop in props:
        if not isinstance(prop, PropSpec):
            raise TypeError(f"props must be PropSpec instances, got {type(prop).__name__}")
    names = [p.name for p in props]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ModelError(f"prop names must be unique, repeated: {duplicates}")
    clashes = sorted(set(names) & set(body_names))
    if clashes:
        raise ModelError(f"prop names {clashes} clash with body names of {path}")


def _add_contact_sensor(spec: mujoco.MjSpec, body_name: str, data_bits: int) -> None:
    """Net force of all contacts touching `body_name` (MuJoCo reports it as the force that body
    exerts on the others, in the world frame; backends negate it)."""
    spec.add_sensor(
        name=f"contact/{body_name}",
        type=mujoco.mjtSensor.mjSENS_CONTACT,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname=body_name,
        intprm=[data_bits, _CONTACT_REDUCE_NETFORCE, 1],
    )


def _id(model, obj_type, name, path, what):
    index = mujoco.mj_name2id(model, obj_type, name)
    if index < 0:
        raise ModelError(f"{path}: no {what} named {name!r}")
    return index


def _layout(model, path, body_names, dof_names, props) -> SceneLayout:
    body_ids = np.array([_id(model, mujoco.mjtObj.mjOBJ_BODY, n, path, "body") for n in body_names])
    root_joint = model.body_jntadr[body_ids[0]]
    if root_joint < 0 or model.jnt_type[root_joint] != mujoco.mjtJoint.mjJNT_FREE:
        raise ModelError(f"{path}: root body {body_names[0]!r} must have a free joint")

    joint_ids = [_id(model, mujoco.mjtObj.mjOBJ_JOINT, n, path, "joint") for n in dof_names]
    actuator_of_joint = {
        int(model.actuator_trnid[a, 0]): a
        for a in range(model.nu)
        if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT and not is_damping_compensation(model, a)
    }
    missing = [n for n, j in zip(dof_names, joint_ids) if j not in actuator_of_joint]
    if missing:
        raise ModelError(f"{path}: hinges without a position actuator: {missing}")

    sensor_adr = {model.sensor(i).name: int(model.sensor_adr[i]) for i in range(model.nsensor)}
    prop_names = [p.name for p in props]
    prop_joints = {n: model.body_jntadr[_id(model, mujoco.mjtObj.mjOBJ_BODY, n, path, "body")] for n in prop_names}
    return SceneLayout(
        model=model,
        robot_body_ids=body_ids,
        root_qpos_adr=int(model.jnt_qposadr[root_joint]),
        root_qvel_adr=int(model.jnt_dofadr[root_joint]),
        dof_qpos_adr=np.array([model.jnt_qposadr[j] for j in joint_ids], dtype=np.int64),
        dof_qvel_adr=np.array([model.jnt_dofadr[j] for j in joint_ids], dtype=np.int64),
        dof_actuator_ids=np.array([actuator_of_joint[j] for j in joint_ids], dtype=np.int64),
        num_pd_actuators=sum(not is_damping_compensation(model, a) for a in range(model.nu)),
        body_contact_adr=np.array([sensor_adr[f"contact/{n}"] for n in body_names], dtype=np.int64),
        prop_qpos_adr={n: int(model.jnt_qposadr[j]) for n, j in prop_joints.items()},
        prop_qvel_adr={n: int(model.jnt_dofadr[j]) for n, j in prop_joints.items()},
        prop_contact_adr={n: sensor_adr[f"contact/{n}"] for n in prop_names},
        prop_names=prop_names,
    )


def lowest_point_height(model: mujoco.MjModel, qpos: np.ndarray, body_ids) -> float:
    """Height of the lowest point of the geoms of MuJoCo bodies `body_ids` at `qpos` [nq].

    Exact for boxes, spheres and capsules (bounding sphere for other geom types). Used to place
    a pose on the floor: lower the root by this height and the lowest point touches z = 0.
    """
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    lowest = np.inf
    for g in np.flatnonzero(np.isin(model.geom_bodyid, body_ids)):
        size = model.geom_size[g]
        up = np.abs(data.geom_xmat[g].reshape(3, 3)[2])  # |world z| in the geom's axes
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX:
            extent = float(up @ size)
        elif model.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE:
            extent = size[0] + up[2] * size[1]
        else:
            extent = model.geom_rbound[g]
        lowest = min(lowest, data.geom_xpos[g, 2] - extent)
    return float(lowest)
