"""A Terrain as a MuJoCo heightfield: an `hfield` asset and one static geom in an MjSpec.

Both simulator backends build their model through `ase_humanoid.robots.scene.build_scene_spec`,
which calls `add_heightfield` in place of the floor plane, so native MuJoCo and MuJoCo Warp
collide with the same surface. MuJoCo stores elevations normalised to [0, 1] times the
hfield's `size[2]`, with rows along y and columns along x (our `heights[i, j]` is x-major, so
the data is its transpose); the geom sits at the lowest height, centred on the grid.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ase_humanoid.terrain.grid import Terrain

HFIELD_NAME = "terrain"
HFIELD_BASE_DEPTH = 1.0  # metres of solid below the lowest point (MuJoCo's hfield size[3])
MIN_ELEVATION_RANGE = 1e-4  # MuJoCo needs size[2] > 0, even for a flat field


def heightfield_layout(terrain: Terrain) -> tuple[list[float], list[float], np.ndarray]:
    """(hfield size [4], geom position [3], normalised elevations [ny * nx], row-major along y)."""
    heights = terrain.heights.astype(np.float64)
    nx, ny = heights.shape
    low, high = float(heights.min()), float(heights.max())
    span = max(high - low, MIN_ELEVATION_RANGE)
    half_x, half_y = (nx - 1) * terrain.horizontal_scale / 2, (ny - 1) * terrain.horizontal_scale / 2
    size = [half_x, half_y, span, HFIELD_BASE_DEPTH]
    pos = [terrain.origin[0] + half_x, terrain.origin[1] + half_y, low]
    data = ((heights - low) / span).T.reshape(-1)
    return size, pos, data


def add_heightfield(spec: mujoco.MjSpec, terrain: Terrain, friction=(1.0, 0.005, 0.0001),
                    material: str | None = None) -> mujoco.MjsGeom:
    """Add `terrain` to the world of `spec` as hfield asset + geom `HFIELD_NAME`; returns the geom."""
    nx, ny = terrain.heights.shape
    size, pos, data = heightfield_layout(terrain)
    field = spec.add_hfield(name=HFIELD_NAME, nrow=ny, ncol=nx, size=size)
    field.userdata = data.tolist()
    geom = spec.worldbody.add_geom(
        name=HFIELD_NAME, type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname=HFIELD_NAME, pos=pos,
        friction=list(friction), condim=3, contype=1, conaffinity=1, rgba=[0.45, 0.5, 0.55, 1.0])
    if material is not None:
        geom.material = material
    return geom
