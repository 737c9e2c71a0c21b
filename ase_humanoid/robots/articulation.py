"""Everything the observations need from a humanoid state, in one pass: the simulator's hot path.

`articulation_state` turns root and DoF state (what a physics backend reads back) into world body
poses and velocities plus the local joint rotations and joint velocities of the AMP observation.
Every backend calls it after every control step for every world, so it is written for speed:

* Internally everything is component-major ("planes"): quaternions `[4, B, n]`, vectors
  `[3, B, n]`, DoF quantities `[D, n]`. Each op then runs on contiguous planes of thousands of
  numbers, instead of a strided 3- or 4-wide last dimension (several times slower on a CPU).
* Only the chain of world rotations walks the tree, one depth level at a time. Every sum along
  a body's ancestors is one product with a constant 0/1 ancestor matrix: positions relative to
  the root p_b = sum_j R_parent(j) offset_j, angular velocities w_b = sum_j w_j (w_j: the world
  rate of joint j; the root's own angular velocity for the root) and linear velocities
  v_b = v_root + sum_j w_j x (p_b - p_j) = v_root + w_b x p_b - sum_j w_j x p_j (hinges sit at
  body origins; positions relative to the root keep the terms small).
* Constant index tensors and matrices are built once per robot, device and dtype.

Conventions as in `kinematics.py`: a spherical joint is Rx(a) Ry(b) Rz(c) about the child's own
axes (the robot description checks the axes), a hinge rotates about its axis, body frames have
identity rest orientation, quaternions x, y, z, w.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ase_humanoid.robots.description import RobotDescription
from ase_humanoid.robots.tree import broadcast_lead, joint_rows_from_ids, tree_levels
from ase_humanoid.utils import rotations as rot


@dataclass
class ArticulationState:
    """Body states and joint quantities of a batch of humanoid states (leading dims `...`).

    body_pos, body_lin_vel, body_ang_vel `[..., B, 3]` and body_rot `[..., B, 4]`: world frame,
    at each body origin (as MuJoCo reports them); joint_rot `[..., J, 4]`: local rotation of each
    joint group (`robot.dof_body_ids` order); joint_vel `[..., D]`: joint velocities (spherical
    group: the child's angular velocity relative to its parent in the child frame; hinge: its rate).
    """

    body_pos: torch.Tensor
    body_rot: torch.Tensor
    body_lin_vel: torch.Tensor
    body_ang_vel: torch.Tensor
    joint_rot: torch.Tensor
    joint_vel: torch.Tensor

    def bodies(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.body_pos, self.body_rot, self.body_lin_vel, self.body_ang_vel

    def as_tuple(self) -> tuple:
        return (self.body_pos, self.body_rot, self.body_lin_vel, self.body_ang_vel, self.joint_rot,
                self.joint_vel)

    def index_select(self, ids: torch.Tensor) -> "ArticulationState":
        """Rows `ids` of the leading dimension."""
        return ArticulationState(*(x.index_select(0, ids) for x in self.as_tuple()))


@dataclass(frozen=True)
class _Constants:
    """Index tensors and matrices of one robot on one device and dtype (see module docstring).

    "Joint rows" index the joint-local arrays [no joint (identity), spherical groups..., hinges...];
    "level order" sorts bodies by tree depth so each level is a contiguous block.
    """

    level_slices: tuple  # per level l >= 1: slice of its rows in level order
    level_parent_rows: tuple  # per level l >= 1: [L_l] parent rows within level l - 1, or None (one parent)
    level_welded: tuple  # per level l >= 1: whether no body of the level has a joint (hands, props)
    level_order: torch.Tensor  # [B] body ids in level order
    body_slots: torch.Tensor  # [B] row of each body in level order
    parent_rows: torch.Tensor  # [B - 1] level-order row of each non-root body's parent (level order)
    joint_rows: torch.Tensor  # [B] joint row of each body, level order
    joint_group_rows: torch.Tensor  # [J] joint row of each joint group (robot.dof_body_ids order)
    ancestors: torch.Tensor  # [B, B] body order x level order: column is the row body or an ancestor
    non_root_ancestors: torch.Tensor  # [B, B - 1] the same without the root column
    offsets: torch.Tensor  # [3, B - 1, 1] local translation of each non-root body, level order
    spherical_dofs: torch.Tensor  # [3 S] all x hinges, then all y, then all z
    spherical_bc_dofs: torch.Tensor  # [2 S] the y then the z hinges
    hinge_dofs: torch.Tensor  # [H]
    hinge_axes: torch.Tensor  # [3, H, 1]
    identity: torch.Tensor  # [4, 1, 1]


def _constants(robot: RobotDescription, device: torch.device, dtype: torch.dtype) -> _Constants:
    cache = robot.__dict__.setdefault("_articulation_constants", {})
    key = (str(device), dtype)
    if key not in cache:
        cache[key] = _build_constants(robot, device, dtype)
    return cache[key]


def _build_constants(robot: RobotDescription, device, dtype) -> _Constants:
    parents = [int(p) for p in robot.parent_indices.tolist()]
    levels = tree_levels(parents, device)
    order = levels.order.tolist()
    slot = {b: i for i, b in enumerate(order)}
    ancestors = torch.zeros(len(parents), len(parents), dtype=dtype)
    for b in range(len(parents)):
        a = b
        while a != -1:
            ancestors[b, slot[a]] = 1.0
            a = parents[a]
    spherical, hinge = tuple(robot.spherical_body_ids.tolist()), tuple(robot.hinge_body_ids.tolist())
    sph = robot.spherical_dof_ids.cpu()
    hinge_dofs = robot.hinge_dof_ids.cpu()

    def to_dev(x, dt=None):
        return x.to(device=device, dtype=dt or x.dtype)

    return _Constants(
        level_slices=tuple(slice(start, stop) for start, stop in levels.level_rows[1:]),
        level_parent_rows=levels.parent_rows,
        level_welded=tuple(all(b not in spherical + hinge for b in order[start:stop])
                           for start, stop in levels.level_rows[1:]),
        level_order=levels.order,
        body_slots=levels.body_slots,
        parent_rows=to_dev(torch.tensor([slot[parents[b]] for b in order[1:]], dtype=torch.long)),
        joint_rows=joint_rows_from_ids(tuple(order), spherical, hinge, str(device)),
        joint_group_rows=joint_rows_from_ids(tuple(robot.dof_body_ids), spherical, hinge, str(device)),
        ancestors=to_dev(ancestors),
        non_root_ancestors=to_dev(ancestors[:, 1:].contiguous()),
        offsets=to_dev(robot.local_translation.cpu()[order[1:]].T.unsqueeze(-1).contiguous(), dtype),
        spherical_dofs=to_dev(sph.T.flatten()),
        spherical_bc_dofs=to_dev(sph[:, 1:].T.flatten()),
        hinge_dofs=to_dev(hinge_dofs),
        hinge_axes=to_dev(robot.dof_axes.cpu()[hinge_dofs].T.unsqueeze(-1).contiguous(), dtype),
        identity=torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=dtype, device=device).view(4, 1, 1),
    )


def articulation_state(
    robot: RobotDescription,
    root_pos: torch.Tensor,
    root_rot: torch.Tensor,
    root_lin_vel: torch.Tensor,
    root_ang_vel: torch.Tensor,
    dof_pos: torch.Tensor,
    dof_vel: torch.Tensor,
) -> ArticulationState:
    """World body states and local joint rotations / velocities from root and DoF state.

    root_pos, root_lin_vel, root_ang_vel [..., 3] (world frame, at the root origin), root_rot
    [..., 4], dof_pos, dof_vel [..., D]. Body states equal MuJoCo's own kinematics.
    """
    device, dtype = dof_pos.device, dof_pos.dtype
    c = _constants(robot, device, dtype)
    lead = broadcast_lead(root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel)
    n, num_bodies = math.prod(lead), robot.num_bodies

    # Every input as planes `[k, n]`: one concatenation and one transposing copy.
    inputs = (root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel)
    widths = [x.shape[-1] for x in inputs]
    flat = [x.expand(*lead, k).reshape(n, k) for x, k in zip(inputs, widths)]
    root_pos_p, root_rot_p, root_lin_vel_p, root_ang_vel_p, dof_pos_p, dof_vel_p = (
        torch.cat(flat, dim=1).T.contiguous().split(widths))
    joint_rot_p = _joint_local_rot_planes(c, dof_pos_p)  # [4, 1 + S + H, n]
    joint_rate_p, joint_vel_p = _joint_rates_planes(c, dof_pos_p, dof_vel_p)  # [3, 1 + S + H, n], [D, n]

    # World rotations [4, B, n] in level order, one depth level at a time (the root has no joint
    # of its own: its world rotation is root_rot; a level without joints turns with its parents).
    local_rot = joint_rot_p.index_select(1, c.joint_rows)
    level_rot = root_rot_p.unsqueeze(1)
    all_rot = [level_rot]
    for rows, parent_rows, welded in zip(c.level_slices, c.level_parent_rows, c.level_welded):
        parent_rot = level_rot if parent_rows is None else level_rot.index_select(1, parent_rows)
        level_rot = parent_rot.expand(4, rows.stop - rows.start, n) if welded else (
            rot.quat_mul_planes(parent_rot, local_rot[:, rows]))
        all_rot.append(level_rot)
    body_rot = torch.cat(all_rot, dim=1)

    # One rotation call: each non-root body's offset by its parent's rotation and each body's
    # joint rate (its own frame) by its own rotation.
    rotated = rot.quat_rotate_planes(
        torch.cat([body_rot.index_select(1, c.parent_rows), body_rot], dim=1),
        torch.cat([c.offsets.expand(3, num_bodies - 1, n), joint_rate_p.index_select(1, c.joint_rows)], dim=1))
    world_offsets, joint_rates = rotated[:, : num_bodies - 1], rotated[:, num_bodies - 1:]
    joint_rates[:, 0] = root_ang_vel_p  # the root's rate is its own angular velocity

    rel_pos = rot.matmul_exact(c.non_root_ancestors, world_offsets)  # [3, B, n] body order
    body_ang_vel = rot.matmul_exact(c.ancestors, joint_rates)
    moments = rot.cross_planes(joint_rates, rel_pos.index_select(1, c.level_order))
    body_lin_vel = (rot.cross_planes(body_ang_vel, rel_pos).sub_(rot.matmul_exact(c.ancestors, moments))
                    .add_(root_lin_vel_p.unsqueeze(1)))
    body_pos = rel_pos.add_(root_pos_p.unsqueeze(1))

    return ArticulationState(
        body_pos=_from_planes(body_pos, lead),
        body_rot=_from_planes(body_rot.index_select(1, c.body_slots), lead),
        body_lin_vel=_from_planes(body_lin_vel, lead),
        body_ang_vel=_from_planes(body_ang_vel, lead),
        joint_rot=_from_planes(joint_rot_p.index_select(1, c.joint_group_rows), lead),
        joint_vel=joint_vel_p.T.contiguous().view(*lead, dof_pos.shape[-1]),
    )


def _joint_local_rot_planes(c: _Constants, dof_pos: torch.Tensor) -> torch.Tensor:
    """Local rotations `[4, 1 + S + H, n]` of [no joint, spherical groups..., hinges...] from
    hinge angles `[D, n]`."""
    half = 0.5 * dof_pos
    sin_half, cos_half = torch.sin(half), torch.cos(half)
    n = dof_pos.shape[1]
    parts = [c.identity.expand(4, 1, n)]
    if c.spherical_dofs.numel():
        # Rx(a) Ry(b) Rz(c) written out in half-angle sines and cosines.
        sa, sb, sc = sin_half.index_select(0, c.spherical_dofs).chunk(3)
        ca, cb, cc = cos_half.index_select(0, c.spherical_dofs).chunk(3)
        xy_x, xy_y, xy_z, xy_w = sa * cb, ca * sb, sa * sb, ca * cb  # Rx(a) Ry(b)
        parts.append(torch.stack([(xy_x * cc).addcmul_(xy_y, sc), (xy_y * cc).addcmul_(xy_x, sc, value=-1.0),
                                  (xy_w * sc).addcmul_(xy_z, cc), (xy_w * cc).addcmul_(xy_z, sc, value=-1.0)]))
    if c.hinge_dofs.numel():
        parts.append(torch.cat([c.hinge_axes * sin_half.index_select(0, c.hinge_dofs),
                                cos_half.index_select(0, c.hinge_dofs).unsqueeze(0)]))
    return torch.cat(parts, dim=1)


def _joint_rates_planes(c: _Constants, dof_pos: torch.Tensor, dof_vel: torch.Tensor):
    """Each joint's angular velocity relative to its parent in its own frame `[3, 1 + S + H, n]`
    (rows as `_joint_local_rot_planes`) and the joint velocities `[D, n]` (DoF order)."""
    n = dof_pos.shape[1]
    parts = [torch.zeros(3, 1, n, dtype=dof_vel.dtype, device=dof_vel.device)]
    joint_vel = dof_vel
    if c.spherical_dofs.numel():
        # E(b, c) [a', b', c'] with E = [[cos b cos c, sin c, 0], [-cos b sin c, cos c, 0], [sin b, 0, 1]].
        angles = dof_pos.index_select(0, c.spherical_bc_dofs)
        cos_b, cos_c = torch.cos(angles).chunk(2)
        sin_b, sin_c = torch.sin(angles).chunk(2)
        a_rate, b_rate, c_rate = dof_vel.index_select(0, c.spherical_dofs).chunk(3)
        cos_b_a = cos_b * a_rate
        spherical = torch.stack([(cos_b_a * cos_c).addcmul_(sin_c, b_rate), (b_rate * cos_c).addcmul_(cos_b_a, sin_c, value=-1.0),
                                 (sin_b * a_rate).add_(c_rate)])  # [3, S, n]
        parts.append(spherical)
        joint_vel = dof_vel.index_copy(0, c.spherical_dofs, spherical.reshape(len(c.spherical_dofs), n))
    if c.hinge_dofs.numel():  # a hinge's joint velocity is its rate
        parts.append(c.hinge_axes * dof_vel.index_select(0, c.hinge_dofs))
    return torch.cat(parts, dim=1), joint_vel


def joint_local_rotations(robot: RobotDescription, dof_pos: torch.Tensor) -> torch.Tensor:
    """Local rotations `[..., 1 + S + H, 4]` of [no joint (identity), spherical groups...,
    hinges...] from hinge angles `[..., D]` (the rows `tree.joint_rows` indexes)."""
    c = _constants(robot, dof_pos.device, dof_pos.dtype)
    rotations = _joint_local_rot_planes(c, _to_planes(dof_pos))
    return _from_planes(rotations, dof_pos.shape[:-1])


def joint_rates(robot: RobotDescription, dof_pos: torch.Tensor, dof_vel: torch.Tensor):
    """Each joint's angular velocity relative to its parent in its own frame `[..., 1 + S + H, 3]`
    (rows as `joint_local_rotations`) and the joint velocities `[..., D]` from hinge angles and
    rates `[..., D]`."""
    dof_pos, dof_vel = torch.broadcast_tensors(dof_pos, dof_vel)
    c = _constants(robot, dof_vel.device, dof_vel.dtype)
    rates, joint_vel = _joint_rates_planes(c, _to_planes(dof_pos), _to_planes(dof_vel))
    lead = dof_vel.shape[:-1]
    return _from_planes(rates, lead), joint_vel.T.contiguous().view(*lead, joint_vel.shape[0])


def _to_planes(x: torch.Tensor) -> torch.Tensor:
    """`[..., k]` -> `[k, n]` contiguous."""
    return x.reshape(-1, x.shape[-1]).T.contiguous()


def _from_planes(x: torch.Tensor, lead) -> torch.Tensor:
    """`[k, rows, n]` -> `[*lead, rows, k]`, contiguous (what the observations read fastest)."""
    return x.permute(2, 1, 0).contiguous().view(*lead, x.shape[1], x.shape[0])


def body_state_from_qpos(
    robot: RobotDescription,
    root_pos: torch.Tensor,
    root_rot: torch.Tensor,
    root_lin_vel: torch.Tensor,
    root_ang_vel: torch.Tensor,
    dof_pos: torch.Tensor,
    dof_vel: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """World-frame body states from root and DoF state; equals MuJoCo's own kinematics.

    root_pos, root_lin_vel, root_ang_vel [..., 3] (world frame, at the root origin), root_rot [..., 4],
    dof_pos, dof_vel [..., D]. Returns body_pos [..., B, 3], body_rot [..., B, 4],
    body_lin_vel [..., B, 3], body_ang_vel [..., B, 3]: velocities in world frame at each body origin.
    """
    return articulation_state(robot, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel).bodies()
