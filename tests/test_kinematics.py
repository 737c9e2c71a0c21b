"""Batched kinematics against MuJoCo's own kinematics, and the DoF <-> rotation/velocity conversions."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
import torch

from ase_humanoid.robots import (
    body_state_from_qpos,
    dof_pos_to_local_rot,
    dof_vel_from_joint_vel,
    forward_kinematics,
    joint_vel_from_dof_vel,
    load_robot,
    local_rot_to_dof_pos,
)
from ase_humanoid.robots.kinematics import GIMBAL_COS_EPS
from ase_humanoid.utils import rotations as rot

ROBOTS = ["amp_humanoid", "sword_shield"]


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    return load_robot(request.param)


def _random_state(robot, n, seed=0):
    """Random root + DoF state with hinge angles inside the limits, float64 numpy."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.dof_limits_lower.double().numpy(), robot.dof_limits_upper.double().numpy()
    root_quat = rng.normal(size=(n, 4))
    root_quat /= np.linalg.norm(root_quat, axis=1, keepdims=True)
    return dict(
        root_pos=rng.normal(size=(n, 3)),
        root_quat_wxyz=root_quat,
        root_lin_vel=rng.normal(size=(n, 3)),
        root_ang_vel_local=rng.normal(size=(n, 3)) * 2.0,
        dof_pos=rng.uniform(lo, hi, size=(n, robot.num_dofs)),
        dof_vel=rng.normal(size=(n, robot.num_dofs)) * 3.0,
    )


def _mujoco_body_states(robot, state):
    """xpos, xquat (wxyz) and world-frame (angular, linear) velocity at each body origin from MuJoCo."""
    model = mujoco.MjModel.from_xml_path(str(robot.mjcf_path))
    data = mujoco.MjData(model)
    n, bodies = len(state["root_pos"]), range(1, robot.num_bodies + 1)
    pos, quat, ang, lin = (np.zeros((n, robot.num_bodies, k)) for k in (3, 4, 3, 3))
    vel = np.zeros(6)
    for i in range(n):
        data.qpos[:] = np.concatenate([state["root_pos"][i], state["root_quat_wxyz"][i], state["dof_pos"][i]])
        # MuJoCo's free joint: world linear velocity, body-frame angular velocity.
        data.qvel[:] = np.concatenate([state["root_lin_vel"][i], state["root_ang_vel_local"][i], state["dof_vel"][i]])
        mujoco.mj_forward(model, data)
        pos[i], quat[i] = data.xpos[1:], data.xquat[1:]
        for j, b in enumerate(bodies):
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, b, vel, 0)
            ang[i, j], lin[i, j] = vel[:3], vel[3:]
    return pos, quat, lin, ang


def _ours(robot, state, dtype):
    t = lambda x: torch.as_tensor(x, dtype=dtype)  # noqa: E731
    root_rot = rot.wxyz_to_xyzw(t(state["root_quat_wxyz"]))
    root_ang_vel = rot.quat_rotate(root_rot, t(state["root_ang_vel_local"]))
    return body_state_from_qpos(robot, t(state["root_pos"]), root_rot, t(state["root_lin_vel"]), root_ang_vel,
                                t(state["dof_pos"]), t(state["dof_vel"]))


def _assert_same_rotation(a, b, atol):
    # q and -q are the same rotation.
    err = torch.minimum((a - b).abs().amax(-1), (a + b).abs().amax(-1))
    assert err.max().item() < atol


def test_body_state_matches_mujoco_float64(robot):
    state = _random_state(robot, 40)
    pos, quat, lin, ang = (torch.from_numpy(x) for x in _mujoco_body_states(robot, state))
    body_pos, body_rot, body_lin_vel, body_ang_vel = _ours(robot, state, torch.float64)
    assert body_pos.dtype == torch.float64 and body_pos.shape == (40, robot.num_bodies, 3)
    torch.testing.assert_close(body_pos, pos, atol=1e-5, rtol=0)
    _assert_same_rotation(body_rot, rot.wxyz_to_xyzw(quat), 1e-5)
    torch.testing.assert_close(body_lin_vel, lin, atol=1e-5, rtol=0)
    torch.testing.assert_close(body_ang_vel, ang, atol=1e-5, rtol=0)


