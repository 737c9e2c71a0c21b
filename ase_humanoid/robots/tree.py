"""The kinematic tree's index structure, shared by both kinematics modules.

`kinematics.py` (general forward/inverse kinematics) and `articulation.py` (the one-pass hot path)
both walk the tree by depth level and index joint-local arrays; the helpers for that live here,
owned by neither, so the two modules never import each other's private parts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from ase_humanoid.robots.description import RobotDescription


@dataclass(frozen=True)
class TreeLevels:
    """A kinematic tree grouped by depth, so that all bodies of one depth are handled by one set
    of tensor ops (5 levels instead of 14 single bodies for the AMP humanoid).

    Internally the kinematics works "body-major" in *level order*: tensors `[B, n, k]` whose
    rows are the bodies sorted by depth, so each level is a contiguous block of rows and
    gathering the parents of a level is a cheap row copy (`index_select` on dim 0).

    order        [B] body ids in level order (level 0 = the root alone)
    level_rows   per level (start, stop) rows in level order
    parent_rows  per level l >= 1: [L_l] row of each body's parent within level l - 1, or None
                 when level l - 1 is a single body (the parent then broadcasts, no gather)
    body_slots   [B] row of each body in level order (inverse of `order`)
    """

    order: torch.Tensor
    level_rows: tuple
    parent_rows: tuple
    body_slots: torch.Tensor


@functools.lru_cache(maxsize=64)
def _tree_levels_cached(parents: tuple, device: str) -> TreeLevels:
    depth = []
    for b, p in enumerate(parents):
        if b == 0:
            if p != -1:
                raise ValueError(f"parent_indices[0] must be -1 (the root), got {p}")
        elif not 0 <= p < b:
            raise ValueError(f"parent_indices[{b}] = {p}: parents must come before their children")
        depth.append(0 if b == 0 else depth[p] + 1)
    levels = [[b for b in range(len(parents)) if depth[b] == d] for d in range(max(depth) + 1)]
    order = [b for level in levels for b in level]
    row_in_level = {b: i for level in levels for i, b in enumerate(level)}
    starts = [0]
    for level in levels:
        starts.append(starts[-1] + len(level))
    long = functools.partial(torch.tensor, dtype=torch.long, device=device)
    return TreeLevels(
        order=long(order),
        level_rows=tuple(zip(starts[:-1], starts[1:])),
        parent_rows=tuple(None if len(above) == 1 else long([row_in_level[parents[b]] for b in level])
                          for above, level in zip(levels[:-1], levels[1:])),
        body_slots=long(order).argsort(),
    )


def tree_levels(parent_indices, device=None) -> TreeLevels:
    """The depth levels of the tree `parent_indices [B]` (cached per tree and device)."""
    parents = tuple(int(p) for p in torch.as_tensor(parent_indices).tolist())
    return _tree_levels_cached(parents, str(torch.device("cpu" if device is None else device)))


def joint_rows(robot: RobotDescription, bodies, device) -> torch.Tensor:
    """[len(bodies)] for each body, its row in the joint-local arrays [no joint (0), spherical
    groups..., hinges...] (what `articulation.joint_local_rotations` returns)."""
    return joint_rows_from_ids(tuple(int(b) for b in bodies), tuple(robot.spherical_body_ids.tolist()),
                               tuple(robot.hinge_body_ids.tolist()), str(device))


@functools.lru_cache(maxsize=64)
def joint_rows_from_ids(bodies: tuple, spherical_bodies: tuple, hinge_bodies: tuple, device: str) -> torch.Tensor:
    """`joint_rows` from plain body-id tuples (hashable: cached per tree and device)."""
    row = {b: 1 + i for i, b in enumerate(spherical_bodies)}
    row.update({b: 1 + len(spherical_bodies) + i for i, b in enumerate(hinge_bodies)})
    return torch.tensor([row.get(b, 0) for b in bodies], dtype=torch.long, device=device)


def broadcast_lead(*tensors: torch.Tensor) -> torch.Size:
    """Broadcast shape of the tensors' leading dims (all but the last); fast when they agree."""
    lead = tensors[0].shape[:-1]
    if all(t.shape[:-1] == lead for t in tensors[1:]):
        return lead
    return torch.broadcast_shapes(*(t.shape[:-1] for t in tensors))
