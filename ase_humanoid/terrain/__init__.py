"""Terrain: a tile grid of generated kinds and difficulty levels, or a user's mesh, as one
heightfield shared by every world (MuJoCo hfield on both backends) and by the envs (torch
height lookups for resets, terminations and the height-scan observation).

`build_terrain(cfg)` -> `Terrain` (None for flat ground, MuJoCo's plane);
`HeightMap(terrain, device).height_at(xy [N, 2]) -> [N]`; `add_heightfield(spec, terrain)`.
"""

from ase_humanoid.terrain.config import TERRAIN_NAMES, TILE_KINDS, TerrainConfig, terrain_config
from ase_humanoid.terrain.build import build_terrain
from ase_humanoid.terrain.grid import Terrain, generate_tile_grid
from ase_humanoid.terrain.heights import FlatGround, HeightMap, bilinear_height, height_scan, height_scan_offsets

__all__ = ["TERRAIN_NAMES", "TILE_KINDS", "FlatGround", "HeightMap", "Terrain", "TerrainConfig", "bilinear_height",
           "build_terrain", "generate_tile_grid", "height_scan", "height_scan_offsets", "terrain_config"]
