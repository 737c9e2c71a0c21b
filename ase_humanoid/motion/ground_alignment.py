"""Ground alignment: the height offset that puts a clip on the floor, from the humanoid's
collision geoms (lowest surface point) or its body origins (as the ASE release did): one
constant per clip, or ("track") one per frame following a capture floor that is not level.
"""

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


# "track": the floor under a take is followed over this long a window (s): long enough that
# every window holds a foot on the ground (a run's flight phase lasts about 0.15 s, a hop 0.5 s),
# short enough to follow a capture floor tilted by a degree or two over a few metres.
TRACK_WINDOW_S = 1.0


def ground_shift(robot, config: RetargetConfig, body_pos, body_rot, geoms: GeomSet | None = None,
                 fps: float | None = None) -> torch.Tensor:
    """Height (m) [T] to add to the root in each frame so the clip's lowest point sits at
    root_height_offset: the same in every frame, except for ground="track" (needs `fps`), where
    the floor is the lowest point's running minimum over TRACK_WINDOW_S, smoothed over the same
    window (a take whose floor drifts by 10 cm keeps its feet on the ground throughout)."""
    frames = body_pos.shape[0]
    if config.ground == "none":
        return torch.full((frames,), float(config.root_height_offset), dtype=torch.float64)
    if config.ground == "origins":
        lowest = body_pos[..., 2].double().min(dim=-1).values
    else:
        lowest = lowest_geom_height(geoms if geoms is not None else robot_geoms(robot), body_pos, body_rot)
    if config.ground != "track":
        return torch.full((frames,), float(config.root_height_offset - lowest.min()), dtype=torch.float64)
    if not fps or fps <= 0:
        raise ModelError("ground='track' needs the clip's frame rate")
    half = max(1, round(TRACK_WINDOW_S * fps / 2))
    floor = _sliding(lowest, half).min(dim=-1).values
    floor = _sliding(floor, half).mean(dim=-1)
    return config.root_height_offset - floor


def _sliding(x: torch.Tensor, half: int) -> torch.Tensor:
    """[T] -> [T, 2 half + 1]: each frame's centred window, the ends padded with the end values."""
    padded = torch.cat([x[:1].expand(half), x, x[-1:].expand(half)])
    return padded.unfold(0, 2 * half + 1, 1)
