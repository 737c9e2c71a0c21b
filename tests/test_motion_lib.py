"""MotionLib on the bundled clips: loading, packing, interpolation, velocities, conversion to the
simulator's coordinates (checked against MuJoCo's own kinematics), sampling and input errors."""

import warnings
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.clip import MotionClip
from ase_humanoid.motion.motion_lib import MotionLib, check_skeleton
from ase_humanoid.motion.poselib_npy import load_poselib, save_poselib
from ase_humanoid.motion.skeleton import Skeleton
from ase_humanoid.robots import dof_pos_to_local_rot, load_robot
from ase_humanoid.robots.description import load_mjcf
from ase_humanoid.utils import rotations as rot

MOTIONS = Path(__file__).resolve().parents[1] / "motions"
CLIPS = MOTIONS / "amp_humanoid"
WALK = CLIPS / "amp_humanoid_walk.npy"
ALL_YAML = MOTIONS / "dataset_amp_humanoid_all.yaml"
CLIP_NAMES = ["walk", "run", "dance", "hop", "backflip", "cartwheel"]


@pytest.fixture(scope="module")
def robot():
    return load_robot("amp_humanoid")


@pytest.fixture(scope="module")
def sword_robot():
    return load_robot("sword_shield")


@pytest.fixture(scope="module")
def lib64(robot):
    """All six clips in float64, so identities hold to round-off."""
    return MotionLib(ALL_YAML, robot, dtype=torch.float64)


@pytest.fixture(scope="module")
def lib32(robot):
    return MotionLib(ALL_YAML, robot)


def frame_times(lib, motion_id, frames):
    """Motion ids and times (s) of the given frames of one clip."""
    frames = torch.as_tensor(frames)
    ids = torch.full(frames.shape, motion_id, dtype=torch.long)
    return ids, frames.to(lib.dtype) / lib.motion_fps[motion_id]


def same_rotation(a, b, atol):
    """Max angle (rad) between rotations, asserted below atol (q and -q are the same rotation)."""
    # From the vector part of a^-1 b: accurate for small angles, unlike acos of a dot product.
    diff = rot.quat_mul(rot.quat_conjugate(a), b)
    angle = (2.0 * torch.atan2(diff[..., :3].norm(dim=-1), diff[..., 3].abs())).max().item()
    assert angle < atol, angle


# ---- loading ------------------------------------------------------------------------------------


def test_single_clip_shapes_and_lengths(robot):
    lib = MotionLib(WALK, robot)
    clip = load_poselib(WALK)
    T, B, D = clip.num_frames, robot.num_bodies, robot.num_dofs
    assert lib.num_motions == 1 and lib.motion_names == ["amp_humanoid_walk"]
    assert lib.num_frames == T
    assert lib.get_motion_length(torch.tensor([0])).item() == pytest.approx((T - 1) / clip.fps, rel=1e-6)
    assert lib.motion_weights.tolist() == [1.0]
    assert lib.local_rot.shape == (T, B, 4) and lib.dof_pos.shape == (T, D) and lib.body_pos.shape == (T, B, 3)
    assert all(getattr(lib, n).dtype == torch.float32 for n in ("root_pos", "local_rot", "dof_vel", "body_pos"))

    n = 7
    state = lib.get_motion_state(torch.zeros(n, dtype=torch.long), torch.linspace(0, 2.0, n))
    K = len(robot.key_body_ids)
    expected = {
        "root_pos": (n, 3), "root_rot": (n, 4), "root_lin_vel": (n, 3), "root_ang_vel": (n, 3),
        "local_rot": (n, B, 4), "dof_pos": (n, D), "dof_vel": (n, D), "joint_vel": (n, D),
        "key_body_pos": (n, K, 3), "body_pos": (n, B, 3), "body_lin_vel": (n, B, 3),
    }
    assert {k: tuple(v.shape) for k, v in vars(state).items()} == expected
    assert all(torch.isfinite(v).all() for v in vars(state).values())


