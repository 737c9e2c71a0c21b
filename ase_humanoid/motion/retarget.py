"""T-pose retargeting of a source motion clip onto a humanoid's skeleton.

The idea (the one poselib's retargeting uses, written here from scratch): a source skeleton and
the target humanoid are each put in a reference pose in which they look alike (both T-poses).
For every mapped joint, the rotation of the source joint *relative to its T-pose* in the world
frame,

    delta(t) = R * g_src(t) * g_src_tpose^-1 * R^-1      (R: root rotation, source -> target axes)

is applied to the target body's T-pose orientation: g_tgt(t) = delta(t) * g_tgt_tpose. Bone
lengths come from the target, so only orientations travel; the root translation is the source
root position scaled to metres and rotated by R. Unmapped target bodies keep their T-pose
rotation relative to their parent (they follow it).

The result is then made simulator-ready:

- hinge projection: each 1-DoF joint (elbows, knees) can only rotate about its axis. The bend
  plane is recovered from the parent and child bone directions and the parent (upper arm,
  thigh) takes the twist, so elbow/knee and wrist/ankle positions stay where the transfer put
  them; the hinge angle is then exact. Bodies without joints (AMP hands, sword, shield) get the
  identity local rotation (they follow their parent).
- ground alignment: one constant height offset for the whole clip puts the lowest point of the
  humanoid's collision geoms (foot boxes, spheres, capsules) at z = root_height_offset, or,
  in the "origins" mode, the lowest body origin (as the ASE release did).
- resampling to the target fps and trimming, then velocities recomputed.

Public API: `RetargetConfig`, `retarget_motion`, and the building blocks `transfer_rotations`,
`project_hinges`, `global_to_local_rotation`, `lowest_geom_height`, `joint_limit_report`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import torch

from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.robots.description import RobotDescription, load_mjcf
from ase_humanoid.robots.kinematics import dof_pos_to_local_rot, forward_kinematics, local_rot_to_dof_pos
from ase_humanoid.utils import rotations as rot

GROUND_MODES = ("geoms", "origins", "none")
UP_AXES = ("y", "z")
# +90 deg about x: takes a y-up frame to z-up (y -> z, z -> -y), xyzw.
Y_UP_TO_Z_UP = (math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))

# Hinge projection: the bend plane of a limb is trusted when the limb is bent at least this much
# and the plane normal is within HINGE_PLANE_TRUST_DEG of the hinge axis the transfer produced;
# below that the projection blends smoothly toward the transferred hinge axis (straight limbs
# have no defined bend plane).
HINGE_MIN_BEND_DEG = 10.0
HINGE_PLANE_TRUST_DEG = 30.0
HINGE_PLANE_REJECT_DEG = 60.0


@dataclass
class RetargetConfig:
    """Settings of one retargeting run (see cfg/retarget/*.yaml for documented examples).

    joint_map: source joint name -> target body name.
    root_rotation: xyzw rotation applied to the source (source axes -> target axes, z up).
    scale: source length units -> metres.
    root_height_offset: height (m) at which the lowest point sits after ground alignment.
    ground: "geoms" (lowest collision-geom point), "origins" (lowest body origin, as in the ASE
        release) or "none" (keep the transferred heights, only add root_height_offset).
    source_up: the source's up axis, "y" (BVH, ASF/AMC, FBX as ufbx reads it) or "z"; a y-up
        source is first turned z-up by +90 deg about x, then root_rotation applies.
    project_hinges: make elbows/knees exact 1-DoF rotations (see project_hinges).
    """

    joint_map: dict[str, str]
    root_rotation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    scale: float = 1.0
    root_height_offset: float = 0.0
    ground: str = "geoms"
    source_up: str = "z"
    project_hinges: bool = True

    def __post_init__(self):
        if self.ground not in GROUND_MODES:
            raise ConfigError(f"retarget key 'ground': '{self.ground}' is not one of {', '.join(GROUND_MODES)}")
        if len(self.root_rotation) != 4:
            raise ConfigError(f"retarget key 'root_rotation': expected 4 numbers (x, y, z, w), got {self.root_rotation}")
        if not self.scale > 0:
            raise ConfigError(f"retarget key 'scale': must be positive, got {self.scale}")
        if self.source_up not in UP_AXES:
            raise ConfigError(f"retarget key 'source_up': '{self.source_up}' is not one of {', '.join(UP_AXES)}")
        if not self.joint_map:
            raise ConfigError("retarget key 'joint_map': empty; map at least the source root to the target root")


# ----------------------------------------------------------------------------------------------
# name mapping


def resolve_joint_map(joint_map: dict[str, str], source_names, target_names, context: str = "joint_map"):
    """Indices (source [M], target [M]) of a name mapping; ConfigError listing valid names.

    Each target body may be mapped once; the target root must be mapped (it carries the root).
    """
    source_names, target_names = list(source_names), list(target_names)
    bad_src = [s for s in joint_map if s not in source_names]
    if bad_src:
        raise ConfigError(f"{context}: source joint(s) {bad_src} not in the source skeleton; "
                          f"valid source joints: {', '.join(source_names)}")
    bad_tgt = [t for t in joint_map.values() if t not in target_names]
    if bad_tgt:
        raise ConfigError(f"{context}: target body(s) {bad_tgt} not in the target humanoid; "
                          f"valid target bodies: {', '.join(target_names)}")
    targets = list(joint_map.values())
    dup = sorted({t for t in targets if targets.count(t) > 1})
    if dup:
        raise ConfigError(f"{context}: target body(s) {dup} mapped more than once")
    if target_names[0] not in targets:
        raise ConfigError(f"{context}: the target root '{target_names[0]}' must be mapped (it carries the root motion)")
    src_idx = torch.tensor([source_names.index(s) for s in joint_map], dtype=torch.long)
    tgt_idx = torch.tensor([target_names.index(t) for t in joint_map.values()], dtype=torch.long)
    return src_idx, tgt_idx


# ----------------------------------------------------------------------------------------------
# rotation transfer


def transfer_rotations(
    src_global_rot: torch.Tensor,
    src_tpose_global_rot: torch.Tensor,
    tgt_tpose_local_rot: torch.Tensor,
    tgt_parents: torch.Tensor,
    src_idx: torch.Tensor,
    tgt_idx: torch.Tensor,
    root_rotation: torch.Tensor,
) -> torch.Tensor:
    """Target global rotations `[T, B, 4]` from source global rotations.

    src_global_rot [T, Js, 4], src_tpose_global_rot [Js, 4], tgt_tpose_local_rot [B, 4] (the
    target T-pose; the target root's entry is its global rotation), tgt_parents [B] (parents
    first), src_idx / tgt_idx [M] (mapped pairs), root_rotation [4]. Mapped bodies get
    delta * g_tgt_tpose with delta = R g_src g_src_tpose^-1 R^-1; the others follow their parent
    with their T-pose local rotation.
    """
    R = root_rotation.to(src_global_rot)
    delta = rot.quat_mul(src_global_rot[:, src_idx], rot.quat_inverse(src_tpose_global_rot[src_idx]))
    delta = rot.quat_mul(rot.quat_mul(R, delta), rot.quat_inverse(R))  # [T, M, 4]

    parents = [int(p) for p in tgt_parents]
    tpose_local = tgt_tpose_local_rot.to(src_global_rot)
    tpose_global = _chain_global(parents, tpose_local.unsqueeze(0))[0]  # [B, 4]
    mapped = {int(b): m for m, b in enumerate(tgt_idx)}
    T = src_global_rot.shape[0]
    out = []
    for b, p in enumerate(parents):
        if b in mapped:
            out.append(rot.quat_mul(delta[:, mapped[b]], tpose_global[b]))
        elif p < 0:
            out.append(tpose_global[b].expand(T, 4))
        else:
            out.append(rot.quat_mul(out[p], tpose_local[b]))
    return rot.quat_normalize(torch.stack(out, dim=1))


def _chain_global(parents: list[int], local_rot: torch.Tensor) -> torch.Tensor:
    """Global rotations [..., B, 4] from local ones (root entry = its global rotation)."""
    out = []
    for b, p in enumerate(parents):
        out.append(local_rot[..., b, :] if p < 0 else rot.quat_mul(out[p], local_rot[..., b, :]))
    return torch.stack(out, dim=-2)


def global_to_local_rotation(parents, global_rot: torch.Tensor) -> torch.Tensor:
    """Local rotations [..., B, 4] (root entry = its global rotation) from global ones."""
    parents = [int(p) for p in parents]
    local = [global_rot[..., b, :] if p < 0 else
             rot.quat_mul(rot.quat_inverse(global_rot[..., p, :]), global_rot[..., b, :])
             for b, p in enumerate(parents)]
    return rot.quat_normalize(torch.stack(local, dim=-2))


# ----------------------------------------------------------------------------------------------
# hinge projection


def _unit(v: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    return v / v.norm(dim=-1, keepdim=True).clamp_min(eps)


def _frame_rotation(u_from, v_from, u_to, v_to) -> torch.Tensor:
    """Rotation [..., 4] taking the orthonormal pair (u_from, v_from) onto (u_to, v_to)."""
    m_from = torch.stack([u_from, v_from, torch.linalg.cross(u_from, v_from, dim=-1)], dim=-1)
    m_to = torch.stack([u_to, v_to, torch.linalg.cross(u_to, v_to, dim=-1)], dim=-1)
    m_from = m_from.expand_as(m_to)
    return rot.quat_normalize(rot.matrix_to_quat(m_to @ m_from.transpose(-1, -2)))


def _twist_about(q: torch.Tensor, axis: torch.Tensor) -> torch.Tensor:
    """Angle [...] of the twist of q about the unit axis (swing-twist decomposition)."""
    return rot.normalize_angle(2.0 * torch.atan2((q[..., :3] * axis).sum(-1), q[..., 3]))


def _limb_child(robot: RobotDescription, body: int) -> int | None:
    """The child of `body` farthest from it (the limb's continuation), or None for a leaf."""
    children = [b for b, p in enumerate(robot.parent_indices.tolist()) if p == body]
    if not children:
        return None
    lengths = robot.local_translation[children].norm(dim=-1)
    return children[int(lengths.argmax())]


def project_hinges(robot: RobotDescription, global_rot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Make every 1-DoF joint's local rotation a pure rotation about its axis.

    global_rot [T, B, 4] -> (global_rot [T, B, 4], hinge_angle [T, H]) for robot.hinge_body_ids.

    For a hinge body c with parent p and limb continuation h (the child of c farthest away):
    the transferred pose gives the parent bone direction d1 = g_p t_c and the child bone
    direction d2 = g_c t_h. A hinge about axis a bends the limb in the plane normal to a, so
    the world hinge axis is taken as the bend-plane normal (d1 x d2, oriented like the
    transferred axis g a) and the parent is re-oriented to carry t_c onto d1 and a onto that
    axis; the hinge angle is the signed angle from d1 to d2 about it. Both bone directions are
    kept, so the joint (elbow/knee) and the limb end (wrist/ankle) stay in place; what changes
    is the roll of the parent about its own bone (the forearm/shin twist folded into it). When
    the limb is nearly straight or bent across the hinge (no usable bend plane), the axis
    blends toward the transferred one and the off-plane part of the bend is dropped. The
    global rotations of all other bodies are unchanged. A leaf hinge keeps the twist part of
    its local rotation and gives the swing part to its parent (its own orientation is kept).
    """
    g = global_rot.clone()
    parents = robot.parent_indices.tolist()
    dtype = g.dtype
    angles = []
    for c, d in zip(robot.hinge_body_ids.tolist(), robot.hinge_dof_ids.tolist()):
        p = parents[c]
        a = _unit(robot.dof_axes[d].to(dtype))
        t_c = robot.local_translation[c].to(dtype)
        h = _limb_child(robot, c)
        t_h = robot.local_translation[h].to(dtype) if h is not None else None
        perpendicular = (
            t_h is not None and t_c.norm() > 1e-6 and t_h.norm() > 1e-6
            and abs(float(_unit(t_c) @ a)) < 1e-3 and abs(float(_unit(t_h) @ a)) < 1e-3
        )
        if not perpendicular:
            angles.append(_project_leaf_hinge(g, p, c, a))
            continue
        u_c, u_h = _unit(t_c), _unit(t_h)
        rest_angle = torch.atan2(torch.linalg.cross(u_c, u_h, dim=-1) @ a, u_c @ u_h)

        d1 = rot.quat_rotate(g[:, p], u_c.expand_as(g[:, p, :3]))
        d2 = rot.quat_rotate(g[:, c], u_h.expand_as(g[:, c, :3]))
        # The transferred hinge axis, from both sides of the joint, made perpendicular to d1.
        a_ref = rot.quat_rotate(g[:, c], a.expand_as(d1)) + rot.quat_rotate(g[:, p], a.expand_as(d1))
        a_ref = _unit(a_ref - (a_ref * d1).sum(-1, keepdim=True) * d1)
        normal = torch.linalg.cross(d1, d2, dim=-1)
        sin_bend = normal.norm(dim=-1, keepdim=True)
        n_hat = normal / sin_bend.clamp_min(1e-12)
        agree = (n_hat * a_ref).sum(-1, keepdim=True)
        trust = ((agree.abs() - math.cos(math.radians(HINGE_PLANE_REJECT_DEG)))
                 / (math.cos(math.radians(HINGE_PLANE_TRUST_DEG)) - math.cos(math.radians(HINGE_PLANE_REJECT_DEG))))
        weight = trust.clamp(0, 1) * (sin_bend / math.sin(math.radians(HINGE_MIN_BEND_DEG))).clamp(0, 1)
        axis = _unit(weight * torch.sign(agree) * n_hat + (1 - weight) * a_ref)
        axis = _unit(axis - (axis * d1).sum(-1, keepdim=True) * d1)

        bend = torch.atan2((normal * axis).sum(-1), (d1 * d2).sum(-1))
        theta = rot.normalize_angle(bend - rest_angle)
        g_p = _frame_rotation(u_c, a, d1, axis)
        g[:, p] = g_p
        g[:, c] = rot.quat_mul(g_p, rot.quat_from_axis_angle(a.expand_as(d1), theta))
        angles.append(theta)
    if not angles:
        return g, torch.zeros(g.shape[0], 0, dtype=dtype, device=g.device)
    return g, torch.stack(angles, dim=-1)


def _project_leaf_hinge(g, p, c, a) -> torch.Tensor:
    """Swing-twist split of a hinge without a usable limb continuation; edits g in place."""
    local = rot.quat_mul(rot.quat_inverse(g[:, p]), g[:, c])
    theta = _twist_about(local, a)
    twist = rot.quat_from_axis_angle(a.expand(*theta.shape, 3), theta)
    swing = rot.quat_mul(local, rot.quat_inverse(twist))
    g[:, p] = rot.quat_normalize(rot.quat_mul(g[:, p], swing))
    g[:, c] = rot.quat_normalize(rot.quat_mul(g[:, p], twist))
    return theta


def robot_local_rotation(robot: RobotDescription, global_rot: torch.Tensor, hinge_angle: torch.Tensor | None = None):
    """Local rotations [T, B, 4] representable by the robot's joints, from global rotations.

    Bodies without joints get the identity (they follow their parent); hinge bodies get the
    exact axis rotation for `hinge_angle` [T, H] when given. Globals of descendants are
    preserved where their joints allow.
    """
    parents = robot.parent_indices.tolist()
    welded = set(range(1, robot.num_bodies)) - set(robot.dof_body_ids)
    hinge_slot = {b: k for k, b in enumerate(robot.hinge_body_ids.tolist())}
    hinge_axes = robot.dof_axes[robot.hinge_dof_ids].to(global_rot.dtype)
    local, actual = [], []
    for b, p in enumerate(parents):
        if p < 0:
            q = global_rot[:, b]
        elif b in welded:
            q = rot.quat_identity(global_rot.shape[0], dtype=global_rot.dtype, device=global_rot.device)
        elif b in hinge_slot and hinge_angle is not None:
            k = hinge_slot[b]
            q = rot.quat_from_axis_angle(hinge_axes[k].expand(global_rot.shape[0], 3), hinge_angle[:, k])
        else:
            q = rot.quat_mul(rot.quat_inverse(actual[p]), global_rot[:, b])
        q = rot.quat_normalize(q)
        local.append(q)
        actual.append(q if p < 0 else rot.quat_mul(actual[p], q))
    return torch.stack(local, dim=1)


# ----------------------------------------------------------------------------------------------
# ground alignment


@dataclass
class GeomSet:
    """Collision geoms of a humanoid, per geom: body index [G], type names, size [G, 3],
    position [G, 3] and rotation [G, 4] (xyzw) in the body frame."""

    body: torch.Tensor
    kind: list[str]
    size: torch.Tensor
    pos: torch.Tensor
    quat: torch.Tensor


_GEOM_KIND = {
    int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
    int(mujoco.mjtGeom.mjGEOM_BOX): "box",
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): "cylinder",
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): "ellipsoid",
}


def robot_geoms(robot: RobotDescription) -> GeomSet:
    """The collision geoms of the robot's MJCF (ModelError for a geom type it cannot bound)."""
    model = load_mjcf(robot.mjcf_path)
    body, kind, size, pos, quat = [], [], [], [], []
    for gid in range(model.ngeom):
        b = int(model.geom_bodyid[gid]) - 1
        if b < 0:
            continue
        gtype = int(model.geom_type[gid])
        if gtype not in _GEOM_KIND:
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, gid)
            raise ModelError(f"{robot.mjcf_path}: geom '{name}' has a type ({gtype}) the ground alignment cannot bound")
        body.append(b)
        kind.append(_GEOM_KIND[gtype])
        size.append(model.geom_size[gid].copy())
        pos.append(model.geom_pos[gid].copy())
        w, x, y, z = model.geom_quat[gid]
        quat.append([x, y, z, w])
    f64 = lambda x: torch.tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731
    return GeomSet(torch.tensor(body, dtype=torch.long), kind, f64(size), f64(pos), f64(quat))


def lowest_geom_height(geoms: GeomSet, body_pos: torch.Tensor, body_rot: torch.Tensor) -> torch.Tensor:
    """Height [T] of the lowest collision-geom surface point in each frame.

    body_pos [T, B, 3], body_rot [T, B, 4]. Exact for spheres, capsules, boxes and cylinders;
    ellipsoids are bounded by their largest semi-axis.
    """
    body_pos, body_rot = body_pos.double(), body_rot.double()
    lows = []
    for k, kind in enumerate(geoms.kind):
        b = int(geoms.body[k])
        q = rot.quat_mul(body_rot[:, b], geoms.quat[k].expand(body_rot.shape[0], 4))
        center_z = (body_pos[:, b] + rot.quat_rotate(body_rot[:, b], geoms.pos[k].expand(body_pos.shape[0], 3)))[:, 2]
        size = geoms.size[k]
        # Row 2 of the geom's rotation matrix: the world-z components of its local axes.
        zrow = rot.quat_to_matrix(q)[:, 2, :]  # [T, 3]
        if kind in ("sphere", "ellipsoid"):
            low = center_z - size[:3].max() if kind == "ellipsoid" else center_z - size[0]
        elif kind == "capsule":
            low = center_z - zrow[:, 2].abs() * size[1] - size[0]
        elif kind == "box":
            low = center_z - (zrow.abs() * size[:3]).sum(-1)
        else:  # cylinder: axis z, radius size[0], half-height size[1]
            low = center_z - zrow[:, 2].abs() * size[1] - size[0] * (1 - zrow[:, 2] ** 2).clamp_min(0).sqrt()
        lows.append(low)
    return torch.stack(lows, dim=-1).min(dim=-1).values


# ----------------------------------------------------------------------------------------------
# joint limits


def joint_limit_report(robot: RobotDescription, dof_pos: torch.Tensor, tolerance_deg: float = 1.0) -> dict:
    """Per-DoF limit violations of `dof_pos [T, D]`: {dof name: (fraction of frames outside the
    range by more than tolerance, worst excess in degrees)}, only DoFs that violate."""
    lower = robot.dof_limits_lower.to(dof_pos)
    upper = robot.dof_limits_upper.to(dof_pos)
    excess = torch.maximum(lower - dof_pos, dof_pos - upper).clamp_min(0)  # [T, D]
    tol = math.radians(tolerance_deg)
    report = {}
    for d, name in enumerate(robot.dof_names):
        bad = excess[:, d] > tol
        if bad.any():
            report[name] = (float(bad.double().mean()), math.degrees(float(excess[:, d].max())))
    return report


# ----------------------------------------------------------------------------------------------
# whole pipeline


@dataclass
class RetargetResult:
    """Output of `retarget_motion` on the target humanoid (float32).

    local_rotation [T, B, 4] (root entry = root global rotation), root_translation [T, 3],
    dof_pos [T, D], body_pos [T, B, 3], body_rot [T, B, 4], fps, ground_shift (metres added to
    the root height), limit_report (see joint_limit_report).
    """

    local_rotation: torch.Tensor
    root_translation: torch.Tensor
    dof_pos: torch.Tensor
    body_pos: torch.Tensor
    body_rot: torch.Tensor
    fps: float
    ground_shift: float
    limit_report: dict


def retarget_motion(
    src_names,
    src_global_rot: torch.Tensor,
    src_root_pos: torch.Tensor,
    src_tpose_names,
    src_tpose_global_rot: torch.Tensor,
    robot: RobotDescription,
    config: RetargetConfig,
    fps: float,
    tgt_tpose_local_rot: torch.Tensor | None = None,
    geoms: GeomSet | None = None,
) -> RetargetResult:
    """Retarget one source motion (already resampled and trimmed) onto `robot`.

    src_names [Js], src_global_rot [T, Js, 4], src_root_pos [T, 3] (source root joint world
    position, source units), src_tpose_names / src_tpose_global_rot [Jt, 4]: the source T-pose
    (matched to the clip by joint name; only mapped joints need to be present),
    tgt_tpose_local_rot [B, 4]: the target T-pose (default: identity, the MJCF rest pose).
    """
    src_names, tpose_names = list(src_names), list(src_tpose_names)
    src_idx, tgt_idx = resolve_joint_map(config.joint_map, src_names, robot.body_names)
    missing = [s for s in config.joint_map if s not in tpose_names]
    if missing:
        raise ConfigError(f"source T-pose lacks mapped joint(s) {missing}; it has: {', '.join(tpose_names)}")
    dtype = torch.float64
    src_global_rot = src_global_rot.to(dtype)
    tpose = torch.zeros(len(src_names), 4, dtype=dtype)
    tpose[:, 3] = 1.0
    for s in config.joint_map:
        tpose[src_names.index(s)] = src_tpose_global_rot[tpose_names.index(s)].to(dtype)
    if tgt_tpose_local_rot is None:
        tgt_tpose_local_rot = rot.quat_identity(robot.num_bodies, dtype=dtype)
    R = source_to_target_rotation(config, dtype)

    g = transfer_rotations(src_global_rot, tpose, tgt_tpose_local_rot.to(dtype), robot.parent_indices,
                           src_idx, tgt_idx, R)
    hinge_angle = None
    if config.project_hinges:
        g, hinge_angle = project_hinges(robot, g)
    local = robot_local_rotation(robot, g, hinge_angle)

    root_src = rot.quat_rotate(R.expand(src_root_pos.shape[0], 4), src_root_pos.to(dtype) * config.scale)
    identity = rot.quat_identity(local.shape[0], dtype=dtype)
    body_pos, body_rot = forward_kinematics(robot.parent_indices, robot.local_translation.to(dtype), local,
                                            root_src, identity)
    shift = ground_shift(robot, config, body_pos, body_rot, geoms)
    root = root_src.clone()
    root[:, 2] += shift
    body_pos = body_pos.clone()
    body_pos[..., 2] += shift

    dof_pos = local_rot_to_dof_pos(robot, local)
    f32 = lambda x: x.to(torch.float32)  # noqa: E731
    return RetargetResult(
        local_rotation=f32(local),
        root_translation=f32(root),
        dof_pos=f32(dof_pos),
        body_pos=f32(body_pos),
        body_rot=f32(body_rot),
        fps=float(fps),
        ground_shift=float(shift),
        limit_report=joint_limit_report(robot, dof_pos),
    )


def source_to_target_rotation(config: RetargetConfig, dtype=torch.float64) -> torch.Tensor:
    """The rotation [4] taking source world axes to the target's: root_rotation after the
    y-up -> z-up turn for y-up sources."""
    R = rot.quat_normalize(torch.tensor(config.root_rotation, dtype=dtype))
    if config.source_up == "y":
        R = rot.quat_mul(R, torch.tensor(Y_UP_TO_Z_UP, dtype=dtype))
    return R


def ground_shift(robot, config: RetargetConfig, body_pos, body_rot, geoms: GeomSet | None = None) -> float:
    """Constant height (m) to add to the root so the clip's lowest point sits at root_height_offset."""
    if config.ground == "none":
        return float(config.root_height_offset)
    if config.ground == "origins":
        lowest = body_pos[..., 2].min()
    else:
        lowest = lowest_geom_height(geoms if geoms is not None else robot_geoms(robot), body_pos, body_rot).min()
    return float(config.root_height_offset - lowest)


def dof_round_trip_error(robot: RobotDescription, local_rot: torch.Tensor) -> float:
    """Largest angle (rad) between the local rotations and those rebuilt from their dof positions
    (0 when every body's rotation is exactly what its joints can do)."""
    local_rot = rot.quat_normalize(local_rot.double())
    dof = local_rot_to_dof_pos(robot, local_rot)
    rebuilt = dof_pos_to_local_rot(robot, dof)
    return float(rot.quat_angle_between(rebuilt[..., 1:, :], local_rot[..., 1:, :]).max())


# ----------------------------------------------------------------------------------------------
# T-poses and whole clips

SOURCE_TPOSE_MODES = ("first_frame", "rest", "auto")
TARGET_TPOSE_MODES = ("arms_out", "rest")


def _up_rotation(up: str, dtype) -> torch.Tensor:
    return torch.tensor(Y_UP_TO_Z_UP if up == "y" else (0.0, 0.0, 0.0, 1.0), dtype=dtype)


def shortest_arc(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Smallest rotation [..., 4] taking direction u [..., 3] onto direction v [..., 3]
    (opposite directions: a half turn about an axis perpendicular to u)."""
    u, v = _unit(u), _unit(v)
    axis = torch.linalg.cross(u, v, dim=-1)
    sin, cos = axis.norm(dim=-1), (u * v).sum(-1)
    fallback = torch.linalg.cross(u, torch.tensor([1.0, 0.0, 0.0], dtype=u.dtype).expand_as(u), dim=-1)
    fallback = torch.where(fallback.norm(dim=-1, keepdim=True) < 1e-6,
                           torch.linalg.cross(u, torch.tensor([0.0, 1.0, 0.0], dtype=u.dtype).expand_as(u), dim=-1),
                           fallback)
    axis = torch.where(sin.unsqueeze(-1) < 1e-9, fallback, axis)
    return rot.quat_from_axis_angle(_unit(axis), torch.atan2(sin, cos))


def humanoid_tpose(robot: RobotDescription, mode: str = "arms_out", arm_bodies=None) -> torch.Tensor:
    """Local rotations [B, 4] of the target's T-pose.

    "rest": the MJCF rest pose (arms hanging). "arms_out": the rest pose with each arm body
    (default: the bodies named '*upper_arm') turned so its bone points straight out sideways,
    toward the side it hangs on: a T-pose like the mocap ones.
    """
    if mode not in TARGET_TPOSE_MODES:
        raise ConfigError(f"retarget key 'target_tpose': '{mode}' is neither a T-pose file nor one of "
                          f"{', '.join(TARGET_TPOSE_MODES)}")
    local = rot.quat_identity(robot.num_bodies, dtype=torch.float64)
    if mode == "rest":
        return local
    arms = [n for n in robot.body_names if n.endswith("upper_arm")] if arm_bodies is None else list(arm_bodies)
    for name in arms:
        b = robot.body_id(name)
        child = _limb_child(robot, b)
        if child is None:
            raise ModelError(f"{robot.mjcf_path}: T-pose arm body '{name}' has no child to point sideways")
        bone = robot.local_translation[child].double()
        side = 1.0 if float(robot.local_translation[b, 1]) >= 0 else -1.0
        local[b] = shortest_arc(bone, torch.tensor([0.0, side, 0.0], dtype=torch.float64))
    return local


def auto_source_tpose(
    src_skeleton, robot: RobotDescription, config: RetargetConfig, tgt_tpose_local: torch.Tensor
) -> torch.Tensor:
    """A source T-pose [Js, 4] (global rotations, source frame) built from the skeleton's rest
    pose (all local rotations identity): each mapped joint with exactly one mapped child is
    turned so its bone (joint -> that child) points like the target's bone in the target T-pose;
    limb ends (no mapped child) turn with their mapped parent; branching joints stay. For sources whose rest pose is only roughly a T-pose (CMU: legs splayed 20 deg) and that
    have no T-pose frame."""
    names = list(src_skeleton.node_names)
    src_idx, tgt_idx = resolve_joint_map(config.joint_map, names, robot.body_names)
    dtype = torch.float64
    J = len(names)
    rest_rot = rot.quat_identity(J, dtype=dtype)
    rest_pos, _ = forward_kinematics(src_skeleton.parent_indices, src_skeleton.local_translation.to(dtype),
                                     rest_rot, torch.zeros(3, dtype=dtype), rot.quat_identity((), dtype=dtype))
    tgt_pos, _ = forward_kinematics(robot.parent_indices, robot.local_translation.to(dtype), tgt_tpose_local.to(dtype),
                                    torch.zeros(3, dtype=dtype), rot.quat_identity((), dtype=dtype))
    R_inv = rot.quat_inverse(source_to_target_rotation(config, dtype))
    tgt_parents = robot.parent_indices.tolist()
    mapped_tgt = {int(t): int(s) for s, t in zip(src_idx, tgt_idx)}

    def mapped_parent(t: int):
        p = tgt_parents[t]
        while p >= 0 and p not in mapped_tgt:
            p = tgt_parents[p]
        return p

    children = {t: [c for c in mapped_tgt if mapped_parent(c) == t] for t in mapped_tgt}
    tpose = rest_rot.clone()
    for t in sorted(mapped_tgt):  # parents before children
        s = mapped_tgt[t]
        if len(children[t]) == 1:
            c = children[t][0]
            src_bone = rest_pos[mapped_tgt[c]] - rest_pos[s]
            tgt_bone = rot.quat_rotate(R_inv, tgt_pos[c] - tgt_pos[t])
            if src_bone.norm() > 1e-9 and tgt_bone.norm() > 1e-9:
                tpose[s] = shortest_arc(src_bone, tgt_bone)
        elif not children[t] and mapped_parent(t) >= 0:
            # An end (hand, foot, head) turns with its limb, keeping its rest pose relative to it.
            tpose[s] = tpose[mapped_tgt[mapped_parent(t)]]
    return tpose


def retarget_clip(
    source,
    robot: RobotDescription,
    config: RetargetConfig,
    source_tpose="first_frame",
    target_tpose="arms_out",
    tpose_up: str | None = None,
    fps: float | None = None,
    start: int = 0,
    end: int | None = None,
):
    """Retarget a source MotionClip onto `robot`; returns (MotionClip on the robot, RetargetResult).

    source_tpose: "first_frame" (frame 0 of the untrimmed source), "rest" (all local rotations
        identity), "auto" (see auto_source_tpose) or a MotionClip holding the T-pose (frame 0;
        joints matched by name) whose up axis is `tpose_up` (default: the source's).
    target_tpose: "arms_out", "rest" (see humanoid_tpose) or a MotionClip on the target's bodies
        (matched by name; bodies it lacks keep the identity).
    fps: output frame rate (default: the source's); start / end: frames of the resampled clip
        to keep (end exclusive, Python slice semantics), i.e. counted at the output rate.
    """
    from ase_humanoid.motion.clip import MotionClip
    from ase_humanoid.motion.skeleton import Skeleton

    dtype = torch.float64
    tgt_tpose_local = _target_tpose_local(robot, target_tpose)
    names = list(source.skeleton.node_names)
    if isinstance(source_tpose, str):
        if source_tpose == "first_frame":
            tpose_names, tpose_global = names, source.global_rotation[0].to(dtype)
        elif source_tpose == "rest":
            tpose_names, tpose_global = names, rot.quat_identity(len(names), dtype=dtype)
        elif source_tpose == "auto":
            tpose_names, tpose_global = names, auto_source_tpose(source.skeleton, robot, config, tgt_tpose_local)
        else:
            raise ConfigError(f"retarget key 'tpose': '{source_tpose}' is neither a T-pose file nor one of "
                              f"{', '.join(SOURCE_TPOSE_MODES)}")
    else:
        tpose_names = list(source_tpose.skeleton.node_names)
        tpose_global = source_tpose.global_rotation[0].to(dtype)
        up = tpose_up or config.source_up
        if up not in UP_AXES:
            raise ConfigError(f"retarget key 'tpose_up': '{up}' is not one of {', '.join(UP_AXES)}")
        # Express the T-pose in the source's world axes.
        change = rot.quat_mul(rot.quat_inverse(_up_rotation(config.source_up, dtype)), _up_rotation(up, dtype))
        tpose_global = rot.quat_mul(change, tpose_global)

    clip = source.to(dtype=dtype)
    if fps is not None and float(fps) != clip.fps:
        clip = clip.resample(fps)
    clip = clip.trim(start, end)
    result = retarget_motion(names, clip.global_rotation, clip.global_translation[:, 0], tpose_names, tpose_global,
                             robot, config, clip.fps, tgt_tpose_local_rot=tgt_tpose_local)
    skeleton = Skeleton(robot.body_names, robot.parent_indices, robot.local_translation.to(torch.float32))
    out = MotionClip(skeleton, result.local_rotation, result.root_translation, clip.fps)
    return out, result


def _target_tpose_local(robot: RobotDescription, target_tpose) -> torch.Tensor:
    if isinstance(target_tpose, str):
        return humanoid_tpose(robot, target_tpose)
    local = rot.quat_identity(robot.num_bodies, dtype=torch.float64)
    tp_names = list(target_tpose.skeleton.node_names)
    if tp_names[0] != robot.body_names[0]:
        raise ConfigError(f"target T-pose root '{tp_names[0]}' is not the humanoid's root '{robot.body_names[0]}'")
    tp_local = target_tpose.local_rotation[0].to(torch.float64)
    for b, name in enumerate(robot.body_names):
        if name in tp_names:
            local[b] = tp_local[tp_names.index(name)]
    return local


# ----------------------------------------------------------------------------------------------
# config files, presets and source files (used by tools/retarget_motion.py)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PRESET_DIR = PROJECT_ROOT / "cfg" / "retarget" / "presets"
SOURCE_FORMATS = {".fbx": "fbx", ".bvh": "bvh", ".amc": "amc", ".npy": "npy"}
TARGETS = ("amp_humanoid", "sword_shield")
# Keys a config may set, with what they mean (documented in cfg/retarget/example_*.yaml).
CONFIG_KEYS = (
    "preset", "source", "asf", "tpose", "tpose_up", "target", "target_tpose", "joint_map", "joint_maps",
    "root_rotation", "scale", "root_height_offset", "ground", "source_up", "project_hinges",
    "fps", "start", "end", "out",
)
# Keys whose value may be a mapping {source format: value}.
PER_FORMAT_KEYS = ("scale", "tpose", "tpose_up", "source_up", "root_height_offset", "ground")


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def _read_yaml(path: Path, what: str) -> dict:
    import yaml

    if not path.is_file():
        raise ConfigError(f"{what} not found: {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: malformed YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of retarget settings")
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; valid keys: {', '.join(CONFIG_KEYS)}")
    return data


def load_retarget_settings(config_path=None, preset: str | None = None, overrides: dict | None = None) -> dict:
    """Merge preset < config file < overrides (None values in overrides are ignored).

    Relative paths in a config file (source, asf, tpose, target_tpose, out) are taken relative
    to the project root when they exist there, else to the config file's folder.
    """
    settings: dict = {}
    file_cfg = {}
    if config_path is not None:
        config_path = Path(config_path)
        file_cfg = _read_yaml(config_path, "retarget config")
        for key in ("source", "asf", "tpose", "target_tpose", "out"):
            value = file_cfg.get(key)
            if isinstance(value, str) and value.endswith((".npy", ".fbx", ".bvh", ".amc", ".asf")):
                file_cfg[key] = str(_resolve_path(value, config_path.parent))
    preset = (overrides or {}).get("preset") or preset or file_cfg.get("preset")
    if preset:
        path = PRESET_DIR / f"{preset}.yaml"
        if not path.is_file():
            raise ConfigError(f"unknown retarget preset '{preset}'; presets: {', '.join(preset_names())}")
        settings.update(_read_yaml(path, "retarget preset"))
    settings.update(file_cfg)
    settings.update({k: v for k, v in (overrides or {}).items() if v is not None})
    settings.pop("preset", None)
    return settings


def _resolve_path(value: str, base: Path) -> Path:
    p = Path(value)
    if p.is_absolute():
        return p
    return PROJECT_ROOT / p if (PROJECT_ROOT / p).exists() or not (base / p).exists() else base / p


def source_format(path) -> str:
    fmt = SOURCE_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ConfigError(f"retarget key 'source': {path} has an unsupported extension; "
                          f"supported: {', '.join(SOURCE_FORMATS)}")
    return fmt


def load_source(path, asf=None):
    """A source MotionClip in the file's own units and axes (any format `load_motion` reads)."""
    from ase_humanoid.motion.io import load_motion

    source_format(path)
    options = {"asf": asf} if asf and source_format(path) == "amc" else {}
    return load_motion(path, dtype=torch.float64, **options)


def _per_format(settings: dict, key: str, fmt: str, default=None):
    value = settings.get(key, default)
    if isinstance(value, dict) and key in PER_FORMAT_KEYS:
        if fmt not in value:
            raise ConfigError(f"retarget key '{key}': no value for source format '{fmt}' in {value}")
        value = value[fmt]
    return value


def mirror_joint_map(joint_map: dict[str, str]) -> dict[str, str]:
    """Add the right side of a joint map given for the left side: an entry whose target starts
    with 'left_' gets a twin with 'Left' -> 'Right' (or a leading 'l' -> 'r') in the source name and
    'left_' -> 'right_' in the target; entries already present are kept."""
    full = dict(joint_map)
    for src, tgt in joint_map.items():
        if not tgt.startswith("left_"):
            continue
        if "Left" in src:
            twin = src.replace("Left", "Right")
        elif src.startswith("l"):
            twin = "r" + src[1:]
        else:
            continue
        full.setdefault(twin, "right_" + tgt[len("left_"):])
    return full


def choose_joint_map(settings: dict, source_names, where: str = "retarget config") -> dict[str, str]:
    """`joint_map` if given, else the first of `joint_maps` whose source joints all exist."""
    source_names = list(source_names)
    if settings.get("joint_map"):
        jm = settings["joint_map"]
        if not isinstance(jm, dict):
            raise ConfigError(f"{where}: 'joint_map' must map source joint names to target body names")
        return mirror_joint_map({str(k): str(v) for k, v in jm.items()})
    variants = settings.get("joint_maps") or {}
    if not variants:
        raise ConfigError(f"{where}: no 'joint_map' (and no preset with 'joint_maps'); "
                          f"source joints: {', '.join(source_names)}")
    for name, jm in variants.items():
        full = mirror_joint_map({str(k): str(v) for k, v in jm.items()})
        if all(s in source_names for s in full):
            return full
    raise ConfigError(f"{where}: none of the joint maps {list(variants)} fits the source skeleton; "
                      f"valid source joints: {', '.join(source_names)}")


def retarget_from_settings(settings: dict):
    """Run a whole retargeting job from merged settings (see load_retarget_settings).

    Returns (MotionClip on the target humanoid, RetargetResult, RobotDescription). Does not
    write anything.
    """
    from ase_humanoid.motion.poselib_npy import load_poselib
    from ase_humanoid.robots.description import load_robot

    if not settings.get("source"):
        raise ConfigError("retarget key 'source' is missing: the motion file to retarget")
    fmt = source_format(settings["source"])
    target = settings.get("target", "amp_humanoid")
    if target not in TARGETS:
        raise ConfigError(f"retarget key 'target': '{target}' is not one of {', '.join(TARGETS)}")
    robot = load_robot(target)
    source = load_source(settings["source"], settings.get("asf"))
    config = RetargetConfig(
        joint_map=choose_joint_map(settings, source.skeleton.node_names),
        root_rotation=tuple(float(x) for x in settings.get("root_rotation", (0.0, 0.0, 0.0, 1.0))),
        scale=float(_per_format(settings, "scale", fmt, 1.0)),
        root_height_offset=float(_per_format(settings, "root_height_offset", fmt, 0.0)),
        ground=str(_per_format(settings, "ground", fmt, "geoms")),
        source_up=str(_per_format(settings, "source_up", fmt, "z")),
        project_hinges=bool(settings.get("project_hinges", True)),
    )
    tpose = _per_format(settings, "tpose", fmt, "first_frame")
    if isinstance(tpose, str) and tpose not in SOURCE_TPOSE_MODES:
        tpose = load_poselib(_resolve_path(tpose, PROJECT_ROOT), dtype=torch.float64)
    target_tpose = settings.get("target_tpose", "arms_out")
    if isinstance(target_tpose, str) and target_tpose not in TARGET_TPOSE_MODES:
        target_tpose = load_poselib(_resolve_path(target_tpose, PROJECT_ROOT), dtype=torch.float64)
    tpose_up = _per_format(settings, "tpose_up", fmt, None)
    fps = settings.get("fps")
    start = int(settings.get("start") or 0)
    end = settings.get("end")
    clip, result = retarget_clip(source, robot, config, source_tpose=tpose, target_tpose=target_tpose,
                                 tpose_up=tpose_up, fps=float(fps) if fps else None, start=start,
                                 end=int(end) if end is not None else None)
    return clip, result, robot
