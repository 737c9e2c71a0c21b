"""Quaternion, exponential-map and heading math: the one home of rotation code in the package.

Every quaternion is x, y, z, w (last dimension 4). All functions are batched torch and broadcast
over leading dimensions; none loops in Python.
"""

from __future__ import annotations

import math

import torch

_EPS = 1e-9


def quat_identity(shape=(), dtype=torch.float32, device=None) -> torch.Tensor:
    """Identity rotations `[*shape, 4]`."""
    if isinstance(shape, int):
        shape = (shape,)
    q = torch.zeros(*shape, 4, dtype=dtype, device=device)
    q[..., 3] = 1.0
    return q


def quat_normalize(q: torch.Tensor) -> torch.Tensor:
    return q / q.norm(dim=-1, keepdim=True).clamp_min(_EPS)


def quat_conjugate(q: torch.Tensor) -> torch.Tensor:
    return torch.cat([-q[..., :3], q[..., 3:]], dim=-1)


def quat_inverse(q: torch.Tensor) -> torch.Tensor:
    """Inverse of any non-zero quaternion (the conjugate for unit quaternions)."""
    return quat_conjugate(q) / (q * q).sum(dim=-1, keepdim=True).clamp_min(_EPS)


def matmul_exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`a @ b` (`[..., m, k] @ [..., k, p]`) with full float32 products, for geometry.

    On the CPU at the default matmul precision this is one BLAS call, the fastest way to do many
    tiny sums of products. Elsewhere (GPUs may use TF32, ~1e-3 relative error, when a training
    script allows it) it is a broadcast multiply and sum, which is exact at any setting.
    """
    if _blas_is_exact(a):
        return a @ b
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2)


def vecmat_exact(v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """Row vectors times one matrix, `[..., k] @ [k, p] -> [..., p]`, like `matmul_exact`."""
    if _blas_is_exact(v):
        return v @ m
    return (v.unsqueeze(-1) * m).sum(-2)


def _blas_is_exact(t: torch.Tensor) -> bool:
    return t.device.type == "cpu" and torch.get_float32_matmul_precision() == "highest"


def _quadratic_form_table(entries, dtype, device) -> torch.Tensor:
    """`[16, K]` table T with (q q^T).flatten() @ T = the K quadratic forms `entries` of q (each a
    list of (i, j, coefficient) terms of q_i q_j)."""
    table = torch.zeros(16, len(entries), dtype=dtype, device=device)
    for k, terms in enumerate(entries):
        for i, j, coefficient in terms:
            table[4 * i + j, k] += coefficient
    return table


_X, _Y, _Z, _W = range(4)
# Hamilton product a * b: component k is the sum over (i, j, sign) of sign a[i] b[j].
_MUL_TERMS = (
    ((_W, _X, 1.0), (_X, _W, 1.0), (_Y, _Z, 1.0), (_Z, _Y, -1.0)),
    ((_W, _Y, 1.0), (_X, _Z, -1.0), (_Y, _W, 1.0), (_Z, _X, 1.0)),
    ((_W, _Z, 1.0), (_X, _Y, 1.0), (_Y, _X, -1.0), (_Z, _W, 1.0)),
    ((_W, _W, 1.0), (_X, _X, -1.0), (_Y, _Y, -1.0), (_Z, _Z, -1.0)),
)
# The rotated x axis (tangent) and z axis (normal) of a unit quaternion as quadratic forms:
# the first and third columns of its rotation matrix.
_TAN_NORM_TERMS = (
    ((_W, _W, 1.0), (_X, _X, 1.0), (_Y, _Y, -1.0), (_Z, _Z, -1.0)),
    ((_X, _Y, 2.0), (_W, _Z, 2.0)),
    ((_X, _Z, 2.0), (_W, _Y, -2.0)),
    ((_X, _Z, 2.0), (_W, _Y, 2.0)),
    ((_Y, _Z, 2.0), (_W, _X, -2.0)),
    ((_W, _W, 1.0), (_X, _X, -1.0), (_Y, _Y, -1.0), (_Z, _Z, 1.0)),
)
# Up to this many quaternions the product is one outer product and one small matmul (2 ops);
# above it the 4x wider outer products cost more than the ~30 elementwise ops they save.
_MUL_MATMUL_MAX = 4096
_tables_cache: dict = {}


def _table(name: str, dtype, device) -> torch.Tensor:
    key = (name, dtype, device)
    table = _tables_cache.get(key)
    if table is None:
        if name == "select":  # [2, 4, 16]: column 4 i + j picks component i / component j
            table = torch.zeros(2, 4, 16, dtype=dtype, device=device)
            for k in range(16):
                table[0, k // 4, k] = table[1, k % 4, k] = 1.0
        else:
            entries = {"mul": _MUL_TERMS, "tan_norm": _TAN_NORM_TERMS}[name]
            table = _quadratic_form_table(entries, dtype, device)
        _tables_cache[key] = table
    return table


def _outer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`[..., 16]`: a[i] b[j] at 4 i + j (broadcast over leading dims).

    Spread by two 0/1 selection matmuls (exact) and one contiguous product: a broadcast
    `a[..., :, None] * b[..., None, :]` has a 4-wide inner loop and costs several times more.
    """
    select = _table("select", a.dtype, a.device)
    return vecmat_exact(a, select[0]) * vecmat_exact(b, select[1])


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product a * b: rotating by the result applies b first, then a."""
    if a.dtype == b.dtype and max(a.numel(), b.numel()) <= 4 * _MUL_MATMUL_MAX:
        return vecmat_exact(_outer(a, b), _table("mul", a.dtype, a.device))
    ax, ay, az, aw = a.unbind(-1)
    bx, by, bz, bw = b.unbind(-1)
    return torch.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        dim=-1,
    )


def quat_rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate vectors `v [..., 3]` by unit quaternions `q [..., 4]`."""
    xyz, w = q[..., :3], q[..., 3:]
    if xyz.shape != v.shape:  # linalg.cross does not broadcast
        xyz, v = torch.broadcast_tensors(xyz, v)
    t = 2.0 * torch.linalg.cross(xyz, v, dim=-1)
    return v + w * t + torch.linalg.cross(xyz, t, dim=-1)