def test_dataset_yaml_packs_all_clips(lib32):
    lib = lib32
    assert lib.motion_names == [f"amp_humanoid_{n}" for n in CLIP_NAMES]
    clips = [load_poselib(CLIPS / f"amp_humanoid_{n}.npy") for n in CLIP_NAMES]
    frames = [c.num_frames for c in clips]
    assert lib.motion_num_frames.tolist() == frames
    assert lib.motion_start.tolist() == np.concatenate([[0], np.cumsum(frames)[:-1]]).tolist()
    assert lib.num_frames == sum(frames)
    torch.testing.assert_close(lib.motion_lengths, torch.tensor([c.duration for c in clips]))
    torch.testing.assert_close(lib.motion_weights, torch.full((6,), 1 / 6))
    # The packed frames of clip 3 are that clip's root trajectory.
    start = int(lib.motion_start[3])
    torch.testing.assert_close(lib.root_pos[start:start + frames[3]], clips[3].root_translation.float())


def test_locomotion_dataset(robot):
    lib = MotionLib(MOTIONS / "dataset_amp_humanoid_locomotion.yaml", robot)
    assert lib.motion_names == ["amp_humanoid_walk", "amp_humanoid_run"]


# ---- interpolation ------------------------------------------------------------------------------


def test_state_at_frame_times_is_the_frame(lib64):
    lib = lib64
    for m in range(lib.num_motions):
        num = int(lib.motion_num_frames[m])
        frames = torch.arange(num)
        ids, times = frame_times(lib, m, frames)
        state = lib.get_motion_state(ids, times)
        g = lib.motion_start[m] + frames
        for name in ("root_pos", "root_lin_vel", "root_ang_vel", "joint_vel", "body_pos", "body_lin_vel"):
            torch.testing.assert_close(getattr(state, name), getattr(lib, name)[g], atol=1e-9, rtol=0, msg=name)
        same_rotation(state.root_rot, lib.root_rot[g], 1e-7)
        same_rotation(state.local_rot, lib.local_rot[g], 1e-7)
        torch.testing.assert_close(state.dof_pos, lib.dof_pos[g], atol=1e-7, rtol=0)
        torch.testing.assert_close(state.dof_vel, lib.dof_vel[g], atol=1e-6, rtol=1e-9)
        torch.testing.assert_close(state.key_body_pos, lib.body_pos[g][:, lib.key_body_ids], atol=1e-9, rtol=0)


def test_halfway_between_frames_is_lerp_and_slerp(lib64):
    lib = lib64
    for m in range(lib.num_motions):
        frames = torch.arange(int(lib.motion_num_frames[m]) - 1)
        ids, times = frame_times(lib, m, frames.double() + 0.5)
        state = lib.get_motion_state(ids, times)
        g0 = lib.motion_start[m] + frames
        g1 = g0 + 1
        for name in ("root_pos", "root_lin_vel", "root_ang_vel", "joint_vel", "body_pos"):
            mid = 0.5 * (getattr(lib, name)[g0] + getattr(lib, name)[g1])
            torch.testing.assert_close(getattr(state, name), mid, atol=1e-9, rtol=0, msg=name)
        # The rotation halfway along the short arc is the normalised sum of the sign-aligned ends.
        for name in ("root_rot", "local_rot"):
            q0, q1 = getattr(lib, name)[g0], getattr(lib, name)[g1]
            q1 = torch.where((q0 * q1).sum(-1, keepdim=True) < 0, -q1, q1)
            same_rotation(getattr(state, name), rot.quat_normalize(q0 + q1), 1e-7)
        # DoF positions come from the slerped rotations, not from lerped Euler angles.
        same_rotation(dof_pos_to_local_rot(lib.robot, state.dof_pos)[:, 1:], state.local_rot[:, 1:], 1e-7)


def test_times_outside_the_clip_clamp(lib32):
    lib = lib32
    ids = torch.arange(lib.num_motions)
    first = lib.get_motion_state(ids, torch.full((lib.num_motions,), -3.0))
    last = lib.get_motion_state(ids, lib.motion_lengths + 10.0)
    start = lib.motion_start
    end = start + lib.motion_num_frames - 1
    torch.testing.assert_close(first.root_pos, lib.root_pos[start])
    torch.testing.assert_close(last.root_pos, lib.root_pos[end])
    torch.testing.assert_close(last.dof_pos, lib.dof_pos[end], atol=1e-5, rtol=0)


# ---- velocities ---------------------------------------------------------------------------------