def test_body_state_float32(robot):
    state = _random_state(robot, 8, seed=1)
    pos, quat, lin, ang = (torch.from_numpy(x).float() for x in _mujoco_body_states(robot, state))
    body_pos, body_rot, body_lin_vel, body_ang_vel = _ours(robot, state, torch.float32)
    assert body_pos.dtype == torch.float32
    torch.testing.assert_close(body_pos, pos, atol=1e-4, rtol=0)
    _assert_same_rotation(body_rot, rot.wxyz_to_xyzw(quat), 1e-4)
    torch.testing.assert_close(body_lin_vel, lin, atol=5e-4, rtol=0)
    torch.testing.assert_close(body_ang_vel, ang, atol=5e-4, rtol=0)


def test_forward_kinematics_batch_shapes_and_root():
    robot = load_robot("amp_humanoid")
    local_rot = dof_pos_to_local_rot(robot, torch.zeros(2, 3, robot.num_dofs))
    assert local_rot.shape == (2, 3, 15, 4)
    root_pos = torch.tensor([1.0, 2.0, 0.9]).expand(2, 3, 3)
    yaw = rot.quat_from_axis_angle(torch.tensor([0.0, 0.0, 1.0]), torch.tensor(math.pi / 2)).expand(2, 3, 4)
    body_pos, body_rot = forward_kinematics(robot.parent_indices, robot.local_translation, local_rot, root_pos, yaw)
    assert body_pos.shape == (2, 3, 15, 3) and body_rot.shape == (2, 3, 15, 4)
    torch.testing.assert_close(body_pos[..., 0, :], root_pos)
    # Rest pose turned 90 deg about z: the right thigh offset (0, -0.0849, 0) maps to (+0.0849, 0, 0).
    thigh = robot.body_names.index("right_thigh")
    torch.testing.assert_close(body_pos[0, 0, thigh], torch.tensor([1.0 + 0.084887, 2.0, 0.9]), atol=1e-6, rtol=0)
    _assert_same_rotation(body_rot[..., thigh, :], yaw, 1e-6)
    # A root rotation stored in local_rot[..., 0] composes the same way as one passed as root_rot.
    alt_local = local_rot.clone()
    alt_local[..., 0, :] = yaw
    alt_pos, _ = forward_kinematics(robot.parent_indices, robot.local_translation, alt_local, root_pos,
                                    rot.quat_identity((2, 3)))
    torch.testing.assert_close(alt_pos, body_pos)


def test_local_rot_round_trip_inside_limits(robot):
    state = _random_state(robot, 300, seed=2)
    dof_pos = torch.from_numpy(state["dof_pos"])
    back = local_rot_to_dof_pos(robot, dof_pos_to_local_rot(robot, dof_pos))
    torch.testing.assert_close(back, dof_pos, atol=1e-9, rtol=0)

    # float32: near gimbal lock a and c are individually ill-conditioned, so compare rotations,
    # and angles wherever the joint is away from the lock.
    dof_pos32 = dof_pos.float()
    local_rot32 = dof_pos_to_local_rot(robot, dof_pos32)
    back32 = local_rot_to_dof_pos(robot, local_rot32)
    assert back32.dtype == torch.float32
    _assert_same_rotation(dof_pos_to_local_rot(robot, back32), local_rot32, 2e-4)
    regular = torch.cos(dof_pos[:, robot.spherical_dof_ids[:, 1]]).abs() > 0.05
    sph = robot.spherical_dof_ids
    torch.testing.assert_close(back32[:, sph][regular], dof_pos32[:, sph][regular], atol=2e-3, rtol=0)
    torch.testing.assert_close(back32[:, robot.hinge_dof_ids], dof_pos32[:, robot.hinge_dof_ids], atol=1e-5, rtol=0)


def test_local_rot_to_dof_pos_any_rotation(robot):
    """Any local rotation of a spherical joint is reproduced exactly (whichever branch is chosen)."""
    g = torch.Generator().manual_seed(3)
    local_rot = rot.quat_normalize(torch.randn(200, robot.num_bodies, 4, generator=g, dtype=torch.float64))
    rebuilt = dof_pos_to_local_rot(robot, local_rot_to_dof_pos(robot, local_rot))
    sph = robot.spherical_body_ids
    _assert_same_rotation(rebuilt[:, sph], local_rot[:, sph], 1e-9)


