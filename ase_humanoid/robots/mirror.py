"""Left-right mirror images of a humanoid's bodies and hinges.

The mirror is the reflection y -> -y (the sagittal plane of a character facing +x) with left and
right swapped. A vector v becomes M v with M = diag(1, -1, 1); a rotation R becomes M R M, and
a turn by theta about axis a becomes a turn by theta about -M a. So hinge d of a symmetric
humanoid maps onto its partner (left <-> right in its name, else itself) with the sign
dot(partner axis, -M a): for the x, y, z hinges of a ball joint -1, +1, -1.

Every quantity the envs produce (states, actions, observations) mirrors by a signed permutation
of its entries, `SignedPermutation`; the observation layouts build theirs in
`envs.observations`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from ase_humanoid.errors import ModelError

REFLECTION = (1.0, -1.0, 1.0)  # M: positions, linear velocities, rotation axes' images
PSEUDO_REFLECTION = (-1.0, 1.0, -1.0)  # -M: angular velocities (and axes of mirrored turns)
QUATERNION_REFLECTION = (-1.0, 1.0, -1.0, 1.0)  # M R M as an xyzw quaternion: (-x, y, -z, w)
_TOLERANCE = 1e-4  # paired offsets, axes, limits and gains must mirror each other this closely


@dataclass(frozen=True)
class SignedPermutation:
    """x -> x[..., index] * sign: the mirror image of a vector laid out as `index` says.

    index `[n]` long (the entry each output entry reads), sign `[n]` (+1 or -1).
    """

    index: torch.Tensor
    sign: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """The mirror image of `x [..., n]`."""
        return x.index_select(-1, self.index.to(x.device)) * self.sign.to(device=x.device, dtype=x.dtype)

    def __len__(self) -> int:
        return len(self.index)

    def to(self, device) -> SignedPermutation:
        return SignedPermutation(self.index.to(device), self.sign.to(device))

    @staticmethod
    def of_vectors(partners: torch.Tensor, signs: tuple[float, float, float]) -> SignedPermutation:
        """Rows of 3-vectors `[k * 3]` (row i the partner of row partners[i]), each entry scaled by `signs`."""
        index = (3 * partners.long().unsqueeze(-1) + torch.arange(3)).reshape(-1)
        return SignedPermutation(index, torch.tensor(signs).repeat(len(partners)))

    @staticmethod
    def cat(*parts: SignedPermutation) -> SignedPermutation:
        """The permutation of the concatenation of vectors laid out as `parts`, in order."""
        indices, offset = [], 0
        for part in parts:
            indices.append(part.index + offset)
            offset += len(part)
        return SignedPermutation(torch.cat(indices), torch.cat([p.sign for p in parts]))

    @staticmethod
    def identity(n: int) -> SignedPermutation:
        return SignedPermutation(torch.arange(n), torch.ones(n))


@dataclass(frozen=True)
class RobotMirror:
    """How a symmetric humanoid's bodies and hinges map onto their mirror images."""

    body_partners: torch.Tensor  # [B] long
    dofs: SignedPermutation  # [D]: hinge angles, rates, PD targets and actions alike


def swap_sides(name: str) -> str:
    """left <-> right in a name, keeping the case (left_foot, LeftFoot, LEFT_FOOT)."""
    def swap(match: re.Match) -> str:
        word = match.group(0)
        other = "right" if word.lower() == "left" else "left"
        if word.isupper():
            return other.upper()
        return other.capitalize() if word[0].isupper() else other
    return re.sub(r"left|right", swap, name, flags=re.IGNORECASE)


def partner_indices(names: list[str], what: str, error: type[Exception] = ModelError) -> torch.Tensor:
    """Index `[n]` of each name's partner (left <-> right swapped; itself without either word).
    `error` naming the first name whose partner is missing."""
    partners = []
    for name in names:
        swapped = swap_sides(name)
        if swapped not in names:
            raise error(f"mirror: {what} {name!r} has no partner {swapped!r}; {what}s: {', '.join(names)}")
        partners.append(names.index(swapped))
    return torch.tensor(partners, dtype=torch.long)