@pytest.mark.parametrize("motion", ["walk", "run", "dance", "hop", "cartwheel"])
def test_root_and_body_velocities_match_position_differences(lib64, motion):
    """Velocities averaged over a 0.1 s window equal the displacement over it divided by its time.

    The clips' stored velocities are smoothed over ~2 frames and many frames are duplicated (30 Hz
    capture stored at 60 Hz), so single-frame differences are too noisy to compare with. The root
    orientation of the walk, run and hop clips jitters from frame to frame; its angular velocity is
    checked on the smooth dance and cartwheel clips (the cartwheel turns fully, so a velocity in
    the wrong frame would fail).
    """
    lib = lib64
    m = CLIP_NAMES.index(motion)
    num, fps = int(lib.motion_num_frames[m]), lib.motion_fps[m]
    ids, times = frame_times(lib, m, torch.arange(8, num - 8).double() + 0.5)
    h = 3.0 / fps  # half window: three frames
    states = [lib.get_motion_state(ids, times + h * k / 8) for k in range(-8, 9)]
    first, last = states[0], states[-1]

    def window_mean(name):  # trapezoid rule over the 17 samples
        v = torch.stack([getattr(s, name) for s in states])
        return 0.5 * (v[1:] + v[:-1]).mean(0)

    def check(velocity, difference, rel):
        err = (velocity - difference).norm(dim=-1).mean()
        scale = difference.norm(dim=-1).mean()
        assert err < rel * scale, (err.item(), scale.item())

    check(window_mean("root_lin_vel"), (last.root_pos - first.root_pos) / (2 * h), 0.06)
    check(window_mean("body_lin_vel"), (last.body_pos - first.body_pos) / (2 * h), 0.08)
    if motion in ("dance", "cartwheel"):
        # World-frame turn from the window's start to its end, as axis * angle.
        turn = rot.quat_to_exp_map(rot.quat_mul(last.root_rot, rot.quat_conjugate(first.root_rot)))
        check(window_mean("root_ang_vel"), turn / (2 * h), 0.12)


def test_joint_and_dof_velocities_match_rotation_differences(lib64):
    """Slerping from a frame turns each joint at exactly that frame's joint velocity, and DoF
    velocities are the rates of the DoF positions."""
    lib, robot = lib64, lib64.robot
    h = 1e-6
    for m in range(lib.num_motions):
        frames = torch.arange(int(lib.motion_num_frames[m]) - 1)
        ids, times = frame_times(lib, m, frames)
        a, b = lib.get_motion_state(ids, times), lib.get_motion_state(ids, times + h)
        rel = rot.quat_to_exp_map(rot.quat_mul(rot.quat_conjugate(a.local_rot), b.local_rot)) / h  # [n, B, 3]
        sph, hinge = robot.spherical_dof_ids, robot.hinge_dof_ids
        torch.testing.assert_close(a.joint_vel[:, sph], rel[:, robot.spherical_body_ids], atol=1e-4, rtol=1e-5)
        hinge_rate = (rel[:, robot.hinge_body_ids] * robot.dof_axes[hinge]).sum(-1)
        torch.testing.assert_close(a.joint_vel[:, hinge], hinge_rate, atol=1e-4, rtol=1e-5)
        # Away from gimbal lock (where Euler rates are clamped) and Euler branch switches.
        dof_rate = rot.normalize_angle(b.dof_pos - a.dof_pos) / h
        cos_b = torch.cos(a.dof_pos[:, sph[:, 1]]).abs().min(-1).values
        ok = cos_b > 0.2
        torch.testing.assert_close(a.dof_vel[ok], dof_rate[ok], atol=1e-3, rtol=1e-4)


# ---- conversion to simulator coordinates --------------------------------------------------------


def test_dof_pos_reproduces_local_rot_for_every_clip(lib32, robot):
    lib = lib32
    reproduced = dof_pos_to_local_rot(robot, lib.dof_pos)
    for m, name in enumerate(CLIP_NAMES):
        s, n = int(lib.motion_start[m]), int(lib.motion_num_frames[m])
        sl = slice(s, s + n)
        aligned = torch.where((reproduced[sl] * lib.local_rot[sl]).sum(-1, keepdim=True) < 0, -reproduced[sl], reproduced[sl])
        err = (aligned - lib.local_rot[sl]).abs().max().item()
        assert err < 1e-5, (name, err)


