"""One tile's heights per kind, as pure numpy functions (legged_gym's kinds, humanoid-sized).

Every function returns heights `[n, n]` in metres for a square tile of `n` samples spaced
`scale` metres; sample (i, j) lies at (i * scale, j * scale) from the tile's corner, and the
tile's centre (where its envs spawn) at (n * scale / 2, n * scale / 2). `difficulty` in [0, 1]
scales each kind between its easy and its hard version. Random kinds take a numpy Generator.
Slopes and stairs are pyramids that meet their neighbours at height 0 on the tile's edge, with a
flat `platform` (metres) around the centre.
"""

from __future__ import annotations

import numpy as np


def lerp(a: float, b: float, t: float) -> float:
    return a + (b - a) * t


def tile_coordinates(n: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Sample positions relative to the tile's centre: x `[n, 1]`, y `[1, n]` (metres)."""
    offsets = np.arange(n) * scale - n * scale / 2
    return offsets[:, None], offsets[None, :]


def distance_to_platform_edge(n: int, scale: float, platform: float) -> np.ndarray:
    """`[n, n]` metres from the tile's edge inwards (Chebyshev), capped at the platform's edge,
    so it is 0 on the edge and constant over the central platform."""
    x, y = tile_coordinates(n, scale)
    half = n * scale / 2
    from_edge = half - np.maximum(np.abs(x), np.abs(y))
    return np.clip(from_edge, 0.0, max(half - platform / 2, 0.0))


def flat_tile(n: int) -> np.ndarray:
    return np.zeros((n, n))


def rough_tile(n: int, scale: float, difficulty: float, rng: np.random.Generator, amplitude: float,
               wavelength: float) -> np.ndarray:
    """Random heights, uniform in +-a (a from amplitude / 4 to amplitude), on knots `wavelength`
    metres apart, linearly interpolated between them (smooth enough for a foot to stand on)."""
    a = amplitude * lerp(0.25, 1.0, difficulty)
    knots = int(np.ceil(n * scale / wavelength)) + 1
    coarse = rng.uniform(-a, a, size=(knots, knots))
    return upsample_linear(coarse, n, n * scale / wavelength / n)


def upsample_linear(coarse: np.ndarray, n: int, knots_per_sample: float) -> np.ndarray:
    """Bilinear interpolation of `coarse [k, k]` knots at samples i * knots_per_sample -> `[n, n]`."""
    t = np.minimum(np.arange(n) * knots_per_sample, coarse.shape[0] - 1)
    i0 = np.minimum(t.astype(int), coarse.shape[0] - 2)
    w = t - i0
    rows = coarse[i0] * (1 - w)[:, None] + coarse[i0 + 1] * w[:, None]  # [n, k]
    return rows[:, i0] * (1 - w)[None, :] + rows[:, i0 + 1] * w[None, :]


def slope_tile(n: int, scale: float, difficulty: float, slope_max: float, platform: float,
               up: bool) -> np.ndarray:
    """Pyramid of slope `difficulty * slope_max`; `up`: the ground rises away from the centre
    (centre platform low), else it descends (centre platform high)."""
    rise = difficulty * slope_max * distance_to_platform_edge(n, scale, platform)
    return -rise if up else rise


def stairs_tile(n: int, scale: float, difficulty: float, step_height_max: float, step_width: float,
                platform: float, up: bool) -> np.ndarray:
    """Pyramid stairs, steps `step_width` deep and 0.03 .. step_height_max high; `up`: climbing
    away from the centre."""
    step_height = lerp(0.03, step_height_max, difficulty)
    steps = np.floor(distance_to_platform_edge(n, scale, platform) / step_width + 1e-9)
    heights = step_height * steps
    return -heights if up else heights


def stepping_stones_tile(n: int, scale: float, difficulty: float, rng: np.random.Generator,
                         stone_size_min: float, gap_max: float, pit_depth: float,
                         platform: float) -> np.ndarray:
    """Square stones (1.5 m down to `stone_size_min`) with gaps (0.05 m up to `gap_max`) over a pit
    `pit_depth` deep; stone tops vary by +-5 cm x difficulty; a flat platform at the centre."""
    size = lerp(1.5, stone_size_min, difficulty)
    gap = lerp(0.05, gap_max, difficulty)
    x, y = tile_coordinates(n, scale)
    pitch = size + gap
    # Position inside the stone pattern, with a random shift so stones do not line up across tiles.
    shift = rng.uniform(0.0, pitch, size=2)
    in_stone_x = np.mod(x + shift[0], pitch) < size  # [n, 1]
    in_stone_y = np.mod(y + shift[1], pitch) < size  # [1, n]
    cell_x = np.floor((x + shift[0]) / pitch).astype(int)
    cell_y = np.floor((y + shift[1]) / pitch).astype(int)
    cells = int(np.ceil(n * scale / pitch)) + 2
    tops = rng.uniform(-0.05, 0.05, size=(cells, cells)) * difficulty
    top = tops[cell_x - cell_x.min(), cell_y - cell_y.min()]  # [n, n]
    heights = np.where(in_stone_x & in_stone_y, top, -pit_depth)
    return with_platform(heights, x, y, platform)


def obstacles_tile(n: int, scale: float, difficulty: float, rng: np.random.Generator,
                   height_max: float, count: int, platform: float) -> np.ndarray:
    """`count` rectangular blocks 0.4 .. 1.2 m wide, each raised or sunk by h or h / 2 (h from
    0.03 to `height_max`), on flat ground; a flat platform at the centre."""
    h = lerp(0.03, height_max, difficulty)
    x, y = tile_coordinates(n, scale)
    half = n * scale / 2
    heights = np.zeros((n, n))
    centres = rng.uniform(-half, half, size=(count, 2))
    sizes = rng.uniform(0.4, 1.2, size=(count, 2))
    levels = rng.choice(np.array([-h, -h / 2, h / 2, h]), size=count)
    for (cx, cy), (sx, sy), level in zip(centres, sizes, levels):  # a few blocks per tile, at build time
        inside = (np.abs(x - cx) < sx / 2) & (np.abs(y - cy) < sy / 2)
        heights = np.where(inside, level, heights)
    return with_platform(heights, x, y, platform)


def with_platform(heights: np.ndarray, x: np.ndarray, y: np.ndarray, platform: float) -> np.ndarray:
    """`heights` with the central `platform`-wide square set to 0 (the spawn area)."""
    centre = (np.abs(x) < platform / 2) & (np.abs(y) < platform / 2)
    return np.where(centre, 0.0, heights)


def make_tile(kind: str, n: int, scale: float, difficulty: float, rng: np.random.Generator, cfg) -> np.ndarray:
    """Heights `[n, n]` of one tile of `kind` (a `TILE_KINDS` name) with the settings of `cfg`
    (a TerrainConfig)."""
    if kind == "flat":
        return flat_tile(n)
    if kind == "rough":
        return rough_tile(n, scale, difficulty, rng, cfg.rough_amplitude, cfg.rough_wavelength)
    if kind in ("slope_up", "slope_down"):
        return slope_tile(n, scale, difficulty, cfg.slope_max, cfg.platform_size, up=kind == "slope_up")
    if kind in ("stairs_up", "stairs_down"):
        return stairs_tile(n, scale, difficulty, cfg.step_height_max, cfg.step_width, cfg.platform_size,
                           up=kind == "stairs_up")
    if kind == "stepping_stones":
        return stepping_stones_tile(n, scale, difficulty, rng, cfg.stone_size_min, cfg.stone_gap_max,
                                    cfg.pit_depth, cfg.platform_size)
    if kind == "obstacles":
        return obstacles_tile(n, scale, difficulty, rng, cfg.obstacle_height_max, cfg.num_obstacles,
                              cfg.platform_size)
    raise ValueError(f"unknown tile kind {kind!r}")
