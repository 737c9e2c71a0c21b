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