def mujoco_body_poses(robot, root_pos, root_rot, dof_pos):
    """MuJoCo's world body positions [n, B, 3] and rotations [n, B, 4] (xyzw) for these poses."""
    model = load_mjcf(robot.mjcf_path)
    data = mujoco.MjData(model)
    qpos = torch.cat([root_pos, rot.xyzw_to_wxyz(root_rot), dof_pos], dim=-1).double().numpy()
    pos, quat = [], []
    for q in qpos:
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        pos.append(data.xpos[1:].copy())
        quat.append(data.xquat[1:].copy())
    return torch.from_numpy(np.stack(pos)), rot.wxyz_to_xyzw(torch.from_numpy(np.stack(quat)))


def test_forward_kinematics_matches_mujoco_amp_humanoid(lib32, robot):
    lib = lib32
    g = torch.Generator().manual_seed(0)
    frames = torch.cat([torch.randint(int(s), int(s + n), (25,), generator=g)
                        for s, n in zip(lib.motion_start, lib.motion_num_frames)])
    mj_pos, mj_rot = mujoco_body_poses(robot, lib.root_pos[frames], lib.root_rot[frames], lib.dof_pos[frames])
    assert (mj_pos - lib.body_pos[frames].double()).norm(dim=-1).max() < 1e-3
    same_rotation(mj_rot, lib.body_rot[frames].double(), 1e-4)


def sword_shield_clip(amp_clip: MotionClip, sword_robot) -> MotionClip:
    """The AMP clip on the 17-body skeleton: sword and shield inserted, welded (identity rotation)."""
    names = list(sword_robot.body_names)
    source = [amp_clip.skeleton.node_names.index(n) if n in amp_clip.skeleton.node_names else -1 for n in names]
    local_rotation = rot.quat_identity((amp_clip.num_frames, len(names)), dtype=amp_clip.dtype)
    keep = [i for i, s in enumerate(source) if s >= 0]
    local_rotation[:, keep] = amp_clip.local_rotation[:, [source[i] for i in keep]]
    skeleton = Skeleton(names, sword_robot.parent_indices, sword_robot.local_translation)
    return MotionClip(skeleton, local_rotation, amp_clip.root_translation, amp_clip.fps)


def test_forward_kinematics_matches_mujoco_sword_shield(sword_robot, tmp_path):
    path = tmp_path / "sword_shield_cartwheel.npy"
    save_poselib(sword_shield_clip(load_poselib(CLIPS / "amp_humanoid_cartwheel.npy"), sword_robot), path)
    lib = MotionLib(path, sword_robot)
    assert lib.local_rot.shape[1] == 17 and lib.dof_pos.shape[1] == 31
    frames = torch.arange(0, lib.num_frames, 7)
    mj_pos, mj_rot = mujoco_body_poses(sword_robot, lib.root_pos[frames], lib.root_rot[frames], lib.dof_pos[frames])
    assert (mj_pos - lib.body_pos[frames].double()).norm(dim=-1).max() < 1e-3
    same_rotation(mj_rot, lib.body_rot[frames].double(), 1e-4)
    assert lib.get_motion_state(torch.zeros(3, dtype=torch.long), torch.tensor([0.0, 0.5, 1.0])).key_body_pos.shape == (3, 6, 3)


# ---- sampling -----------------------------------------------------------------------------------


def test_sampling_follows_weights(robot, tmp_path):
    yaml_path = tmp_path / "weighted.yaml"
    yaml_path.write_text(
        "motions:\n"
        f"  - {{file: {CLIPS / 'amp_humanoid_walk.npy'}, weight: 1}}\n"
        f"  - {{file: {CLIPS / 'amp_humanoid_run.npy'}, weight: 3}}\n"
        f"  - {{file: {CLIPS / 'amp_humanoid_hop.npy'}, weight: 0}}\n"
        f"  - file: {CLIPS / 'amp_humanoid_dance.npy'}\n"  # default weight 1
    )
    lib = MotionLib(yaml_path, robot)
    torch.testing.assert_close(lib.motion_weights, torch.tensor([0.2, 0.6, 0.0, 0.2]))
    n = 200_000
    ids = lib.sample_motions(n, generator=torch.Generator().manual_seed(1))
    freq = torch.bincount(ids, minlength=4).double() / n
    # Binomial standard deviation at p = 0.6 is ~0.0011; 5 sigma.
    torch.testing.assert_close(freq, torch.tensor([0.2, 0.6, 0.0, 0.2], dtype=torch.float64), atol=0.0055, rtol=0)

    times = lib.sample_time(ids, generator=torch.Generator().manual_seed(2))
    length = lib.get_motion_length(ids)
    assert (times >= 0).all() and (times <= length).all()
    assert (times / length).mean().item() == pytest.approx(0.5, abs=0.005)
    truncated = lib.sample_time(ids, truncate_time=1.0)
    assert (truncated <= (length - 1.0).clamp_min(0)).all() and (truncated >= 0).all()