def test_branch_choice_prefers_limits():
    robot = load_robot("amp_humanoid")
    idx = {n: i for i, n in enumerate(robot.dof_names)}
    # Right shoulder (x, y, z) = (10, -120, 20) deg is inside its limits; the other Euler branch
    # (190, -60, 200) is not, yet decomposes to the same rotation.
    dof_pos = torch.zeros(robot.num_dofs, dtype=torch.float64)
    angles = torch.tensor([10.0, -120.0, 20.0], dtype=torch.float64).deg2rad()
    dof_pos[idx["right_shoulder_x"] : idx["right_shoulder_z"] + 1] = angles
    back = local_rot_to_dof_pos(robot, dof_pos_to_local_rot(robot, dof_pos))
    torch.testing.assert_close(back[idx["right_shoulder_x"] : idx["right_shoulder_z"] + 1], angles)
    # Hinges: the signed twist angle, e.g. knee 150 deg.
    dof_pos[idx["left_knee"]] = math.radians(150)
    back = local_rot_to_dof_pos(robot, dof_pos_to_local_rot(robot, dof_pos))
    assert back[idx["left_knee"]].item() == pytest.approx(math.radians(150))


def test_joint_vel_round_trip(robot):
    state = _random_state(robot, 300, seed=4)
    dof_pos, dof_vel = torch.from_numpy(state["dof_pos"]), torch.from_numpy(state["dof_vel"])
    back = dof_vel_from_joint_vel(robot, dof_pos, joint_vel_from_dof_vel(robot, dof_pos, dof_vel))
    regular = torch.ones_like(dof_pos, dtype=torch.bool)
    b = dof_pos[:, robot.spherical_dof_ids[:, 1]]
    regular[:, robot.spherical_dof_ids.flatten()] = (torch.cos(b).abs() > GIMBAL_COS_EPS).repeat_interleave(3, dim=1)
    torch.testing.assert_close(back[regular], dof_vel[regular], atol=1e-9, rtol=0)


def test_joint_vel_is_relative_angular_velocity_in_child_frame(robot):
    """joint_vel equals the finite-difference rotation rate of the local rotation, child frame."""
    state = _random_state(robot, 50, seed=5)
    dof_pos, dof_vel = torch.from_numpy(state["dof_pos"]), torch.from_numpy(state["dof_vel"])
    h = 1e-6
    q0 = dof_pos_to_local_rot(robot, dof_pos - 0.5 * h * dof_vel)
    q1 = dof_pos_to_local_rot(robot, dof_pos + 0.5 * h * dof_vel)
    rate = rot.quat_to_exp_map(rot.quat_mul(rot.quat_conjugate(q0), q1)) / h  # [n, B, 3] child frame
    joint_vel = joint_vel_from_dof_vel(robot, dof_pos, dof_vel)
    sph = robot.spherical_dof_ids
    torch.testing.assert_close(joint_vel[:, sph], rate[:, robot.spherical_body_ids], atol=1e-5, rtol=0)
    torch.testing.assert_close(joint_vel[:, robot.hinge_dof_ids], dof_vel[:, robot.hinge_dof_ids])


def test_gimbal_lock_stays_finite():
    robot = load_robot("amp_humanoid")
    idx = robot.dof_names.index("right_shoulder_y")
    for dtype in (torch.float32, torch.float64):
        dof_pos = torch.zeros(4, robot.num_dofs, dtype=dtype)
        dof_pos[:, idx] = -math.pi / 2 + torch.tensor([0.0, 1e-9, -1e-7, 1e-4], dtype=dtype)
        joint_vel = torch.randn(4, robot.num_dofs, dtype=dtype)
        dof_vel = dof_vel_from_joint_vel(robot, dof_pos, joint_vel)
        assert torch.isfinite(dof_vel).all()
        assert dof_vel.abs().max() < 10.0 / GIMBAL_COS_EPS


# ---- articulation_state: everything in one pass, against independent references ----------------


