"""Ground alignment: one constant height offset per clip, from the humanoid's collision geoms
(lowest surface point) or its body origins (as the ASE release did)."""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
import torch

from ase_humanoid.errors import ModelError
from ase_humanoid.motion.retarget_config import RetargetConfig
from ase_humanoid.robots.description import RobotDescription, load_mjcf
from ase_humanoid.utils import rotations as rot


@dataclass
class GeomSet:
    """Collision geoms of a humanoid, per geom: body index [G], type names, size [G, 3],
    position [G, 3] and rotation [G, 4] (xyzw) in the body frame."""

    body: torch.Tensor
    kind: list[str]
    size: torch.Tensor
    pos: torch.Tensor
    quat: torch.Tensor


_GEOM_KIND = {
    int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
    int(mujoco.mjtGeom.mjGEOM_BOX): "box",
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): "cylinder",
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): "ellipsoid",
}


def robot_geoms(robot: RobotDescription) -> GeomSet:
    """The collision geoms of the robot's MJCF (ModelError for a geom type it cannot bound)."""
    model = load_mjcf(robot.mjcf_path)
    body, kind, size, pos, quat = [], [], [], [], []
    for gid in range(model.ngeom):
        b = int(model.geom_bodyid[gid]) - 1
        if b < 0:
            continue
        gtype = int(model.geom_type[gid])
        if gtype not in _GEOM_KIND:
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, gid)
            raise ModelError(f"{robot.mjcf_path}: geom '{name}' has a type ({gtype}) the ground alignment cannot bound")
        body.append(b)
        kind.append(_GEOM_KIND[gtype])
        size.append(model.geom_size[gid].copy())
        pos.append(model.geom_pos[gid].copy())
        w, x, y, z = model.geom_quat[gid]
        quat.append([x, y, z, w])
    f64 = lambda x: torch.tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731
    return GeomSet(torch.tensor(body, dtype=torch.long), kind, f64(size), f64(pos), f64(quat))


def lowest_geom_height(geoms: GeomSet, body_pos: torch.Tensor, body_rot: torch.Tensor) -> torch.Tensor:
    """Height [T] of the lowest collision-geom surface point in each frame.

    body_pos [T, B, 3], body_rot [T, B, 4]. Exact for spheres, capsules, boxes and cylinders;
    ellipsoids are bounded by their largest semi-axis.
    """
    body_pos, body_rot = body_pos.double(), body_rot.double()
    lows = []
    for k, kind in enumerate(geoms.kind):
        b = int(geoms.body[k])
        q = rot.quat_mul(body_rot[:, b], geoms.quat[k].expand(body_rot.shape[0], 4))
        center_z = (body_pos[:, b] + rot.quat_rotate(body_rot[:, b], geoms.pos[k].expand(body_pos.shape[0], 3)))[:, 2]
        size = geoms.size[k]
        # Row 2 of the geom's rotation matrix: the world-z components of its local axes.
        zrow = rot.quat_to_matrix(q)[:, 2, :]  # [T, 3]
        if kind in ("sphere", "ellipsoid"):
            low = center_z - size[:3].max() if kind == "ellipsoid" else center_z - size[0]
        elif kind == "capsule":
            low = center_z - zrow[:, 2].abs() * size[1] - size[0]
        elif kind == "box":
            low = center_z - (zrow.abs() * size[:3]).sum(-1)
        else:  # cylinder: axis z, radius size[0], half-height size[1]
            low = center_z - zrow[:, 2].abs() * size[1] - size[0] * (1 - zrow[:, 2] ** 2).clamp_min(0).sqrt()
        lows.append(low)
    return torch.stack(lows, dim=-1).min(dim=-1).values


def ground_shift(robot, config: RetargetConfig, body_pos, body_rot, geoms: GeomSet | None = None) -> float:
    """Constant height (m) to add to the root so the clip's lowest point sits at root_height_offset."""
    if config.ground == "none":
        return float(config.root_height_offset)
    if config.ground == "origins":
        lowest = body_pos[..., 2].min()
    else:
        lowest = lowest_geom_height(geoms if geoms is not None else robot_geoms(robot), body_pos, body_rot).min()
    return float(config.root_height_offset - lowest)