def quat_rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate vectors by the inverse of unit quaternions `q`."""
    return quat_rotate(quat_conjugate(q), v)


def quat_from_axis_angle(axis: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """`axis [..., 3]` (unit), `angle [...]` radians -> `[..., 4]`."""
    half = 0.5 * angle.unsqueeze(-1)
    return torch.cat([axis * torch.sin(half), torch.cos(half)], dim=-1)


def quat_to_axis_angle(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit quaternion -> (axis `[..., 3]`, angle `[...]` in [0, pi]).

    The sign of q is chosen so the angle is the short way round; for a (near) zero rotation
    the axis is x.
    """
    q = torch.where(q[..., 3:] < 0, -q, q)
    xyz = q[..., :3]
    sin_half = xyz.norm(dim=-1)
    angle = 2.0 * torch.atan2(sin_half, q[..., 3])
    default_axis = torch.zeros_like(xyz)
    default_axis[..., 0] = 1.0
    small = sin_half < 1e-12
    axis = torch.where(small.unsqueeze(-1), default_axis, xyz / sin_half.clamp_min(1e-12).unsqueeze(-1))
    return axis, angle


def exp_map_to_quat(e: torch.Tensor) -> torch.Tensor:
    """Exponential map (axis * angle) `[..., 3]` -> unit quaternion `[..., 4]`."""
    angle = e.norm(dim=-1)
    half = 0.5 * angle
    # sin(half)/angle with its Taylor series near zero, so tiny rotations stay accurate.
    small = angle < 1e-4
    scale = torch.where(small, 0.5 - angle * angle / 48.0, torch.sin(half) / angle.clamp_min(1e-12))
    return torch.cat([e * scale.unsqueeze(-1), torch.cos(half).unsqueeze(-1)], dim=-1)


def quat_to_exp_map(q: torch.Tensor) -> torch.Tensor:
    """Unit quaternion -> exponential map `[..., 3]` with angle in [0, pi]."""
    axis, angle = quat_to_axis_angle(q)
    return axis * angle.unsqueeze(-1)


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """Unit quaternion -> rotation matrix `[..., 3, 3]`."""
    x, y, z, w = q.unbind(-1)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = [
        torch.stack([1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)], -1),
        torch.stack([2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)], -1),
        torch.stack([2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)], -1),
    ]
    return torch.stack(rows, dim=-2)