def _wide_random_state(robot, lead, dtype, seed):
    """Random root + DoF state `[*lead, ...]` with DoF angles well outside the joint limits."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*lead, *shape, generator=g, dtype=torch.float64)

    return dict(
        root_pos=randn(3),
        root_rot=rot.quat_normalize(randn(4)),
        root_lin_vel=randn(3),
        root_ang_vel=2.0 * randn(3),
        dof_pos=3.0 * (2.0 * torch.rand(*lead, robot.num_dofs, generator=g, dtype=torch.float64) - 1.0),
        dof_vel=2.0 * randn(robot.num_dofs),
    )


def _reference_bodies(robot, s, h=1e-5):
    """Body poses by forward kinematics, velocities by central differences of those poses along
    the state's motion (root moved by its world-frame velocities, DoFs by their rates), float64."""

    def poses(t):
        turn = rot.exp_map_to_quat(s["root_ang_vel"] * t)
        local_rot = dof_pos_to_local_rot(robot, s["dof_pos"] + t * s["dof_vel"])
        return forward_kinematics(robot.parent_indices, robot.local_translation, local_rot,
                                  s["root_pos"] + t * s["root_lin_vel"], rot.quat_mul(turn, s["root_rot"]))

    body_pos, body_rot = poses(0.0)
    pos_fwd, rot_fwd = poses(h)
    pos_back, rot_back = poses(-h)
    lin_vel = (pos_fwd - pos_back) / (2 * h)
    ang_vel = rot.quat_to_exp_map(rot.quat_mul(rot_fwd, rot.quat_conjugate(rot_back))) / (2 * h)  # world frame
    return body_pos, body_rot, lin_vel, ang_vel


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_articulation_state_matches_independent_references(robot, dtype):
    from ase_humanoid.envs.observations import joint_rotations
    from ase_humanoid.robots.kinematics import articulation_state

    n = 12
    state = _wide_random_state(robot, (n,), torch.float64, seed=21)
    state = {k: v.to(dtype).double() for k, v in state.items()}  # the same values in both dtypes
    inputs = [state[k].to(dtype) for k in ("root_pos", "root_rot", "root_lin_vel", "root_ang_vel", "dof_pos", "dof_vel")]
    ks = articulation_state(robot, *inputs)
    num_bodies, num_joints = robot.num_bodies, len(robot.dof_body_ids)
    for name, shape in (("body_pos", (n, num_bodies, 3)), ("body_rot", (n, num_bodies, 4)),
                        ("body_lin_vel", (n, num_bodies, 3)), ("body_ang_vel", (n, num_bodies, 3)),
                        ("joint_rot", (n, num_joints, 4)), ("joint_vel", (n, robot.num_dofs))):
        value = getattr(ks, name)
        assert value.shape == shape and value.dtype == dtype, name

    # Both dtypes against float64 references of the same input values: float32 differs by its
    # rounding only; the velocity references carry the finite differences' own error (~1e-8).
    pose_tol, vel_tol = (1e-10, 1e-6) if dtype == torch.float64 else (5e-6, 5e-5)
    body_pos, body_rot, lin_vel, ang_vel = _reference_bodies(robot, state)
    torch.testing.assert_close(ks.body_pos.double(), body_pos, atol=pose_tol, rtol=0)
    _assert_same_rotation(ks.body_rot.double(), body_rot, pose_tol)
    torch.testing.assert_close(ks.body_lin_vel.double(), lin_vel, atol=vel_tol, rtol=0)
    torch.testing.assert_close(ks.body_ang_vel.double(), ang_vel, atol=vel_tol, rtol=0)
    torch.testing.assert_close(ks.body_pos[:, 0].double(), state["root_pos"], atol=pose_tol, rtol=0)
    torch.testing.assert_close(ks.body_lin_vel[:, 0].double(), state["root_lin_vel"], atol=pose_tol, rtol=0)

    # the AMP observation inputs: the same as computed on their own from the DoF state
    _assert_same_rotation(ks.joint_rot.double(), joint_rotations(robot, state["dof_pos"]), pose_tol)
    torch.testing.assert_close(ks.joint_vel.double(), joint_vel_from_dof_vel(robot, state["dof_pos"], state["dof_vel"]),
                               atol=pose_tol, rtol=0)


def test_articulation_state_leading_batch_shape(robot):
    from ase_humanoid.robots.kinematics import articulation_state

    state = _wide_random_state(robot, (2, 3), torch.float64, seed=22)
    fields = ("root_pos", "root_rot", "root_lin_vel", "root_ang_vel", "dof_pos", "dof_vel")
    batched = articulation_state(robot, *(state[k] for k in fields))
    flat = articulation_state(robot, *(state[k].flatten(0, 1) for k in fields))
    for name, value, flat_value in zip(("body_pos", "body_rot", "body_lin_vel", "body_ang_vel", "joint_rot",
                                        "joint_vel"), batched.as_tuple(), flat.as_tuple()):
        assert value.shape[:2] == (2, 3), name
        torch.testing.assert_close(value.flatten(0, 1), flat_value, atol=1e-12, rtol=0, msg=name)
    # and body_state_from_qpos is the body part of it
    for value, bodies_value in zip(batched.bodies(), body_state_from_qpos(robot, *(state[k] for k in fields))):
        assert torch.equal(value, bodies_value)
