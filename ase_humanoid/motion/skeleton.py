"""A kinematic tree of named joints with fixed bone offsets: the skeleton a motion clip animates.

Joint j sits at `local_translation[j]` in the frame of its parent; the root comes first and every
parent precedes its children, so forward kinematics is one pass in index order. The root's own
`local_translation` is kept (file formats store it) but forward kinematics places the root at the
clip's root translation instead.
"""

from __future__ import annotations

from typing import Sequence

import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.robots.kinematics import forward_kinematics


class Skeleton:
    """`node_names` [J], `parent_indices` [J] (-1 for the root), `local_translation` [J, 3].

    Raises MotionFileError when the arrays disagree in size, the root is not joint 0, a parent
    does not precede its child, names repeat, or an offset is not finite.
    """

    def __init__(self, node_names: Sequence[str], parent_indices, local_translation):
        names = [str(n) for n in node_names]
        parents = torch.as_tensor(parent_indices).to(torch.long).reshape(-1) if len(names) else None
        offsets = torch.as_tensor(local_translation)
        if not offsets.is_floating_point():
            offsets = offsets.to(torch.float32)
        _validate_tree(names, parents, offsets)
        self.node_names: list[str] = names
        self.parent_indices: torch.Tensor = parents
        self.local_translation: torch.Tensor = offsets

    @property
    def num_joints(self) -> int:
        return len(self.node_names)

    def index(self, name: str) -> int:
        """Index of joint `name`; MotionFileError listing the joints when there is none."""
        try:
            return self.node_names.index(name)
        except ValueError:
            raise MotionFileError(f"skeleton has no joint {name!r}; joints: {self.node_names}") from None

    def children(self, index: int) -> list[int]:
        return [j for j, p in enumerate(self.parent_indices.tolist()) if p == index]

    def to(self, device=None, dtype=None) -> "Skeleton":
        """A copy with the offsets on `device` / in `dtype` (parents stay long)."""
        return Skeleton(
            self.node_names,
            self.parent_indices.to(device=device),
            self.local_translation.to(device=device, dtype=dtype or self.local_translation.dtype),
        )

    def forward_kinematics(
        self, local_rotation: torch.Tensor, root_translation: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """World joint poses.

        local_rotation [..., J, 4] (joint 0 holds the root's world rotation), root_translation
        [..., 3] -> (positions [..., J, 3], rotations [..., J, 4]).
        """
        identity = torch.zeros(*local_rotation.shape[:-2], 4, dtype=local_rotation.dtype, device=local_rotation.device)
        identity[..., 3] = 1.0
        return forward_kinematics(
            self.parent_indices, self.local_translation, local_rotation, root_translation, identity
        )

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Skeleton)
            and self.node_names == other.node_names
            and torch.equal(self.parent_indices.cpu(), other.parent_indices.cpu())
            and self.local_translation.dtype == other.local_translation.dtype
            and torch.equal(self.local_translation.cpu(), other.local_translation.cpu())
        )

    def __repr__(self) -> str:
        return f"Skeleton({self.num_joints} joints, root {self.node_names[0]!r})"


def _validate_tree(names: list[str], parents: torch.Tensor | None, offsets: torch.Tensor) -> None:
    num = len(names)
    if num == 0:
        raise MotionFileError("skeleton has no joints")
    if len(set(names)) != num:
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise MotionFileError(f"skeleton joint names repeat: {repeated}")
    if parents.shape != (num,):
        raise MotionFileError(f"skeleton parent_indices has shape {tuple(parents.shape)}, expected ({num},) to match node_names")
    if tuple(offsets.shape) != (num, 3):
        raise MotionFileError(f"skeleton local_translation has shape {tuple(offsets.shape)}, expected ({num}, 3)")
    if int(parents[0]) != -1:
        raise MotionFileError(f"skeleton root {names[0]!r} must come first with parent -1, got parent {int(parents[0])}")
    for j in range(1, num):
        p = int(parents[j])
        if not 0 <= p < j:
            raise MotionFileError(
                f"skeleton joint {names[j]!r} (index {j}) has parent index {p}; parents must precede their children"
            )
    if not torch.isfinite(offsets).all():
        raise MotionFileError("skeleton local_translation contains NaN or inf")
