"""Terrain settings (`cfg/terrain/*.yaml`, the `terrain.*` keys) as a validated dataclass.

`TerrainConfig.name` says what is built: `flat` (MuJoCo's plane, no heightfield: every flat-ground
result stays as it was), `rough` / `mixed` (a grid of generated tiles, kinds drawn by `kinds` /
`kind_weights`), `mesh` (a user's OBJ/STL/PLY/GLB file turned into a heightfield).

The tile grid follows legged_gym: `num_rows` rows along x are difficulty levels (row 0 easiest,
`difficulty_min`, the last row `difficulty_max`), `num_cols` columns along y share the rows'
difficulty and cycle through the kinds in proportion to their weights.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from ase_humanoid.errors import ConfigError
from ase_humanoid.utils.checks import SEED_RANGE
from ase_humanoid.utils.typed_config import check_finite_floats, config_from_mapping

TERRAIN_NAMES = ("flat", "rough", "mixed", "mesh")
TILE_KINDS = ("flat", "rough", "slope_up", "slope_down", "stairs_up", "stairs_down", "stepping_stones",
              "obstacles")
"""Tile kinds. `*_up`: the ground rises away from the tile's centre (the spawn point), so a
character leaving the centre climbs; `*_down`: it descends."""

MAX_HEIGHTFIELD_SAMPLES = 16_000_000
"""Largest heightfield (samples) a config may ask for: 4000 x 4000, 64 MB of float32 per copy."""

# Bounds on the integer counts: a typo such as num_obstacles=100000000 must be an error, not a
# build that loops for hours over every tile (or an allocation that fills the memory).
MAX_TILES_PER_SIDE = 1000  # rows or columns; the heightfield limit above caps their product too
MAX_OBSTACLES_PER_TILE = 1000  # blocks 0.4 .. 1.2 m wide: ~100 already cover an 8 m tile
MAX_MESH_FACES = 50_000_000  # the ray casting holds over 100 bytes per triangle: several GB here
INTEGER_RANGES = {
    "seed": SEED_RANGE,  # numpy's generators take no negative seed; the range train.py's seed has
    "num_rows": (1, MAX_TILES_PER_SIDE),
    "num_cols": (1, MAX_TILES_PER_SIDE),
    "num_obstacles": (0, MAX_OBSTACLES_PER_TILE),
    "max_mesh_faces": (1, MAX_MESH_FACES),
}
"""Valid range (both ends included) of each integer key but max_init_level (bounded by num_rows)."""


@dataclass
class TerrainConfig:
    """What terrain every world of a run stands on (see the module docstring)."""

    name: str = "flat"  # flat | rough | mixed | mesh
    seed: int = 0  # terrain generation only (the env has its own seed)
    tile_size: float = 8.0  # metres, square tiles
    num_rows: int = 10  # difficulty levels, along x
    num_cols: int = 10  # tiles per level, along y
    border_size: float = 4.0  # flat margin around the grid, metres
    horizontal_scale: float = 0.1  # metres between heightfield samples
    difficulty_min: float = 0.0  # row 0's difficulty, in [0, 1]
    difficulty_max: float = 1.0  # the last row's
    kinds: list[str] = dataclasses.field(default_factory=lambda: ["rough"])
    kind_weights: list[float] = dataclasses.field(default_factory=lambda: [1.0])
    platform_size: float = 2.0  # flat square around each tile's centre (spawn), metres
    # at difficulty 1 (each scales linearly from its difficulty-0 value):
    rough_amplitude: float = 0.08  # +- metres of random height (difficulty 0: a quarter of it)
    rough_wavelength: float = 0.5  # metres between random height knots
    slope_max: float = 0.4  # rise over run
    step_height_max: float = 0.2  # metres (difficulty 0: 0.03)
    step_width: float = 0.5  # metres
    stone_size_min: float = 0.5  # stepping stones' edge at difficulty 1 (1.5 m at 0)
    stone_gap_max: float = 0.3  # metres between stones (0.05 at 0)
    pit_depth: float = 0.5  # metres below the stones
    obstacle_height_max: float = 0.2  # discrete obstacles, +- metres (0.03 at 0)
    num_obstacles: int = 20  # per tile
    # mesh terrain
    mesh_file: str | None = None  # OBJ / STL / PLY / GLB, read with trimesh
    mesh_scale: float = 1.0  # the file's units -> metres
    mesh_up_axis: str = "z"  # z | y (GLB and many OBJ exports are y-up)
    max_mesh_faces: int = 2_000_000  # larger files are refused (a heightfield needs far fewer)
    # curriculum (legged_gym's rule: up a level after an episode that ends without a fall, down
    # after a fall)
    curriculum: bool = False
    max_init_level: int = 0  # envs start on levels 0 .. max_init_level (with curriculum)

    def validate(self) -> None:
        check_finite_floats(self, "terrain")
        _check(self.name in TERRAIN_NAMES, "name", f"{self.name!r} is not one of {list(TERRAIN_NAMES)}")
        for key in ("tile_size", "horizontal_scale", "mesh_scale", "step_width", "stone_size_min",
                    "rough_wavelength"):
            _check(getattr(self, key) > 0, key, f"must be > 0, got {getattr(self, key)}")
        for key in ("border_size", "platform_size", "rough_amplitude", "slope_max", "step_height_max",
                    "stone_gap_max", "pit_depth", "obstacle_height_max"):
            _check(getattr(self, key) >= 0, key, f"must be >= 0, got {getattr(self, key)}")
        for key, (low, high) in INTEGER_RANGES.items():
            value = getattr(self, key)
            _check(isinstance(value, int) and not isinstance(value, bool) and low <= value <= high, key,
                   f"must be an integer from {low} to {high}, got {value!r}")
        _check(0.0 <= self.difficulty_min <= self.difficulty_max <= 1.0, "difficulty_min",
               f"need 0 <= difficulty_min <= difficulty_max <= 1, got {self.difficulty_min}, {self.difficulty_max}")
        _check(self.tile_size >= 4 * self.horizontal_scale, "tile_size",
               f"{self.tile_size} m is under 4 heightfield samples of {self.horizontal_scale} m")
        unknown = [k for k in self.kinds if k not in TILE_KINDS]
        _check(not unknown and len(self.kinds) > 0, "kinds",
               f"{unknown or self.kinds} not valid; choose from {list(TILE_KINDS)}")
        _check(len(self.kind_weights) == len(self.kinds) and all(w >= 0 for w in self.kind_weights)
               and sum(self.kind_weights) > 0, "kind_weights",
               f"need one weight >= 0 per kind ({len(self.kinds)}), not all zero, got {self.kind_weights}")
        _check(self.mesh_up_axis in ("z", "y"), "mesh_up_axis", f"{self.mesh_up_axis!r} is not z or y")
        _check(0 <= self.max_init_level < self.num_rows, "max_init_level",
               f"must be in [0, num_rows - 1 = {self.num_rows - 1}], got {self.max_init_level}")
        if self.name == "mesh":
            _check(self.mesh_file is not None, "mesh_file", "terrain=mesh needs terrain.mesh_file=<OBJ/STL/PLY/GLB>")
        if self.name in ("rough", "mixed"):
            side = (self.num_rows * self.tile_size + 2 * self.border_size) / self.horizontal_scale
            across = (self.num_cols * self.tile_size + 2 * self.border_size) / self.horizontal_scale
            _check(side * across <= MAX_HEIGHTFIELD_SAMPLES, "num_rows",
                   f"the grid needs {side * across:,.0f} heightfield samples, more than "
                   f"{MAX_HEIGHTFIELD_SAMPLES:,}: fewer or smaller tiles, or a larger horizontal_scale")

    @property
    def is_flat(self) -> bool:
        """True for MuJoCo's plane: no heightfield, nothing in the envs changes."""
        return self.name == "flat"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"terrain config key '{key}': {message}")


def terrain_config(values: TerrainConfig | Mapping[str, Any] | None) -> TerrainConfig:
    """A validated TerrainConfig from a mapping (a Hydra node's container), a config, or None
    (flat). Unknown keys / wrong types raise ConfigError naming the key and the valid ones."""
    if isinstance(values, TerrainConfig):
        values.validate()
        return values
    return config_from_mapping(TerrainConfig, values, "terrain")