# ---- errors -------------------------------------------------------------------------------------


def test_clip_for_another_skeleton_is_refused(robot, sword_robot):
    with pytest.raises(MotionFileError, match=r"amp_humanoid_walk.*missing bodies \['sword', 'shield'\]"):
        MotionLib(WALK, sword_robot)


def test_skeleton_errors_name_the_bodies(robot):
    names = list(robot.body_names)
    offsets = robot.local_translation

    def skeleton(node_names):
        return Skeleton(node_names, robot.parent_indices, offsets)

    extra = names[:-1] + ["left_toe"]
    with pytest.raises(MotionFileError, match=r"clip\.npy.*missing bodies \['left_foot'\].*extra bodies \['left_toe'\]"):
        check_skeleton(skeleton(extra), robot, "clip.npy")
    swapped = names.copy()
    swapped[9:12], swapped[12:15] = names[12:15], names[9:12]
    with pytest.raises(MotionFileError, match=r"out of order.*#9: clip 'left_thigh' vs humanoid 'right_thigh'"):
        check_skeleton(skeleton(swapped), robot, "clip.npy")


def test_offsets_beyond_one_centimetre_warn(robot):
    offsets = robot.local_translation.clone()
    offsets[4, 2] -= 0.005  # 5 mm: fine, the humanoid's offsets are used
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_skeleton(Skeleton(robot.body_names, robot.parent_indices, offsets), robot, "clip.npy")
    offsets[10, 2] -= 0.03
    with pytest.warns(UserWarning, match=r"right_shin \(3\.0 cm\)"):
        check_skeleton(Skeleton(robot.body_names, robot.parent_indices, offsets), robot, "clip.npy")


@pytest.mark.parametrize(
    "content, match",
    [
        ("motions: [{file: walk.npy\n", r"bad\.yaml: malformed YAML"),
        ("clips: []\n", r"bad\.yaml: .*key 'motions'"),
        ("motions: []\n", r"bad\.yaml: 'motions' must be a non-empty list"),
        ("motions:\n  - weight: 1\n", r"bad\.yaml: motions\[0\]\.file is missing"),
        ("motions:\n  - {file: walk.npy, weight: -1}\n", r"bad\.yaml: motions\[0\]\.weight must be a finite number >= 0"),
        ("motions:\n  - {file: walk.npy, weight: heavy}\n", r"bad\.yaml: motions\[0\]\.weight must be a number"),
        ("motions:\n  - {file: walk.npy, wieght: 2}\n", r"bad\.yaml: motions\[0\] has unknown key.*wieght"),
        ("motions:\n  - {file: walk.npy}\n  - {file: nowhere.npy}\n", r"bad\.yaml: motions\[1\]\.file: clip not found: .*nowhere\.npy"),
        ("motions:\n  - {file: walk.npy, weight: 0}\n", r"bad\.yaml: the weights of 'motions' are all zero"),
    ],
)
def test_bad_dataset_yaml(robot, tmp_path, content, match):
    (tmp_path / "walk.npy").write_bytes(WALK.read_bytes())
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(MotionFileError, match=match):
        MotionLib(path, robot)


def test_missing_motion_file(robot, tmp_path):
    with pytest.raises(MotionFileError, match=r"motion file not found: .*absent\.npy"):
        MotionLib(tmp_path / "absent.npy", robot)


def test_every_bundled_dataset_loads_on_its_humanoid():
    """Every dataset YAML in motions/ loads (the sword-and-shield one on its 17-body humanoid)."""
    from ase_humanoid.robots import load_robot

    for path in sorted(MOTIONS.glob("dataset_*.yaml")):
        robot = load_robot("sword_shield" if "sword_shield" in path.name else "amp_humanoid")
        lib = MotionLib(path, robot)
        assert lib.num_motions >= 2, path.name
        assert bool((lib.motion_lengths > 0.5).all()), path.name
