"""Combine a humanoid MJCF with the shared world (assets/mjcf/scene.xml) and optional prop bodies.

The humanoid spec is the parent, so its options (timestep, integrator, solver), bodies, joints
and actuators keep their names and order; the world (floor, light) is attached under the prefix
`scene/` (the floor geom is `scene/floor`). Props become free bodies appended after the humanoid.
"""

from __future__ import annotations

from pathlib import Path

import mujoco

from ase_humanoid.errors import ModelError
from ase_humanoid.paths import ASSETS_DIR
from ase_humanoid.robots.description import RobotDescription

SCENE_MJCF = ASSETS_DIR / "mjcf" / "scene.xml"
SCENE_PREFIX = "scene/"
FLOOR_GEOM = SCENE_PREFIX + "floor"

_PROP_GEOM_TYPES = {
    "box": mujoco.mjtGeom.mjGEOM_BOX,
    "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
    "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE,
    "cylinder": mujoco.mjtGeom.mjGEOM_CYLINDER,
}


def build_scene_spec(robot_or_mjcf, props=(), scene_mjcf=SCENE_MJCF) -> mujoco.MjSpec:
    """MjSpec of floor + light + humanoid + one free body per prop; call `.compile()` for the model.

    `robot_or_mjcf`: a RobotDescription or an MJCF path. `props`: objects with the fields of
    `ase_humanoid.sim.base.PropSpec` (name, shape in box/sphere/capsule/cylinder, size (MuJoCo
    geom size), density, rgba, contype, conaffinity); each becomes body and geom `name` with a
    free joint `name`.
    """
    mjcf = robot_or_mjcf.mjcf_path if isinstance(robot_or_mjcf, RobotDescription) else Path(robot_or_mjcf)
    spec = _spec_from_file(mjcf)
    world = _spec_from_file(scene_mjcf)
    _copy_visual(world, spec)
    spec.attach(world, prefix=SCENE_PREFIX, frame=spec.worldbody.add_frame())
    for i, prop in enumerate(props):
        add_prop(spec, prop, pos=(2.0 + i, 0.0, 1.0))
    return spec


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
