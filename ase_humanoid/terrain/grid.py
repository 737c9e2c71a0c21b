"""A terrain as one heightfield: the tile grid built from a TerrainConfig, or a user's mesh.

`Terrain.heights [nx, ny]` (metres, float32): sample (i, j) lies at world
`(origin_x + i * horizontal_scale, origin_y + j * horizontal_scale)`. The tile grid puts tile
(row r, column c) at x in [r, r + 1) * tile_size, y in [c, c + 1) * tile_size, surrounded by a
flat border; rows are difficulty levels, columns cycle through the kinds by weight.
`tile_origins [rows, cols, 3]` are the spawn points (tile centres, on the surface).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ase_humanoid.terrain.config import TerrainConfig
from ase_humanoid.terrain.tiles import lerp, make_tile


@dataclass
class Terrain:
    """A heightfield and the tiles laid out on it (see the module docstring)."""

    heights: np.ndarray  # [nx, ny] float32 metres
    horizontal_scale: float  # metres between samples
    origin: tuple[float, float]  # world xy of heights[0, 0]
    tile_origins: np.ndarray  # [rows, cols, 3] spawn point of each tile (world)
    tile_kinds: np.ndarray  # [rows, cols] str: the TILE_KINDS name ("mesh" for a mesh)
    tile_difficulty: np.ndarray  # [rows, cols] in [0, 1]
    tile_size: float  # metres (a mesh: its larger extent)
    name: str = "rough"  # the TerrainConfig name it was built from

    @property
    def num_rows(self) -> int:
        return self.tile_origins.shape[0]

    @property
    def num_cols(self) -> int:
        return self.tile_origins.shape[1]

    @property
    def extent(self) -> tuple[float, float]:
        """Metres covered along x and y."""
        nx, ny = self.heights.shape
        return (nx - 1) * self.horizontal_scale, (ny - 1) * self.horizontal_scale

    def sample_positions(self) -> tuple[np.ndarray, np.ndarray]:
        """World x `[nx]` and y `[ny]` of the samples."""
        nx, ny = self.heights.shape
        return (self.origin[0] + np.arange(nx) * self.horizontal_scale,
                self.origin[1] + np.arange(ny) * self.horizontal_scale)


def kind_of_columns(num_cols: int, kinds: list[str], weights: list[float]) -> list[str]:
    """The kind of each column: column c takes the kind whose share of the cumulative weights
    holds (c + 0.5) / num_cols (legged_gym's deterministic proportions)."""
    cumulative = np.cumsum(np.asarray(weights, dtype=float))
    cumulative /= cumulative[-1]
    picks = np.searchsorted(cumulative, (np.arange(num_cols) + 0.5) / num_cols, side="right")
    return [kinds[min(int(p), len(kinds) - 1)] for p in picks]


def row_difficulties(num_rows: int, low: float, high: float) -> np.ndarray:
    """`[num_rows]` difficulty of each level, evenly from `low` (row 0) to `high` (last row)."""
    if num_rows == 1:
        return np.array([high])
    return np.array([lerp(low, high, r / (num_rows - 1)) for r in range(num_rows)])


def generate_tile_grid(cfg: TerrainConfig) -> Terrain:
    """The tile grid of `cfg` (rough / mixed), seeded by `cfg.seed`: each tile draws from its own
    generator seeded by (seed, row, column), so a tile is the same whatever the grid size."""
    scale = cfg.horizontal_scale
    n = int(round(cfg.tile_size / scale))
    border = int(round(cfg.border_size / scale))
    tile = n * scale  # the tile size the samples can express
    heights = np.zeros((2 * border + cfg.num_rows * n + 1, 2 * border + cfg.num_cols * n + 1))
    column_kinds = kind_of_columns(cfg.num_cols, list(cfg.kinds), list(cfg.kind_weights))
    difficulty = row_difficulties(cfg.num_rows, cfg.difficulty_min, cfg.difficulty_max)
    tile_kinds = np.empty((cfg.num_rows, cfg.num_cols), dtype=object)
    origins = np.zeros((cfg.num_rows, cfg.num_cols, 3))
    for r in range(cfg.num_rows):  # build time only: one numpy tile per iteration
        for c in range(cfg.num_cols):
            rng = np.random.default_rng([cfg.seed, r, c])
            block = make_tile(column_kinds[c], n, scale, float(difficulty[r]), rng, cfg)
            i0, j0 = border + r * n, border + c * n
            heights[i0:i0 + n, j0:j0 + n] = block
            tile_kinds[r, c] = column_kinds[c]
            origins[r, c] = ((r + 0.5) * tile, (c + 0.5) * tile, block[n // 2, n // 2])
    return Terrain(
        heights=heights.astype(np.float32),
        horizontal_scale=scale,
        origin=(-border * scale, -border * scale),
        tile_origins=origins,
        tile_kinds=tile_kinds.astype(str),
        tile_difficulty=np.repeat(difficulty[:, None], cfg.num_cols, axis=1),
        tile_size=tile,
        name=cfg.name,
    )
