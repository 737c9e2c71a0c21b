"""Combine a humanoid MJCF with the shared world (assets/mjcf/scene.xml) and optional prop bodies.

The humanoid spec is the parent, so its options (timestep, integrator, solver), bodies, joints
and actuators keep their names and order; the world (floor, light) is attached under the prefix
`scene/` (the floor geom is `scene/floor`). Props become free bodies appended after the humanoid.
With a terrain (`ase_humanoid.terrain.Terrain`), its heightfield replaces the floor plane.
A RobotDescription with `pd_damping="drive"` gets its joint damping moved into its position
actuators' velocity gain (see `move_damping_into_actuators`); with "drive_implicit" the damping
is split across the clamp instead (see `split_damping_across_clamp`).
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np

from ase_humanoid.errors import ModelError
from ase_humanoid.paths import ASSETS_DIR
from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.terrain.mujoco_hfield import add_heightfield

SCENE_MJCF = ASSETS_DIR / "mjcf" / "scene.xml"
SCENE_PREFIX = "scene/"
FLOOR_GEOM = SCENE_PREFIX + "floor"

_PROP_GEOM_TYPES = {
    "box": mujoco.mjtGeom.mjGEOM_BOX,
    "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
    "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE,
    "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
}


def build_scene_spec(robot_or_mjcf, props=(), scene_mjcf=SCENE_MJCF, terrain=None) -> mujoco.MjSpec:
    """MjSpec of floor + light + humanoid + one free body per prop; call `.compile()` for the model.

    `terrain`: None keeps the floor plane; a Terrain replaces it by its heightfield (geom
    `terrain`, same friction and material).

    `robot_or_mjcf`: a RobotDescription or an MJCF path. `props`: objects with the fields of
    `ase_humanoid.sim.base.PropSpec` (name, shape in box/sphere/capsule/cylinder, size (MuJoCo
    geom size), density, rgba, contype, conaffinity); each becomes body and geom `name` with a
    free joint `name`.
    """
    is_robot = isinstance(robot_or_mjcf, RobotDescription)
    mjcf = robot_or_mjcf.mjcf_path if is_robot else Path(robot_or_mjcf)
    spec = _spec_from_file(mjcf)
    if is_robot:
        apply_pd_damping(spec, robot_or_mjcf.pd_damping)
    world = _spec_from_file(scene_mjcf)
    _copy_visual(world, spec)
    spec.attach(world, prefix=SCENE_PREFIX, frame=spec.worldbody.add_frame())
    if terrain is not None:
        _replace_floor(spec, terrain)
    for i, prop in enumerate(props):
        add_prop(spec, prop, pos=(2.0 + i, 0.0, 1.0))
    return spec


def apply_pd_damping(spec: mujoco.MjSpec, pd_damping: str) -> None:
    """Put the humanoid's PD damping where `pd_damping` (robot.pd_damping) says: "joint" leaves
    the MJCF as it is, "drive" and "drive_implicit" rewrite its actuators (below)."""
    if pd_damping == "drive":
        move_damping_into_actuators(spec)
    elif pd_damping == "drive_implicit":
        split_damping_across_clamp(spec)


def move_damping_into_actuators(spec: mujoco.MjSpec) -> None:
    """Move each actuated hinge's joint damping kd into its position actuator (bias velocity
    term -kd, i.e. kv = kd), so the actuator's force limit clamps kp (target - q) - kd qdot
    together, as the ASE release's PD drive does, instead of clamping the kp term alone and
    damping outside the clamp. kd (RobotDescription.kd) is the same either way. MuJoCo's
    implicitfast integrator treats kv implicitly while the actuator is not saturated."""
    joints = {j.name: j for j in spec.joints}
    for act in spec.actuators:
        joint = joints.get(act.target)
        if joint is None or joint.type != mujoco.mjtJoint.mjJNT_HINGE:
            continue
        damping = np.array(joint.damping, dtype=float)
        bias = np.array(act.biasprm, dtype=float)
        bias[2] -= damping[0]
        damping[0] = 0.0
        act.biasprm = bias
        joint.damping = damping


# Suffix of the extra actuators `split_damping_across_clamp` adds; they take no PD target.
DAMPING_COMPENSATION_SUFFIX = "_kd_compensation"


def split_damping_across_clamp(spec: mujoco.MjSpec) -> None:
    """The release's PD drive, torque = clip(kp (target - q) - kd qdot, -effort, effort), in a
    form MuJoCo steps stably at 1/120 s. Each actuated hinge keeps kd as joint damping, which the
    Euler integrator treats implicitly, and gets (1) its position actuator's velocity gain kv = kd,
    inside the effort clamp, and (2) an unclamped actuator adding +kd qdot, appended after the
    position actuators (name + DAMPING_COMPENSATION_SUFFIX, control held at 0). Both are explicit
    in Euler (which, unlike implicitfast, leaves actuator velocity terms out of its implicit
    step), so per step the hinge gets kp e - kd qdot_next below the limit (the joint law, as
    stable) and +-effort + kd (qdot - qdot_next) at it: no longer the joint law's speed cap of
    effort / kd (knee 3 rad/s; the walk clip's knees reach 12-14 rad/s), and no chatter between
    the limits, which "drive" shows at this step (kd dt / inertia > 2 for many joints)."""
    joints = {j.name: j for j in spec.joints}
    for act in list(spec.actuators):
        joint = joints.get(act.target)
        if joint is None or joint.type != mujoco.mjtJoint.mjJNT_HINGE:
            continue
        kd = float(joint.damping[0])
        bias = np.array(act.biasprm, dtype=float)
        bias[2] -= kd
        act.biasprm = bias
        compensation = spec.add_actuator(name=act.name + DAMPING_COMPENSATION_SUFFIX, target=act.target,
                                         trntype=mujoco.mjtTrn.mjTRN_JOINT)
        compensation.gaintype = mujoco.mjtGain.mjGAIN_FIXED
        compensation.gainprm = np.eye(10)[0]  # force = ctrl + kd qdot; ctrl stays 0 (a zero gain
        compensation.biastype = mujoco.mjtBias.mjBIAS_AFFINE  # made MuJoCo drop the bias term)
        compensation.biasprm = kd * np.eye(10)[2]
        compensation.ctrllimited = 0
        compensation.forcelimited = 0
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_EULER


def is_damping_compensation(model: mujoco.MjModel, actuator_id: int) -> bool:
    """Whether actuator `actuator_id` is one of `split_damping_across_clamp`'s (no PD target)."""
    return model.actuator(actuator_id).name.endswith(DAMPING_COMPENSATION_SUFFIX)


def add_prop(spec: mujoco.MjSpec, prop, pos=(0.0, 0.0, 1.0)) -> mujoco.MjsBody:
    """Append a free body for `prop` (PropSpec fields) to the world of `spec`."""
    if prop.shape not in _PROP_GEOM_TYPES:
        raise ModelError(f"prop '{prop.name}': unknown shape '{prop.shape}'; valid: {', '.join(_PROP_GEOM_TYPES)}")
    body = spec.worldbody.add_body(name=prop.name, pos=list(pos))
    body.add_freejoint(name=prop.name)
    size = list(prop.size) + [0.0] * (3 - len(prop.size))
    contype = int(getattr(prop, "contype", 1))
    conaffinity = int(getattr(prop, "conaffinity", contype))
    body.add_geom(
        name=prop.name,
        type=_PROP_GEOM_TYPES[prop.shape],
        size=size,
        density=float(prop.density),
        rgba=list(getattr(prop, "rgba", (0.8, 0.3, 0.3, 1.0))),
        contype=contype,
        conaffinity=conaffinity,
    )
    return body


def _replace_floor(spec: mujoco.MjSpec, terrain) -> None:
    floor = spec.geom(FLOOR_GEOM)
    friction, material = list(floor.friction), floor.material or None
    spec.delete(floor)
    add_heightfield(spec, terrain, friction=friction, material=material)


def _spec_from_file(path) -> mujoco.MjSpec:
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"MJCF file not found: {path}")
    try:
        return mujoco.MjSpec.from_file(str(path))
    except ValueError as exc:
        raise ModelError(f"{path}: MuJoCo could not load the MJCF: {exc}") from exc


def _copy_visual(src: mujoco.MjSpec, dst: mujoco.MjSpec) -> None:
    # Attaching keeps only the parent's <visual>; take the scene's headlight and offscreen size.
    for attr in ("ambient", "diffuse", "specular"):
        setattr(dst.visual.headlight, attr, getattr(src.visual.headlight, attr))
    dst.visual.global_.offwidth = src.visual.global_.offwidth
    dst.visual.global_.offheight = src.visual.global_.offheight
