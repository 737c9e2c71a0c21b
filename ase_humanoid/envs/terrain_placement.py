"""Putting flat-ground reset states onto the terrain, as pure batched functions.

The reset states (reference clips, the standing pose, fall pools) are made for flat ground at
z = 0. On terrain each env's state is moved to its tile's spawn point (xy) and lifted by the
highest ground under any of its bodies, sampled at each body and `FOOTPRINT_RADIUS` around it,
so no body starts lower above its ground than it was above the plane (never inside a step or a
slope). The root-height entry (index 0) of the policy and AMP observations is measured from the
ground under the root, so observations precomputed for the plane are corrected by the lift
minus that ground height.
"""

from __future__ import annotations

import torch

FOOTPRINT_RADIUS = 0.12
"""Metres around each body origin where the ground is also sampled (a foot box's half length)."""

_RING = torch.tensor([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
_FOOTPRINT = _RING * FOOTPRINT_RADIUS  # [5, 2] metres


def terrain_placement(root_pos: torch.Tensor, body_pos: torch.Tensor, origins: torch.Tensor,
                      ground) -> tuple[torch.Tensor, torch.Tensor]:
    """Where reset states with root_pos `[n, 3]` and body_pos `[n, B, 3]` (made for the plane)
    go on the terrain, from one ground lookup (footprints and moved roots together):
    offsets `[n, 3]`: xy to the spawn points `origins [n, >= 2]` (their xy), z up by the highest ground under
    the bodies (each body and `FOOTPRINT_RADIUS` around it); correction `[n]`: what to add to the
    root-height observation of a moved state, the lift minus the ground under the moved root."""
    n, num_bodies = body_pos.shape[:2]
    shift_xy = origins[:, :2] - root_pos[:, :2]  # [n, 2]
    ring = _FOOTPRINT.to(body_pos.device, body_pos.dtype)  # [5, 2]
    footprint = ((body_pos[..., :2] + shift_xy[:, None]).unsqueeze(-2) + ring).reshape(n, num_bodies * len(ring), 2)
    # the moved root stands on its spawn point's xy
    heights = ground.height_at(torch.cat([footprint, origins[:, None, :2]], dim=1))  # [n, 5 B + 1]
    lift = heights[:, :-1].amax(dim=1)  # [n]
    return torch.cat([shift_xy, lift.unsqueeze(-1)], dim=-1), lift - heights[:, -1]


def highest_ground(ground, xy: torch.Tensor, radius: float) -> torch.Tensor:
    """`[...]` highest ground at points `xy [..., 2]` and 4 points `radius` metres around each."""
    ring = _RING.to(xy.device, xy.dtype) * radius  # [5, 2]
    return ground.height_at(xy.unsqueeze(-2) + ring).amax(dim=-1)


def with_root_height_above_ground(obs: torch.Tensor, root_pos: torch.Tensor, ground) -> torch.Tensor:
    """`obs [n, K]` whose entry 0 is the root's world height, with it measured from the ground
    under the root (`root_pos [n, 3]`) instead (a new tensor)."""
    return torch.cat([obs[:, :1] - ground.height_at(root_pos[:, :2]).unsqueeze(-1), obs[:, 1:]], dim=-1)


def body_heights_above_ground(body_pos: torch.Tensor, ground) -> torch.Tensor:
    """`[N, B]` height of each body origin above the ground under it (body_pos `[N, B, 3]`)."""
    return body_heights_above(body_pos, ground.height_at(body_pos[..., :2]))


def body_heights_above(body_pos: torch.Tensor, ground_heights: torch.Tensor) -> torch.Tensor:
    """`[N, B]` height of each body origin (body_pos `[N, B, 3]`) above `ground_heights [N, B]`,
    the ground under them when already looked up."""
    return body_pos[..., 2] - ground_heights


def next_terrain_levels(levels: torch.Tensor, fell: torch.Tensor, root_pos: torch.Tensor, origins: torch.Tensor,
                        min_distance: float, num_levels: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """legged_gym's curriculum rule for finished episodes: `levels [k]` + 1 where the env did not
    fall (`fell [k]` bool) and its root ended more than `min_distance` metres (xy) from its spawn
    point (`root_pos [k, 3]`, `origins [k, 3]`), - 1 where it fell (not below 0); an env that
    passes the last level restarts on a random one (so the hardest tiles stay populated)."""
    travelled = (root_pos[:, :2] - origins[:, :2]).norm(dim=-1)
    up = ~fell & (travelled > min_distance)
    moved = levels + up.long() - fell.long()
    random_levels = torch.randint(0, num_levels, levels.shape, device=levels.device, generator=generator)
    return torch.where(moved >= num_levels, random_levels, moved.clamp(min=0))
