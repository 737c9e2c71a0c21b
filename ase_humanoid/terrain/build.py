"""The one entry point from a terrain config to a Terrain: a tile grid, a user's mesh, or none."""

from __future__ import annotations

from ase_humanoid.terrain.config import terrain_config
from ase_humanoid.terrain.grid import Terrain, generate_tile_grid
from ase_humanoid.terrain.mesh import terrain_from_mesh_file


def build_terrain(cfg) -> Terrain | None:
    """The Terrain of a TerrainConfig (or a mapping of its keys); None for `flat` (MuJoCo's plane)."""
    cfg = terrain_config(cfg)
    if cfg.is_flat:
        return None
    if cfg.name == "mesh":
        return terrain_from_mesh_file(cfg.mesh_file, cfg)
    return generate_tile_grid(cfg)