def tree_partners(names: list[str], parent_indices: torch.Tensor, offsets: torch.Tensor, what: str,
                  tolerance: float, error: type[Exception] = ModelError) -> torch.Tensor:
    """Index `[n]` of each node's mirror partner in a tree of `names` (`partner_indices`),
    checked to keep the tree (a partner's parent is the parent's partner) and to mirror the
    offsets from the parents (`offsets [n, 3]`, to `tolerance` m; a node without a partner lies
    on the midplane). `error` (ModelError for a humanoid, MotionFileError for a clip's
    skeleton) names the first node that breaks the symmetry."""
    partners = partner_indices(names, what, error)
    parents = parent_indices.tolist()
    offsets = offsets.cpu()
    reflection = torch.tensor(REFLECTION, dtype=offsets.dtype)

    def name(index: int) -> str:
        return repr(names[index]) if index >= 0 else "nothing (the root)"

    for j, k in enumerate(partners.tolist()):
        parent_partner = int(partners[parents[j]]) if parents[j] >= 0 else -1
        if parents[k] != parent_partner:
            raise error(f"mirror: the skeleton is not left-right symmetric: {what} {names[j]!r} hangs from "
                        f"{name(parents[j])}, but its mirror image {names[k]!r} hangs from "
                        f"{name(parents[k])}, not from {name(parent_partner)}")
        if (offsets[k] - offsets[j] * reflection).abs().max() > tolerance:
            raise error(f"mirror: the skeleton is not left-right symmetric: {what} {names[j]!r} sits at "
                        f"{[round(v, 4) for v in offsets[j].tolist()]} from its parent, its mirror image "
                        f"{names[k]!r} at {[round(v, 4) for v in offsets[k].tolist()]}")
    return partners


def robot_mirror(robot) -> RobotMirror:
    """The mirror map of `robot` (a RobotDescription). ModelError, naming the part, unless the
    humanoid is left-right symmetric: every body and hinge has a partner, partners hang from
    partners at mirrored offsets, and partner hinges have mirrored axes, limits and gains."""
    bodies = tree_partners(robot.body_names, robot.parent_indices, robot.local_translation, "body", _TOLERANCE)
    dofs = partner_indices(robot.dof_names, "hinge")
    axes = robot.dof_axes.cpu()
    reflection = torch.tensor(REFLECTION, dtype=axes.dtype)
    signs = (axes[dofs] * (-reflection * axes)).sum(-1)
    lower, upper = robot.dof_limits_lower.cpu(), robot.dof_limits_upper.cpu()
    for d, p in enumerate(dofs.tolist()):
        name, partner = robot.dof_names[d], robot.dof_names[p]
        if abs(abs(float(signs[d])) - 1.0) > _TOLERANCE:
            raise ModelError(f"mirror: hinge {name!r} turns about {axes[d].tolist()}, its partner {partner!r} "
                             f"about {axes[p].tolist()}, which is not its mirror image")
        sign = round(float(signs[d]))
        # a mirrored hinge's range is its partner's, negated and swapped where the sign flips
        mirrored = (lower[d], upper[d]) if sign > 0 else (-upper[d], -lower[d])
        if abs(mirrored[0] - lower[p]) > _TOLERANCE or abs(mirrored[1] - upper[p]) > _TOLERANCE:
            raise ModelError(f"mirror: hinge {name!r} has range [{lower[d]:.4f}, {upper[d]:.4f}], its partner "
                             f"{partner!r} [{lower[p]:.4f}, {upper[p]:.4f}], not the mirror image")
        for gain in ("kp", "kd", "effort_limit"):
            values = getattr(robot, gain).cpu()
            if abs(values[d] - values[p]) > _TOLERANCE * max(1.0, abs(float(values[d]))):
                raise ModelError(f"mirror: hinge {name!r} has {gain} {float(values[d]):g}, its partner "
                                 f"{partner!r} {float(values[p]):g}")
    return RobotMirror(bodies, SignedPermutation(dofs, signs.round()))


def policy_obs_mirror(mirror: RobotMirror) -> SignedPermutation:
    """The policy observation of a mirrored humanoid as a signed permutation of the original's
    (the layout of `envs.observations.policy_observation`, either root rotation: root height,
    then rows of 3-vectors per body): partner bodies' rows, positions and tangent/normal axes
    reflected, angular velocities reflected as pseudo-vectors. Here, below the envs and agents,
    because a symmetric low-level controller needs it without an env."""
    bodies = mirror.body_partners
    tangent_normal = torch.stack([2 * bodies, 2 * bodies + 1], dim=-1).reshape(-1)
    return SignedPermutation.cat(
        SignedPermutation.identity(1),  # root height
        SignedPermutation.of_vectors(bodies[1:] - 1, REFLECTION),  # non-root positions (root -> root)
        SignedPermutation.of_vectors(tangent_normal, REFLECTION),
        SignedPermutation.of_vectors(bodies, REFLECTION),  # linear velocities
        SignedPermutation.of_vectors(bodies, PSEUDO_REFLECTION),  # angular velocities
    )