def matrix_to_quat(m: torch.Tensor) -> torch.Tensor:
    """Rotation matrix `[..., 3, 3]` -> unit quaternion `[..., 4]` with w >= 0.

    Uses the largest of the four candidate denominators for numerical stability.
    """
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    candidates = torch.stack(
        [
            torch.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1], 1 + trace], -1),
            torch.stack([1 + m00 - m11 - m22, m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0], m[..., 2, 1] - m[..., 1, 2]], -1),
            torch.stack([m[..., 0, 1] + m[..., 1, 0], 1 - m00 + m11 - m22, m[..., 1, 2] + m[..., 2, 1], m[..., 0, 2] - m[..., 2, 0]], -1),
            torch.stack([m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], 1 - m00 - m11 + m22, m[..., 1, 0] - m[..., 0, 1]], -1),
        ],
        dim=-2,
    )  # [..., 4 candidates, 4]
    diag = torch.stack([1 + trace, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    best = diag.argmax(dim=-1, keepdim=True)
    q = torch.gather(candidates, -2, best.unsqueeze(-1).expand(*best.shape[:-1], 1, 4)).squeeze(-2)
    q = quat_normalize(q)
    return torch.where(q[..., 3:] < 0, -q, q)


def quat_to_tan_norm(q: torch.Tensor) -> torch.Tensor:
    """6D rotation encoding `[..., 6]` of unit quaternions: the rotated x axis (tangent) and z
    axis (normal), as quadratic forms of q (one outer product and one small matmul)."""
    return vecmat_exact(_outer(q, q), _table("tan_norm", q.dtype, q.device))


def heading_frame_matrix(q: torch.Tensor) -> torch.Tensor:
    """`[..., 3, 3]` matrix M with `v @ M` = row vectors `v [..., k, 3]` (world frame) in the
    heading frame of q: the rotation `calc_heading_quat_inv(q)` applies, as a matrix, so that
    many vectors per quaternion take one small matmul.

    The heading direction is the rotated x axis projected on the ground plane; when its
    ground-plane length is within rounding noise of 0 (x axis vertical, where the heading is
    undefined) the heading is 0, as atan2(0, 0) gives in calc_heading.
    """
    x, y, z, w = q.unbind(-1)
    # First two components of the rotated x axis (the tangent of quat_to_tan_norm).
    hx = (w * w).addcmul_(x, x).addcmul_(y, y, value=-1.0).addcmul_(z, z, value=-1.0)
    hy = (x * y).addcmul_(w, z).mul_(2.0)
    # No ground-plane length beyond rounding noise (x axis vertical): heading 0.
    flat = (hx * hx).addcmul_(hy, hy) < (8.0 * torch.finfo(q.dtype).eps) ** 2
    hx, hy = hx.masked_fill_(flat, 1.0), hy.masked_fill_(flat, 0.0)
    inv_length = (hx * hx).addcmul_(hy, hy).rsqrt_()
    cos, sin = hx * inv_length, hy * inv_length
    zero, one = torch.zeros_like(cos), torch.ones_like(cos)
    # v' = Rz(-heading) v for column vectors; for row vectors v' = v Rz(-heading)^T = v Rz(heading).
    return torch.stack([cos, -sin, zero, sin, cos, zero, zero, zero, one], dim=-1).unflatten(-1, (3, 3))


def calc_heading(q: torch.Tensor) -> torch.Tensor:
    """Yaw angle `[...]` of the rotated x axis projected on the ground plane."""
    ref = torch.zeros(*q.shape[:-1], 3, dtype=q.dtype, device=q.device)
    ref[..., 0] = 1.0
    direction = quat_rotate(q, ref)
    return torch.atan2(direction[..., 1], direction[..., 0])


def _quat_about_z(angle: torch.Tensor) -> torch.Tensor:
    axis = torch.zeros(*angle.shape, 3, dtype=angle.dtype, device=angle.device)
    axis[..., 2] = 1.0
    return quat_from_axis_angle(axis, angle)


def calc_heading_quat(q: torch.Tensor) -> torch.Tensor:
    """Rotation about z by the heading of q."""
    return _quat_about_z(calc_heading(q))


def calc_heading_quat_inv(q: torch.Tensor) -> torch.Tensor:
    """Rotation about z by minus the heading of q: maps world vectors into the heading frame."""
    return _quat_about_z(-calc_heading(q))


def remove_heading(q: torch.Tensor) -> torch.Tensor:
    """q with its heading removed: calc_heading_quat_inv(q) * q."""
    return quat_mul(calc_heading_quat_inv(q), q)


def slerp(q0: torch.Tensor, q1: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Spherical linear interpolation along the shortest path; `t [...]` or `[..., 1]`."""
    t = torch.as_tensor(t, dtype=q0.dtype, device=q0.device)
    if t.dim() < q0.dim() or t.shape[-1:] != (1,):
        t = t.unsqueeze(-1)
    cos_half = (q0 * q1).sum(dim=-1, keepdim=True)
    q1 = torch.where(cos_half < 0, -q1, q1)
    cos_half = cos_half.abs().clamp(max=1.0)
    half = torch.acos(cos_half)
    sin_half = torch.sqrt((1.0 - cos_half * cos_half).clamp_min(0.0))
    # Fall back to normalised lerp when the two rotations nearly coincide.
    near = sin_half < 1e-6
    w0 = torch.where(near, 1.0 - t, torch.sin((1.0 - t) * half) / sin_half.clamp_min(1e-12))
    w1 = torch.where(near, t, torch.sin(t * half) / sin_half.clamp_min(1e-12))
    return quat_normalize(w0 * q0 + w1 * q1)


def quat_angle_between(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Angle `[...]` in [0, pi] of the rotation a^-1 b."""
    # atan2 of the relative rotation's vector and scalar parts stays accurate near 0, where
    # acos of a dot product loses half the float digits.
    rel = quat_mul(quat_conjugate(a), b)
    return 2.0 * torch.atan2(rel[..., :3].norm(dim=-1), rel[..., 3].abs())


def wxyz_to_xyzw(q):
    """Reorder MuJoCo's w, x, y, z to x, y, z, w (torch or numpy)."""
    return q[..., [1, 2, 3, 0]]


def xyzw_to_wxyz(q):
    """Reorder x, y, z, w to MuJoCo's w, x, y, z (torch or numpy)."""
    return q[..., [3, 0, 1, 2]]


def quat_from_euler_xyz_intrinsic(angles: torch.Tensor) -> torch.Tensor:
    """`[..., 3]` angles (a, b, c) -> Rx(a) Ry(b) Rz(c): three hinges x, y, z applied in order."""
    zeros = torch.zeros_like(angles[..., 0])
    ones = torch.ones_like(zeros)
    x_axis = torch.stack([ones, zeros, zeros], -1)
    y_axis = torch.stack([zeros, ones, zeros], -1)
    z_axis = torch.stack([zeros, zeros, ones], -1)
    qx = quat_from_axis_angle(x_axis, angles[..., 0])
    qy = quat_from_axis_angle(y_axis, angles[..., 1])
    qz = quat_from_axis_angle(z_axis, angles[..., 2])
    return quat_mul(quat_mul(qx, qy), qz)


def normalize_angle(x: torch.Tensor) -> torch.Tensor:
    """Wrap angles to [-pi, pi)."""
    return torch.remainder(x + math.pi, 2.0 * math.pi) - math.pi


def quat_from_euler(angles: torch.Tensor, order: str) -> torch.Tensor:
    """Rotations about named axes, composed in the listed order: `angles [..., K]` radians,
    `order` K letters from 'xyz' (case-insensitive, e.g. 'zyx') -> R = R_order[0] R_order[1] ...

    This is the BVH channel convention and the Acclaim ASF/AMC one read as "R_last ... R_first"
    when given the reversed order; quat_from_euler(a, 'xyz') equals quat_from_euler_xyz_intrinsic(a).
    """
    order = order.lower()
    if len(order) != angles.shape[-1] or any(a not in "xyz" for a in order):
        raise ValueError(f"order {order!r} must name one of x, y, z per angle ({angles.shape[-1]} angles)")
    result = quat_identity(angles.shape[:-1], dtype=angles.dtype, device=angles.device)
    for k, axis_name in enumerate(order):
        axis = torch.zeros(3, dtype=angles.dtype, device=angles.device)
        axis["xyz".index(axis_name)] = 1.0
        result = quat_mul(result, quat_from_axis_angle(axis.expand(*angles.shape[:-1], 3), angles[..., k]))
    return result


# ---- component-major ("planes") variants -------------------------------------------------------
# Quaternions `[4, ...]` and vectors `[3, ...]` with the component first, so that every op works
# on contiguous planes of many elements. On a CPU this is several times faster than the
# `[..., 4]` forms for the thousands of small rotations of the kinematics hot path, where a
# strided 3- or 4-wide last dimension makes every op slow.


def cross_planes(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cross product of `[3, ...]` vectors (broadcast over the trailing dims)."""
    ax, ay, az = a.unbind(0)
    bx, by, bz = b.unbind(0)
    return torch.stack([(ay * bz).addcmul_(az, by, value=-1.0), (az * bx).addcmul_(ax, bz, value=-1.0),
                        (ax * by).addcmul_(ay, bx, value=-1.0)])


def quat_mul_planes(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product of `[4, ...]` quaternions (x, y, z, w planes; broadcast)."""
    ax, ay, az, aw = a.unbind(0)
    bx, by, bz, bw = b.unbind(0)
    return torch.stack([
        (aw * bx).addcmul_(ax, bw).addcmul_(ay, bz).addcmul_(az, by, value=-1.0),
        (aw * by).addcmul_(ax, bz, value=-1.0).addcmul_(ay, bw).addcmul_(az, bx),
        (aw * bz).addcmul_(ax, by).addcmul_(ay, bx, value=-1.0).addcmul_(az, bw),
        (aw * bw).addcmul_(ax, bx, value=-1.0).addcmul_(ay, by, value=-1.0).addcmul_(az, bz, value=-1.0),
    ])


def quat_rotate_planes(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate `[3, ...]` vectors by unit `[4, ...]` quaternions (broadcast)."""
    xyz, w = q[:3], q[3:]
    t = 2.0 * cross_planes(xyz, v)
    return (v + w * t).add_(cross_planes(xyz, t))
