"""Batched ground-height lookups in torch, on the env's device: what resets, terminations and the
height-scan observation read (never the simulator: one gather per query, no contacts needed).

`HeightMap(terrain, device).height_at(xy [..., 2]) -> [...]` interpolates the heightfield
bilinearly (exact at the samples and on planes, e.g. slopes; between samples of uneven ground it
may differ from MuJoCo's triangulated surface by a fraction of the height step). Points outside
the heightfield take the nearest edge's height. `FlatGround` answers 0 everywhere (terrain=flat).
"""

from __future__ import annotations

import torch

from ase_humanoid.terrain.grid import Terrain


def bilinear_height(heights: torch.Tensor, origin: tuple[float, float], scale: float, xy: torch.Tensor) -> torch.Tensor:
    """Heights `[...]` at world points `xy [..., 2]` of the grid `heights [nx, ny]` whose sample
    (i, j) lies at `origin + (i, j) * scale` (origin: two floats); clamped to the grid's edges.

    Per point: low = h00 + (h10 - h00) wx, high = h01 + (h11 - h01) wx, low + (high - low) wy,
    with the four corners fetched in one `index_select`. The per-step callers (observations,
    fall heights, reset placement) pay per torch call, so the temporaries are reused in place."""
    nx, ny = heights.shape
    x, y = xy.unbind(-1)
    gx = ((x - float(origin[0])) / scale).clamp_(0.0, nx - 1)
    gy = ((y - float(origin[1])) / scale).clamp_(0.0, ny - 1)
    ix, iy = gx.floor().clamp_(max=nx - 2), gy.floor().clamp_(max=ny - 2)  # the cell's lower corner
    wx, wy = gx.sub_(ix), gy.sub_(iy)
    base = ix.long().mul_(ny).add_(iy.long()).unsqueeze_(-1)
    corners = torch.tensor([0, ny, 1, ny + 1], device=xy.device)  # (i, j), (i+1, j), (i, j+1), (i+1, j+1)
    h = heights.reshape(-1).index_select(0, (base + corners).view(-1)).view(base.shape[:-1] + (4,))
    h00, h10, h01, h11 = h.unbind(-1)
    low = ((h10 - h00) * wx).add_(h00)  # out of place first: wx may be of a wider dtype than heights
    high = ((h11 - h01) * wx).add_(h01)
    return (high - low).mul_(wy).add_(low)


class HeightMap:
    """The terrain's heights `[nx, ny]` on `device`, queried with `height_at`."""

    def __init__(self, terrain: Terrain, device="cpu"):
        self.terrain = terrain
        self.device = torch.device(device)
        self.heights = torch.as_tensor(terrain.heights, dtype=torch.float32, device=self.device)
        self.origin = (float(terrain.origin[0]), float(terrain.origin[1]))
        self.scale = float(terrain.horizontal_scale)

    is_flat = False

    def height_at(self, xy: torch.Tensor) -> torch.Tensor:
        """Ground heights `[...]` under world points `xy [..., 2]` (e.g. `[N, 2]` -> `[N]`)."""
        return bilinear_height(self.heights, self.origin, self.scale, xy)


class FlatGround:
    """MuJoCo's plane at z = 0: `height_at` is zero everywhere."""

    is_flat = True

    def __init__(self, device="cpu"):
        self.device = torch.device(device)

    def height_at(self, xy: torch.Tensor) -> torch.Tensor:
        return torch.zeros(xy.shape[:-1], dtype=xy.dtype, device=xy.device)


def height_scan_offsets(points: tuple[int, int], spacing: float, device="cpu") -> torch.Tensor:
    """`[P, 2]` (P = points[0] * points[1]) grid of scan points centred on the root, in the
    heading frame (x forward, y left), `spacing` metres apart; x varies slowest."""
    xs = (torch.arange(points[0], dtype=torch.float32) - (points[0] - 1) / 2) * spacing
    ys = (torch.arange(points[1], dtype=torch.float32) - (points[1] - 1) / 2) * spacing
    grid_x, grid_y = torch.meshgrid(xs, ys, indexing="ij")
    return torch.stack([grid_x, grid_y], dim=-1).reshape(-1, 2).to(device)


def height_scan(ground, root_pos: torch.Tensor, heading: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    """Root height above the ground at each scan point: `[N, P]` = root z - ground height at
    root xy + R(heading) offsets. root_pos `[N, 3]`, heading `[N]` (yaw), offsets `[P, 2]`."""
    cos, sin = torch.cos(heading).unsqueeze(-1), torch.sin(heading).unsqueeze(-1)  # [N, 1]
    x = root_pos[:, :1] + cos * offsets[:, 0] - sin * offsets[:, 1]  # [N, P]
    y = root_pos[:, 1:2] + sin * offsets[:, 0] + cos * offsets[:, 1]
    return root_pos[:, 2:3] - ground.height_at(torch.stack([x, y], dim=-1))
