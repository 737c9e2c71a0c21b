"""Rotation math against MuJoCo's own quaternion functions and against identities."""

import math

import mujoco
import numpy as np
import pytest
import torch

from ase_humanoid.utils import rotations as R


def random_quats(n, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return R.quat_normalize(torch.randn(n, 4, generator=g, dtype=dtype))


def mj_quat(q_xyzw):
    return np.asarray(R.xyzw_to_wxyz(q_xyzw), dtype=np.float64)


def test_mul_matches_mujoco():
    a, b = random_quats(50, 1), random_quats(50, 2)
    ours = R.quat_mul(a, b)
    for i in range(50):
        res = np.zeros(4)
        mujoco.mju_mulQuat(res, mj_quat(a[i]), mj_quat(b[i]))
        np.testing.assert_allclose(R.wxyz_to_xyzw(torch.from_numpy(res)), ours[i], atol=1e-12)


def test_rotate_matches_mujoco_and_keeps_length():
    q = random_quats(50, 3)
    v = torch.randn(50, 3, dtype=torch.float64)
    ours = R.quat_rotate(q, v)
    for i in range(50):
        res = np.zeros(3)
        mujoco.mju_rotVecQuat(res, v[i].numpy(), mj_quat(q[i]))
        np.testing.assert_allclose(res, ours[i], atol=1e-12)
    torch.testing.assert_close(ours.norm(dim=-1), v.norm(dim=-1))
    torch.testing.assert_close(R.quat_rotate_inverse(q, ours), v)


def test_rotate_broadcasts_one_quat_over_many_vectors():
    q = random_quats(1, 4)[0]
    v = torch.randn(7, 5, 3, dtype=torch.float64)
    out = R.quat_rotate(q, v)
    assert out.shape == (7, 5, 3)
    torch.testing.assert_close(out[3, 2], R.quat_rotate(q, v[3, 2]))


def test_inverse_identity():
    q = random_quats(100, 5)
    torch.testing.assert_close(R.quat_mul(q, R.quat_inverse(q)), R.quat_identity(100, dtype=torch.float64).expand(100, 4))
    # Non-unit quaternions too.
    q2 = q * 3.0
    torch.testing.assert_close(R.quat_mul(q2, R.quat_inverse(q2)), R.quat_identity(100, dtype=torch.float64).expand(100, 4))


def test_axis_angle_and_exp_map_match_mujoco():
    axis = torch.nn.functional.normalize(torch.randn(30, 3, dtype=torch.float64), dim=-1)
    angle = torch.rand(30, dtype=torch.float64) * math.pi
    q = R.quat_from_axis_angle(axis, angle)
    for i in range(30):
        res = np.zeros(4)
        mujoco.mju_axisAngle2Quat(res, axis[i].numpy(), float(angle[i]))
        np.testing.assert_allclose(R.wxyz_to_xyzw(torch.from_numpy(res)), q[i], atol=1e-12)
    e = axis * angle.unsqueeze(-1)
    for i in range(30):
        vel = np.zeros(3)
        mujoco.mju_quat2Vel(vel, mj_quat(q[i]), 1.0)
        np.testing.assert_allclose(vel, e[i], atol=1e-9)


def test_exp_map_round_trip():
    q = random_quats(200, 6)
    q = torch.where(q[..., 3:] < 0, -q, q)
    torch.testing.assert_close(R.exp_map_to_quat(R.quat_to_exp_map(q)), q)
    e = torch.randn(200, 3, dtype=torch.float64)
    e = e / e.norm(dim=-1, keepdim=True) * torch.rand(200, 1, dtype=torch.float64) * (math.pi - 1e-3)
    torch.testing.assert_close(R.quat_to_exp_map(R.exp_map_to_quat(e)), e)
    tiny = torch.tensor([[1e-9, -2e-9, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(R.quat_to_exp_map(R.exp_map_to_quat(tiny)), tiny, atol=1e-15, rtol=0)


def test_matrix_round_trip_matches_mujoco():
    q = random_quats(100, 7)
    m = R.quat_to_matrix(q)
    for i in range(10):
        res = np.zeros(9)
        mujoco.mju_quat2Mat(res, mj_quat(q[i]))
        np.testing.assert_allclose(res.reshape(3, 3), m[i], atol=1e-12)
    q_back = R.matrix_to_quat(m)
    sign = torch.sign((q_back * q).sum(-1, keepdim=True))
    torch.testing.assert_close(q_back * sign, q)


def test_tan_norm_is_rotated_axes():
    q = random_quats(20, 8)
    tn = R.quat_to_tan_norm(q)
    m = R.quat_to_matrix(q)
    torch.testing.assert_close(tn[:, :3], m[:, :, 0])
    torch.testing.assert_close(tn[:, 3:], m[:, :, 2])


def test_heading():
    yaw = torch.tensor([0.3, -2.0, 3.0], dtype=torch.float64)
    z = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64).expand(3, 3)
    x = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64).expand(3, 3)
    tilt = R.quat_from_axis_angle(x, torch.full((3,), 0.4, dtype=torch.float64))
    q = R.quat_mul(R.quat_from_axis_angle(z, yaw), tilt)
    torch.testing.assert_close(R.calc_heading(q), yaw)
    no_heading = R.remove_heading(q)
    torch.testing.assert_close(R.calc_heading(no_heading), torch.zeros(3, dtype=torch.float64))
    torch.testing.assert_close(no_heading, tilt)
    torch.testing.assert_close(R.quat_mul(R.calc_heading_quat(q), no_heading), q)


def test_slerp_matches_mujoco_integration():
    q0, q1 = random_quats(20, 9), random_quats(20, 10)
    for t in (0.0, 0.25, 0.5, 1.0):
        ours = R.slerp(q0, q1, torch.full((20,), t, dtype=torch.float64))
        for i in range(20):
            # Reference: q0 * exp(t * log(q0^-1 q1)) along the short arc, with MuJoCo's functions.
            diff = np.zeros(4)
            mujoco.mju_negQuat(diff, mj_quat(q0[i]))
            d = np.zeros(4)
            mujoco.mju_mulQuat(d, diff, mj_quat(q1[i]))
            if d[0] < 0:
                d = -d
            vel = np.zeros(3)
            mujoco.mju_quat2Vel(vel, d, 1.0)
            ref = mj_quat(q0[i]).copy()
            mujoco.mju_quatIntegrate(ref, vel, t)
            ours_i = mj_quat(ours[i])
            assert min(np.abs(ours_i - ref).max(), np.abs(ours_i + ref).max()) < 1e-9
    # The endpoints are exact and the path is shortest.
    torch.testing.assert_close(R.slerp(q0, q0, 0.5), q0)


def test_angle_between_and_euler():
    a = random_quats(10, 11)
    axis = torch.nn.functional.normalize(torch.randn(10, 3, dtype=torch.float64), dim=-1)
    ang = torch.rand(10, dtype=torch.float64) * 3.0
    b = R.quat_mul(a, R.quat_from_axis_angle(axis, ang))
    torch.testing.assert_close(R.quat_angle_between(a, b), ang)
    angles = torch.tensor([[0.3, -0.5, 1.1]], dtype=torch.float64)
    expected = np.zeros(4)
    mujoco.mju_euler2Quat(expected, angles[0].numpy(), "xyz")  # lowercase: intrinsic
    torch.testing.assert_close(R.quat_from_euler_xyz_intrinsic(angles)[0], R.wxyz_to_xyzw(torch.from_numpy(expected)))


@pytest.mark.parametrize("x", [0.0, 3.5, -3.5, 10.0])
def test_normalize_angle(x):
    y = float(R.normalize_angle(torch.tensor(x)))
    assert -math.pi <= y < math.pi
    assert math.isclose(math.cos(x), math.cos(y), abs_tol=1e-6)


def test_quat_from_euler_orders():
    angles = torch.tensor([[0.3, -1.1, 2.0], [1.2, 0.4, -0.7]], dtype=torch.float64)
    assert torch.allclose(R.quat_from_euler(angles, "xyz"), R.quat_from_euler_xyz_intrinsic(angles), atol=1e-12)
    # 'zyx' = Rz(a0) Ry(a1) Rx(a2), checked with matrices built one axis at a time
    def axis_mat(axis, a):
        q = R.quat_from_axis_angle(torch.eye(3, dtype=torch.float64)["xyz".index(axis)].expand(a.shape[0], 3), a)
        return R.quat_to_matrix(q)
    expected = axis_mat("z", angles[:, 0]) @ axis_mat("y", angles[:, 1]) @ axis_mat("x", angles[:, 2])
    assert torch.allclose(R.quat_to_matrix(R.quat_from_euler(angles, "ZYX")), expected, atol=1e-12)
    # fewer axes than three, and a repeated axis
    assert torch.allclose(R.quat_from_euler(angles[:, :2], "xz"),
                          R.quat_mul(R.quat_from_euler(angles[:, :1], "x"), R.quat_from_euler(angles[:, 1:2], "z")))
    with pytest.raises(ValueError):
        R.quat_from_euler(angles, "xy")


# ---- heading as a matrix, tan-norm and products as quadratic forms, exact matmuls ---------------


def _heading_inv_rotate(q, v):
    """Reference: `v [n, k, 3]` into the heading frame of `q [n, 4]` by the heading quaternion."""
    return R.quat_rotate(R.calc_heading_quat_inv(q).unsqueeze(-2), v)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_heading_frame_matrix_matches_heading_quat_inv(dtype):
    q = random_quats(64, 12, dtype)
    v = torch.randn(64, 5, 3, generator=torch.Generator().manual_seed(13), dtype=dtype)
    m = R.heading_frame_matrix(q)
    assert m.shape == (64, 3, 3) and m.dtype == dtype
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(v @ m, _heading_inv_rotate(q, v), atol=tol, rtol=0)
    torch.testing.assert_close(R.matmul_exact(v, m), _heading_inv_rotate(q, v), atol=tol, rtol=0)
    # a turn about z only: heights are kept, and it is a proper rotation
    torch.testing.assert_close((v @ m)[..., 2], v[..., 2], atol=tol, rtol=0)
    torch.testing.assert_close(m @ m.transpose(-1, -2), torch.eye(3, dtype=dtype).expand(64, 3, 3), atol=tol, rtol=0)
    # leading dims broadcast like the quaternion's
    torch.testing.assert_close(R.heading_frame_matrix(q.reshape(4, 16, 4)), m.reshape(4, 16, 3, 3))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_heading_frame_matrix_vertical_x_axis(dtype):
    """With the x axis vertical the heading is 0: the matrix is the identity (finite)."""
    y_axis, z_axis = torch.tensor([0.0, 1.0, 0.0], dtype=dtype), torch.tensor([0.0, 0.0, 1.0], dtype=dtype)
    tilts = R.quat_from_axis_angle(y_axis.expand(2, 3), torch.tensor([math.pi / 2, -math.pi / 2], dtype=dtype))
    v = torch.randn(2, 4, 3, generator=torch.Generator().manual_seed(14), dtype=dtype)
    m = R.heading_frame_matrix(tilts)
    assert torch.isfinite(m).all()
    assert torch.equal(m, torch.eye(3, dtype=dtype).expand(2, 3, 3))
    torch.testing.assert_close(v @ m, v, atol=0, rtol=0)
    torch.testing.assert_close(v @ m, _heading_inv_rotate(tilts, v), atol=1e-6, rtol=0)
    # a yaw before the tilt leaves the x axis vertical: still no heading (calc_heading is
    # ill-conditioned there, its atan2 of rounding errors may give any angle)
    yaws = R.quat_from_axis_angle(z_axis.expand(3, 3), torch.tensor([0.7, 2.5, -1.9], dtype=dtype))
    yawed = R.quat_mul(yaws.unsqueeze(1), tilts.unsqueeze(0))  # [3, 2, 4]
    assert torch.equal(R.heading_frame_matrix(yawed), torch.eye(3, dtype=dtype).expand(3, 2, 3, 3))
    # a little off vertical the heading is well defined again and both agree
    near = R.quat_mul(yaws, R.quat_from_axis_angle(y_axis.expand(3, 3), torch.full((3,), math.pi / 2 - 0.01, dtype=dtype)))
    w = v[:1].expand(3, 4, 3)
    torch.testing.assert_close(w @ R.heading_frame_matrix(near), _heading_inv_rotate(near, w),
                               atol=1e-9 if dtype == torch.float64 else 1e-4, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_tan_norm_matches_rotated_axes(dtype):
    q = random_quats(30, 15, dtype).reshape(3, 10, 4)
    x_axis = torch.tensor([1.0, 0.0, 0.0], dtype=dtype).expand(3, 10, 3)
    z_axis = torch.tensor([0.0, 0.0, 1.0], dtype=dtype).expand(3, 10, 3)
    tan_norm = R.quat_to_tan_norm(q)
    assert tan_norm.shape == (3, 10, 6) and tan_norm.dtype == dtype
    tol = 1e-12 if dtype == torch.float64 else 1e-6
    torch.testing.assert_close(tan_norm[..., :3], R.quat_rotate(q, x_axis), atol=tol, rtol=0)
    torch.testing.assert_close(tan_norm[..., 3:], R.quat_rotate(q, z_axis), atol=tol, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_quat_mul_small_and_large_batches_agree_with_mujoco(dtype):
    """Up to 4096 quaternions and above take different code paths; both are the Hamilton product."""
    a, b = random_quats(5000, 16, dtype), random_quats(5000, 17, dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-6
    large = R.quat_mul(a, b)  # 5000 > 4096
    small = torch.cat([R.quat_mul(a[i:i + 1000], b[i:i + 1000]) for i in range(0, 5000, 1000)])
    torch.testing.assert_close(small, large, atol=tol, rtol=0)
    # right at the boundary: 4096 and 4097 quaternions
    torch.testing.assert_close(R.quat_mul(a[:4096], b[:4096]), large[:4096], atol=tol, rtol=0)
    torch.testing.assert_close(R.quat_mul(a[:4097], b[:4097]), large[:4097], atol=tol, rtol=0)
    for i in range(0, 5000, 97):
        res = np.zeros(4)
        mujoco.mju_mulQuat(res, mj_quat(a[i]), mj_quat(b[i]))
        expected = R.wxyz_to_xyzw(torch.from_numpy(res))
        np.testing.assert_allclose(small[i].double(), expected, atol=tol)
        np.testing.assert_allclose(large[i].double(), expected, atol=tol)
    # broadcasting in the small path: [n, 1, 4] * [1, m, 4]
    outer = R.quat_mul(a[:6].unsqueeze(1), b[:7].unsqueeze(0))
    assert outer.shape == (6, 7, 4)
    torch.testing.assert_close(outer[4, 2], R.quat_mul(a[4], b[2]), atol=tol, rtol=0)


def test_matmul_exact_both_paths():
    g = torch.Generator().manual_seed(18)

    def uniform(*shape):  # entries in [-0.5, 0.5): results of order 1, as in the geometry code
        return torch.rand(*shape, generator=g, dtype=torch.float64) - 0.5

    a64, b64 = uniform(4, 5, 3), uniform(4, 3, 3)  # vectors by per-env matrices
    assert torch.equal(R.matmul_exact(a64, b64), a64 @ b64)
    rows, table = uniform(2, 7, 16), uniform(16, 6)  # rows by one shared table
    torch.testing.assert_close(R.matmul_exact(rows, table), rows @ table, atol=1e-12, rtol=0)

    a32, b32, rows32, table32 = a64.float(), b64.float(), rows.float(), table.float()
    q, p = random_quats(50, 19, torch.float32), random_quats(50, 20, torch.float32)
    exact = [R.matmul_exact(a32, b32), R.matmul_exact(rows32, table32), R.quat_mul(q, p), R.quat_to_tan_norm(q)]
    previous = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")  # the broadcast-sum path
        sums = [R.matmul_exact(a32, b32), R.matmul_exact(rows32, table32), R.quat_mul(q, p), R.quat_to_tan_norm(q)]
    finally:
        torch.set_float32_matmul_precision(previous)
    assert torch.get_float32_matmul_precision() == previous
    for x, y in zip(exact, sums):
        assert x.shape == y.shape and y.dtype == torch.float32
        torch.testing.assert_close(y, x, atol=1e-6, rtol=0)
    torch.testing.assert_close(sums[0].double(), a64 @ b64, atol=1e-5, rtol=0)
    torch.testing.assert_close(sums[1].double(), rows @ table, atol=1e-5, rtol=0)
