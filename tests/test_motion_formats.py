"""Skeletons, clips and the motion file readers (poselib .npy, BVH, ASF/AMC, FBX) on real files."""

from __future__ import annotations

import os
import pickletools
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.asf_amc import load_asf_amc, read_asf
from ase_humanoid.motion.bvh import CMU_UNITS_TO_M, load_bvh
from ase_humanoid.motion.clip import MotionClip, compute_velocities
from ase_humanoid.motion.fbx import CMU_FBX_UNITS_TO_M, load_fbx
from ase_humanoid.motion.io import load_motion
from ase_humanoid.motion.poselib_npy import load_poselib, read_poselib_dict, save_poselib
from ase_humanoid.motion.skeleton import Skeleton
from ase_humanoid.utils import rotations as rot

ROOT = Path(__file__).resolve().parents[1]
CLIPS = ROOT / "motions" / "amp_humanoid"
MOCAP = ROOT / "motions" / "mocap"
DATA = Path(__file__).resolve().parent / "data"

# frames, fps, stored dtype (motions/ATTRIBUTION.md)
SHIPPED = {
    "amp_humanoid_walk.npy": (154, 60, torch.float32),
    "amp_humanoid_run.npy": (82, 60, torch.float32),
    "amp_humanoid_hop.npy": (297, 60, torch.float32),
    "amp_humanoid_cartwheel.npy": (287, 60, torch.float32),
    "amp_humanoid_dance.npy": (902, 60, torch.float32),
    "amp_humanoid_backflip.npy": (29, 16, torch.float64),
}
FBX_DURATIONS = {"01_01": 22.93, "07_01": 2.63, "08_02": 2.58, "09_11": 1.38, "49_08": 4.79, "55_01": 15.05}
# ASF bone -> joint of the CMU BVH conversion, below the thorax (that conversion drops the thorax
# bone's length, so joints above it sit one thorax vector lower than the Acclaim formulas put them)
ASF_TO_BVH = {
    "root": "Hips", "lhipjoint": "LHipJoint", "lfemur": "LeftUpLeg", "ltibia": "LeftLeg", "lfoot": "LeftFoot",
    "ltoes": "LeftToeBase", "rhipjoint": "RHipJoint", "rfemur": "RightUpLeg", "rtibia": "RightLeg",
    "rfoot": "RightFoot", "rtoes": "RightToeBase", "lowerback": "LowerBack", "upperback": "Spine", "thorax": "Spine1",
}


@pytest.fixture(autouse=True, scope="module")
def single_torch_thread():
    # These tensors are small; on a shared 2-core machine torch's intra-op threads only contend.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def bvh_01_01():
    return load_bvh(MOCAP / "cmu_bvh" / "01_01.bvh", dtype=torch.float64)


@pytest.fixture(scope="module")
def amc_01_01():
    return load_asf_amc(MOCAP / "cmu_asf_amc" / "01_01.amc", MOCAP / "cmu_asf_amc" / "01.asf", dtype=torch.float64)


def _copy_text(src: Path, dst: Path, edit) -> Path:
    dst.write_bytes(edit(src.read_bytes()))
    return dst


# ------------------------------------------------------------------------------ poselib .npy
@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_clip_loads(name):
    frames, fps, stored_dtype = SHIPPED[name]
    clip = load_poselib(CLIPS / name, dtype=None)
    assert clip.num_frames == frames and clip.fps == fps and clip.dtype == stored_dtype
    assert clip.num_joints == 15 and clip.skeleton.node_names[0] == "pelvis"
    assert clip.duration == pytest.approx((frames - 1) / fps)
    assert load_poselib(CLIPS / name).dtype == torch.float32


@pytest.mark.parametrize("name", ["amp_humanoid_walk.npy", "amp_humanoid_run.npy"])
def test_fk_of_shipped_locomotion_has_plausible_heights(name):
    clip = load_poselib(CLIPS / name)
    pos = clip.global_translation
    sk = clip.skeleton
    feet = pos[:, [sk.index("left_foot"), sk.index("right_foot")], 2]
    assert -0.02 < feet.min() < 0.12  # ankles touch down near the ground
    assert 0.8 < pos[:, 0, 2].mean() < 1.0  # pelvis
    head = pos[:, sk.index("head"), 2]
    assert 1.2 < head.mean() < 1.45  # head body origin (the neck); its sphere tops out ~0.27 m higher
    # bone lengths do not change over time
    parents = sk.parent_indices
    lengths = (pos[:, 1:] - pos[:, parents[1:]]).norm(dim=-1)
    assert torch.allclose(lengths, sk.local_translation[1:].norm(dim=-1).expand_as(lengths), atol=1e-5)


@pytest.mark.parametrize("name", ["amp_humanoid_walk.npy", "amp_humanoid_dance.npy", "amp_humanoid_backflip.npy"])
def test_stored_velocities_match_compute_velocities(name):
    clip = load_poselib(CLIPS / name, dtype=torch.float64)
    linear, angular = compute_velocities(clip)
    assert (linear - clip.global_velocity).abs().max() < 1e-3
    assert (angular - clip.global_angular_velocity).abs().max() < 1e-2


def test_computed_velocities_agree_with_finite_differences():
    # The shipped 60 fps clips repeat frames in pairs, so compare with differences over +-2 frames.
    clip = load_poselib(CLIPS / "amp_humanoid_run.npy", dtype=torch.float64)
    linear, angular = compute_velocities(clip)
    pos, quat = clip.global_translation, clip.global_rotation
    fd_linear = (pos[4:] - pos[:-4]) * clip.fps / 4
    fd_angular = rot.quat_to_exp_map(rot.quat_mul(quat[4:], rot.quat_conjugate(quat[:-4]))) * clip.fps / 4
    inner = slice(2, -2)
    # smoothing only blurs: errors are a small fraction of the typical speeds (angular velocity
    # is a forward difference, half a frame late, as in poselib)
    assert (linear[inner] - fd_linear).norm(dim=-1).mean() < 0.08 * fd_linear.norm(dim=-1).mean()
    assert (angular[inner] - fd_angular).norm(dim=-1).mean() < 0.25 * fd_angular.norm(dim=-1).mean()


def test_constant_motion_velocities_are_exact():
    skeleton = Skeleton(["root", "arm"], [-1, 0], torch.tensor([[0.0, 0, 0], [1.0, 0, 0]], dtype=torch.float64))
    fps, frames, rate = 30.0, 40, 0.9  # rad/s about z
    t = torch.arange(frames, dtype=torch.float64) / fps
    root_rot = rot.quat_from_axis_angle(torch.tensor([0.0, 0, 1], dtype=torch.float64).expand(frames, 3), rate * t)
    local = torch.stack([root_rot, rot.quat_identity(frames, dtype=torch.float64)], dim=1)
    root_pos = torch.stack([0.5 * t, -0.2 * t, torch.ones_like(t)], -1)
    clip = MotionClip(skeleton, local, root_pos, fps)
    assert torch.allclose(clip.global_velocity[:, 0], torch.tensor([0.5, -0.2, 0.0], dtype=torch.float64), atol=1e-9)
    inner = slice(9, frames - 9)  # away from the ends: one-sided differences there, spread 8 frames by smoothing
    assert torch.allclose(clip.global_angular_velocity[inner, :, 2], torch.full_like(t[inner, None].expand(-1, 2), rate), atol=1e-9)
    # the arm tip circles: v = w x r, with r the arm in world
    arm = clip.global_translation[:, 1] - clip.global_translation[:, 0]
    expected = torch.linalg.cross(torch.tensor([0, 0, rate], dtype=torch.float64).expand(frames, 3), arm) + clip.global_velocity[:, 0]
    assert torch.allclose(clip.global_velocity[inner, 1], expected[inner], atol=5e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_write_then_read_is_exact(tmp_path, dtype):
    clip = load_poselib(CLIPS / "amp_humanoid_hop.npy", dtype=dtype)
    path = save_poselib(clip, tmp_path / "hop.npy")
    back = load_poselib(path, dtype=None)
    assert back.skeleton == clip.skeleton and back.fps == clip.fps
    for field in ("local_rotation", "root_translation", "global_velocity", "global_angular_velocity"):
        assert torch.equal(getattr(back, field), getattr(clip, field)), field


def test_written_file_has_poselib_structure(tmp_path):
    original = CLIPS / "amp_humanoid_walk.npy"
    path = save_poselib(load_poselib(original), tmp_path / "walk.npy")
    written = np.load(path, allow_pickle=True).item()
    reference = np.load(original, allow_pickle=True).item()
    assert type(written) is type(reference)
    assert list(written) == list(reference) and list(written["skeleton_tree"]) == list(reference["skeleton_tree"])
    for key in ("rotation", "root_translation", "global_velocity", "global_angular_velocity"):
        assert np.array_equal(written[key]["arr"], reference[key]["arr"]) and written[key]["context"] == reference[key]["context"]
    assert written["skeleton_tree"]["node_names"] == reference["skeleton_tree"]["node_names"]
    assert written["__name__"] == "SkeletonMotion" and written["is_local"] is True and written["fps"] == 60

    def pickle_globals(file):
        data = Path(file).read_bytes()
        body = data[data.index(b"\n") + 1:]  # after the .npy header
        return {arg for op, arg, _ in pickletools.genops(body) if op.name in ("GLOBAL", "STACK_GLOBAL")}

    # numpy 1 paths, as in the original files, so poselib on older numpy reads them
    assert pickle_globals(path) == pickle_globals(original)


def test_tpose_states_read_as_single_frame_clips(tmp_path):
    cmu = load_poselib(MOCAP / "cmu_tpose.npy", dtype=torch.float64)
    assert cmu.num_frames == 1 and cmu.num_joints == 38 and cmu.skeleton.node_names[:2] == ["Hips", "LHipJoint"]
    # the file stores world rotations (is_local False): FK of the converted local ones gives them back
    raw = read_poselib_dict(MOCAP / "cmu_tpose.npy")
    world = torch.from_numpy(raw["rotation"]["arr"]).double()
    assert torch.allclose(rot.quat_angle_between(cmu.global_rotation[0], rot.quat_normalize(world)), torch.zeros(38, dtype=torch.float64), atol=1e-3)
    amp = load_poselib(MOCAP / "amp_humanoid_tpose.npy")
    assert amp.num_joints == 15 and torch.allclose(amp.root_translation[0], torch.tensor([0.0, 0.0, 0.9]))
    path = save_poselib(amp, tmp_path / "tpose.npy", kind="SkeletonState")
    assert read_poselib_dict(path)["__name__"] == "SkeletonState"
    back = load_poselib(path)
    assert torch.equal(back.local_rotation, amp.local_rotation) and back.skeleton == amp.skeleton


class _RunsShell:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Evals:
    def __reduce__(self):
        return (eval, ("1 + 1",))


def test_restricted_unpickler_refuses_code(tmp_path):
    marker = tmp_path / "executed"
    path = tmp_path / "evil.npy"
    holder = np.empty((), dtype=object)
    holder[()] = {"rotation": _RunsShell(marker)}
    np.save(path, holder, allow_pickle=True)
    with pytest.raises(MotionFileError) as err:
        load_poselib(path)
    assert "evil.npy" in str(err.value) and "system" in str(err.value)
    assert not marker.exists()

    other = tmp_path / "eval.npy"
    holder[()] = {"x": _Evals()}
    np.save(other, holder, allow_pickle=True)
    with pytest.raises(MotionFileError, match=r"eval\.npy.*builtins\.eval"):
        load_poselib(other)


def _save_modified(tmp_path, edit) -> Path:
    content = read_poselib_dict(CLIPS / "amp_humanoid_run.npy")
    edit(content)
    path = tmp_path / "modified.npy"
    holder = np.empty((), dtype=object)
    holder[()] = content
    np.save(path, holder, allow_pickle=True)
    return path


def _set_nan(content):
    content["rotation"]["arr"][3, 2, 1] = np.nan


def _bad_rotation_shape(content):
    content["rotation"]["arr"] = content["rotation"]["arr"][..., :3]


def _short_parents(content):
    content["skeleton_tree"]["parent_indices"]["arr"] = content["skeleton_tree"]["parent_indices"]["arr"][:-1]


def _parent_after_child(content):
    content["skeleton_tree"]["parent_indices"]["arr"][1] = 5


def _drop_fps(content):
    del content["fps"]


def _bad_velocity_shape(content):
    content["global_velocity"]["arr"] = content["global_velocity"]["arr"][:-1]


@pytest.mark.parametrize(
    "edit, message",
    [
        (_set_nan, "NaN"),
        (_bad_rotation_shape, r"rotation has shape \(82, 15, 3\)"),
        (_short_parents, "parent_indices has shape"),
        (_parent_after_child, "parents must precede"),
        (_drop_fps, "fps"),
        (_bad_velocity_shape, "global_velocity has shape"),
    ],
)
def test_npy_bad_content_is_reported(tmp_path, edit, message):
    path = _save_modified(tmp_path, edit)
    with pytest.raises(MotionFileError, match=message) as err:
        load_poselib(path)
    assert "modified.npy" in str(err.value)


def test_npy_broken_files_are_reported(tmp_path):
    original = (CLIPS / "amp_humanoid_run.npy").read_bytes()
    cases = {
        "missing.npy": None,
        "empty.npy": b"",
        "truncated.npy": original[: len(original) // 2],
        "garbage.npy": b"this is not numpy at all" * 10,
    }
    for name, data in cases.items():
        if data is not None:
            (tmp_path / name).write_bytes(data)
        with pytest.raises(MotionFileError, match=name.replace(".", r"\.")):
            load_poselib(tmp_path / name)
    np.save(tmp_path / "plain.npy", np.zeros((3, 4)))
    with pytest.raises(MotionFileError, match="plain float64 array"):
        load_poselib(tmp_path / "plain.npy")


# ----------------------------------------------------------------------------------- clip ops
def test_trim_and_resample():
    clip = load_poselib(CLIPS / "amp_humanoid_walk.npy", dtype=torch.float64)
    part = clip.trim(10, 40)
    assert part.num_frames == 30 and torch.equal(part.local_rotation, clip.local_rotation[10:40])
    assert torch.equal(part.global_velocity, clip.global_velocity[10:40])
    with pytest.raises(MotionFileError):
        clip.trim(50, 50)

    half = clip.resample(30)
    assert half.num_frames == 77 and half.fps == 30
    assert torch.allclose(half.root_translation, clip.root_translation[::2], atol=1e-12)
    # (the file's quaternions are unit only to float32 precision; slerp returns unit ones)
    original = rot.quat_normalize(clip.local_rotation[::2])
    assert torch.allclose(rot.quat_angle_between(half.local_rotation, original), torch.zeros(77, 15, dtype=torch.float64), atol=1e-6)
    double = clip.resample(120)
    assert double.num_frames == 307 and double.duration == pytest.approx(clip.duration)
    midpoint = 0.5 * (clip.root_translation[:-1] + clip.root_translation[1:])
    assert torch.allclose(double.root_translation[1::2], midpoint, atol=1e-12)
    # velocities are recomputed on the new frames and agree with the original ones away from the
    # ends (smoothing spans 2 frames at either rate, so it blurs less at 120 fps)
    inner = slice(8, -8)
    error = (double.global_velocity[::2][inner] - clip.global_velocity[inner]).norm(dim=-1).mean()
    assert error < 0.1 * clip.global_velocity[inner].norm(dim=-1).mean()


def test_skeleton_validation():
    offsets = torch.zeros(3, 3)
    with pytest.raises(MotionFileError, match="precede"):
        Skeleton(["a", "b", "c"], [-1, 2, 0], offsets)
    with pytest.raises(MotionFileError, match="root"):
        Skeleton(["a", "b", "c"], [0, -1, 0], offsets)
    with pytest.raises(MotionFileError, match="parent_indices has shape"):
        Skeleton(["a", "b", "c"], [-1, 0], offsets)
    with pytest.raises(MotionFileError, match="repeat"):
        Skeleton(["a", "b", "a"], [-1, 0, 1], offsets)
    with pytest.raises(MotionFileError, match="no joint 'z'"):
        Skeleton(["a", "b", "c"], [-1, 0, 1], offsets).index("z")


# ---------------------------------------------------------------------------------------- BVH
def test_bvh_01_01_parses_fast_and_starts_in_t_pose(bvh_01_01):
    start = time.perf_counter()
    load_bvh(MOCAP / "cmu_bvh" / "01_01.bvh")
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"parsing 2752 frames took {elapsed:.2f} s"  # ~0.3 s on an idle core

    clip = bvh_01_01
    assert (clip.num_frames, clip.fps, clip.num_joints) == (2752, 120.0, 31)
    assert clip.duration == pytest.approx(22.93, abs=0.01)
    # frame 1 is a T-pose: only the hips and shoulders are turned, and by less than 20 degrees
    sk = clip.skeleton
    turned = [sk.node_names[j] for j in range(31) if rot.quat_angle_between(clip.local_rotation[0, j], rot.quat_identity((), torch.float64)) > 1e-9]
    assert sorted(turned) == ["LeftArm", "LeftUpLeg", "RightArm", "RightUpLeg"]
    assert rot.quat_to_axis_angle(clip.local_rotation[0])[1].max() < np.deg2rad(20)
    pos = clip.global_translation[0]
    hands = pos[[sk.index("LeftHand"), sk.index("RightHand")]]
    assert (hands[:, 1] - pos[sk.index("LeftArm"), 1]).abs().max() < 1.0  # arms out sideways
    assert (hands[0] - hands[1]).norm() > 20.0
    # along the unrotated spine, FK is the root plus the accumulated offsets
    chain = ["Hips", "LowerBack", "Spine", "Spine1", "Neck", "Neck1", "Head"]
    expected = pos[0] + torch.cumsum(sk.local_translation[[sk.index(n) for n in chain]][1:], dim=0)
    assert torch.allclose(pos[[sk.index(n) for n in chain[1:]]], expected, atol=1e-9)
    # bone lengths stay constant over the take
    parents = sk.parent_indices
    lengths = (clip.global_translation[:, 1:] - clip.global_translation[:, parents[1:]]).norm(dim=-1)
    assert torch.allclose(lengths, sk.local_translation[1:].norm(dim=-1).expand_as(lengths), atol=1e-9)
    # in metres the hips stand about 1 m high (CMU units, y up)
    assert 0.8 < clip.root_translation[:, 1].mean() * CMU_UNITS_TO_M < 1.1


@pytest.mark.parametrize("name, frames", [("131_01.bvh", 994), ("131_03.bvh", 1102)])
def test_bvh_mixed_line_endings(name, frames):
    raw = (MOCAP / "cmu_bvh" / name).read_bytes()
    assert b"\r\n" in raw and b"\n" in raw.replace(b"\r\n", b"")
    clip = load_bvh(MOCAP / "cmu_bvh" / name, scale=CMU_UNITS_TO_M)
    assert clip.num_frames == frames and clip.fps == 120 and clip.skeleton.node_names[2] == "LeftHip"
    assert 0.7 < clip.root_translation[:, 1].mean() < 1.1  # metres


def test_bvh_channel_orders_and_position_channels(tmp_path):
    text = """HIERARCHY
ROOT base
{
  OFFSET 1 2 3
  CHANNELS 6 Xposition Zposition Yposition Xrotation Yrotation Zrotation
  JOINT arm
  {
    OFFSET 0 1 0
    CHANNELS 5 Yrotation Xposition Yposition Zposition Xrotation
    End Site
    {
      OFFSET 0 0 1
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.5
10 30 20 90 0 0 45 4 5 6 30
11 31 21 0 90 0 -45 4 5 6 0
"""
    path = tmp_path / "orders.bvh"
    path.write_text(text)
    clip = load_bvh(path, dtype=torch.float64)
    assert clip.fps == 2.0 and clip.skeleton.node_names == ["base", "arm"]
    assert torch.equal(clip.root_translation, torch.tensor([[10.0, 20, 30], [11, 21, 31]], dtype=torch.float64))
    assert torch.equal(clip.skeleton.local_translation[1], torch.tensor([4.0, 5, 6], dtype=torch.float64))
    deg = torch.tensor([[[90.0, 0, 0], [45, 30, 0]], [[0, 90, 0], [-45, 0, 0]]], dtype=torch.float64).deg2rad()
    expected_root = rot.quat_from_euler(deg[:, 0], "xyz")
    expected_arm = rot.quat_from_euler(deg[:, 1, :2], "yx")  # R = Ry Rx in channel order
    assert torch.allclose(clip.local_rotation[:, 0], expected_root)
    assert torch.allclose(clip.local_rotation[:, 1], expected_arm)

    path.write_text(text.replace("-45 4 5 6 0", "-45 4 5 7 0"))
    with pytest.raises(MotionFileError, match="animated Zposition"):
        load_bvh(path)


def _drop_last_lines(n):
    return lambda data: b"\n".join(data.rstrip(b"\n").split(b"\n")[:-n]) + b"\n"


def _drop_value_in_frame(data):
    lines = data.split(b"\n")
    idx = next(i for i, line in enumerate(lines) if line.startswith(b"Frame Time")) + 10
    lines[idx] = lines[idx].rsplit(b" ", 1)[0]
    return b"\n".join(lines)


def _inject_nan(data):
    lines = data.split(b"\n")
    idx = next(i for i, line in enumerate(lines) if line.startswith(b"Frame Time")) + 5
    values = lines[idx].split(b" ")
    values[7] = b"nan"
    lines[idx] = b" ".join(values)
    return b"\n".join(lines)


@pytest.mark.parametrize(
    "name, edit, message",
    [
        ("truncated.bvh", _drop_last_lines(5), "truncated: declares 60 frames, holds 55"),
        ("short_frame.bvh", _drop_value_in_frame, r"frame 10 \(line \d+\) has 95 values, the hierarchy declares 96"),
        ("nan.bvh", _inject_nan, "frame 5 .* channel 8 is nan"),
        ("channel_count.bvh", lambda d: d.replace(b"CHANNELS 6", b"CHANNELS 5", 1), "more channel names than its CHANNELS count 5"),
        ("channel_count_up.bvh", lambda d: d.replace(b"CHANNELS 3", b"CHANNELS 4", 1), "has channel 'JOINT'.*CHANNELS says 4"),
        ("bad_channel.bvh", lambda d: d.replace(b"Zrotation", b"Wrotation", 1), "'Wrotation'"),
        ("no_motion.bvh", lambda d: d[: d.index(b"MOTION")], "no MOTION section"),
        ("empty.bvh", lambda d: b"", "empty"),
        ("frames_text.bvh", lambda d: d.replace(b"Frames: 60", b"Frames: sixty"), "Frames: value"),
    ],
)
def test_bvh_corrupt_files_are_reported(tmp_path, name, edit, message):
    path = _copy_text(DATA / "131_01_first60.bvh", tmp_path / name, edit)
    with pytest.raises(MotionFileError, match=message) as err:
        load_bvh(path)
    assert name in str(err.value)


def test_bvh_excerpt_and_missing_file(tmp_path):
    clip = load_bvh(DATA / "131_01_first60.bvh")
    full = load_bvh(MOCAP / "cmu_bvh" / "131_01.bvh")
    assert clip.num_frames == 60 and torch.equal(clip.local_rotation, full.local_rotation[:60])
    with pytest.raises(MotionFileError, match="nothere.bvh: no such motion file"):
        load_bvh(tmp_path / "nothere.bvh")


# ------------------------------------------------------------------------------------ ASF/AMC
def test_asf_units_and_skeleton():
    asf = read_asf(MOCAP / "cmu_asf_amc" / "01.asf")
    assert asf.units_to_m == pytest.approx(CMU_UNITS_TO_M, rel=1e-4) and asf.angle_unit == "deg"
    assert asf.root_order == ["tx", "ty", "tz", "rx", "ry", "rz"]
    assert asf.bones["lfoot"].dof == ["rx", "rz"] and asf.bones["lfemur"].axis_angles == (0.0, 0.0, 20.0)
    sk = asf.skeleton()
    assert sk.num_joints == 31 and sk.node_names[0] == "root"
    # lfemur starts where lhipjoint ends: direction * length
    lhip = asf.bones["lhipjoint"]
    expected = torch.tensor([d * lhip.length for d in lhip.direction])
    assert torch.allclose(sk.local_translation[sk.index("lfemur")], expected)


def test_asf_amc_matches_the_bvh_conversion_of_the_same_take(amc_01_01, bvh_01_01):
    assert amc_01_01.num_frames == 2751 and amc_01_01.fps == 120
    amc_ids = [amc_01_01.skeleton.index(n) for n in ASF_TO_BVH]
    bvh_ids = [bvh_01_01.skeleton.index(n) for n in ASF_TO_BVH.values()]
    # the BVH has a T-pose frame in front: its frame k + 1 is AMC frame k
    amc_pos = amc_01_01.global_translation[:, amc_ids]
    bvh_pos = bvh_01_01.global_translation[1:, bvh_ids]
    assert (amc_pos - bvh_pos).norm(dim=-1).max() < 1e-3  # CMU units (0.06 mm)
    # and so does the hips' relative motion in metres
    hips = (amc_01_01.root_translation - amc_01_01.root_translation[0]) * CMU_UNITS_TO_M
    assert hips.norm(dim=-1).max() > 2.0  # the take travels several metres


def test_asf_amc_second_subject():
    clip = load_motion(MOCAP / "cmu_asf_amc" / "11_01.amc")
    assert clip.num_frames == 597 and clip.skeleton.node_names[0] == "root"


def _rename_bone(data):
    return data.replace(b"\nltoes ", b"\nltoez ", 1)


def _extra_value(data):
    return data.replace(b"\nrtibia ", b"\nrtibia 1.0 ", 1)


def _renumber_frame_7(data):
    lines = data.split(b"\n")
    idx = next(i for i, line in enumerate(lines) if line.strip() == b"7")
    lines[idx] = b"8"
    return b"\n".join(lines)


def _nan_in_first_lfemur(data):
    lines = data.split(b"\n")
    idx = next(i for i, line in enumerate(lines) if line.startswith(b"lfemur "))
    lines[idx] = b"lfemur nan 1 2"
    return b"\n".join(lines)


@pytest.mark.parametrize(
    "name, edit, message",
    [
        ("unknown.amc", _rename_bone, r"unknown joint 'ltoez'"),
        ("extra.amc", _extra_value, r"'rtibia' has 2 values, its dof in 01\.asf is \['rx'\]"),
        ("nan.amc", _nan_in_first_lfemur, r"frame 1 .* 'lfemur' has NaN or inf"),
        ("truncated.amc", _drop_last_lines(4), r"frame 60 .* has no values for"),
        ("empty.amc", lambda d: b"", "empty"),
        ("frame_gap.amc", _renumber_frame_7, "frame number 8 breaks the sequence"),
    ],
)
def test_amc_corrupt_files_are_reported(tmp_path, name, edit, message):
    path = _copy_text(DATA / "01_01_first60.amc", tmp_path / name, edit)
    with pytest.raises(MotionFileError, match=message) as err:
        load_asf_amc(path, DATA / "01.asf")
    assert name in str(err.value)


def test_asf_broken_and_missing(tmp_path):
    no_hierarchy = _copy_text(DATA / "01.asf", tmp_path / "nohier.asf", lambda d: d[: d.index(b":hierarchy")])
    with pytest.raises(MotionFileError, match=r"nohier\.asf: no :hierarchy section"):
        read_asf(no_hierarchy)
    unknown = _copy_text(DATA / "01.asf", tmp_path / "unknownbone.asf", lambda d: d.replace(b"lfemur ltibia", b"lfemur lshin"))
    with pytest.raises(MotionFileError, match="'lshin', which is not a bone"):
        read_asf(unknown)
    with pytest.raises(MotionFileError, match="gone.asf: no such motion file"):
        load_asf_amc(DATA / "01_01_first60.amc", tmp_path / "gone.asf")
    clip = load_asf_amc(DATA / "01_01_first60.amc", DATA / "01.asf")
    assert clip.num_frames == 60


# ---------------------------------------------------------------------------------------- FBX
def test_fbx_cmu_takes_durations_and_skeleton():
    tpose = load_poselib(MOCAP / "cmu_tpose.npy")
    for take in ("09_11", "07_01"):
        clip = load_fbx(MOCAP / "cmu_fbx" / f"{take}_cmu.fbx")
        assert clip.fps == 120 and clip.duration == pytest.approx(FBX_DURATIONS[take], abs=0.01)
        # same joints and tree as poselib's T-pose of the CMU skeleton
        assert clip.skeleton.node_names == tpose.skeleton.node_names
        assert torch.equal(clip.skeleton.parent_indices, tpose.skeleton.parent_indices)


def test_fbx_world_positions_match_ufbx_and_bvh(bvh_01_01):
    import ufbx

    path = MOCAP / "cmu_fbx" / "01_01_cmu.fbx"
    clip = load_fbx(path, dtype=torch.float64)
    assert clip.num_frames == 2752 and clip.duration == pytest.approx(FBX_DURATIONS["01_01"], abs=0.01)

    scene = ufbx.load_file(str(path))
    keep = []  # ufbx 0.0.5: keep element wrappers alive while the scene lives
    for frame in (0, 700, 2000):
        evaluated = ufbx.evaluate_scene(scene, scene.anim, frame / 120.0)
        node_list = evaluated.nodes
        nodes = [node_list[i] for i in range(len(node_list))]
        keep += [evaluated, nodes]
        world = {n.name: n.node_to_world.c3 for n in nodes}
        for j, name in enumerate(clip.skeleton.node_names):
            expected = torch.tensor([world[name].x, world[name].y, world[name].z], dtype=torch.float64)
            assert torch.allclose(clip.global_translation[frame, j], expected, atol=1e-2), (frame, name)

    # ufbx world = CMU units x 100: the BVH conversion of the same take agrees
    metres = load_fbx(path, scale=0.01, dtype=torch.float64)
    common = [n for n in bvh_01_01.skeleton.node_names if n in metres.skeleton.node_names]
    fbx_pos = metres.global_translation[:, [metres.skeleton.index(n) for n in common]]
    bvh_pos = bvh_01_01.global_translation[:, [bvh_01_01.skeleton.index(n) for n in common]]
    assert len(common) == 29 and (fbx_pos - bvh_pos).norm(dim=-1).mean() < 0.05


def test_fbx_01_01_maps_onto_the_hop_clip():
    hop = load_poselib(CLIPS / "amp_humanoid_hop.npy", dtype=torch.float64)
    take = load_fbx(MOCAP / "cmu_fbx" / "01_01_cmu.fbx", dtype=torch.float64).resample(60)
    hips = take.root_translation[75:372]
    mapped = hips[:, [2, 0, 1]] * CMU_FBX_UNITS_TO_M  # ufbx (x, y up, z) -> (z, x, y) z-up metres
    error = (mapped - mapped[0]) - (hop.root_translation - hop.root_translation[0])
    assert error.norm(dim=-1).mean() < 0.02


def test_fbx_broken_files_are_reported(tmp_path):
    original = (MOCAP / "cmu_fbx" / "09_11_cmu.fbx").read_bytes()
    cases = {"empty.fbx": b"", "truncated.fbx": original[: len(original) // 3], "garbage.fbx": b"\x00\x01garbage" * 100}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(MotionFileError, match=name.replace(".", r"\.")):
            load_fbx(tmp_path / name)
    with pytest.raises(MotionFileError, match="nofile.fbx: no such motion file"):
        load_fbx(tmp_path / "nofile.fbx")
    with pytest.raises(MotionFileError, match="no node named 'Pelvis'"):
        load_fbx(MOCAP / "cmu_fbx" / "09_11_cmu.fbx", root_joint="Pelvis")


# ------------------------------------------------------------------------------- load_motion
def test_load_motion_dispatches_on_suffix(tmp_path):
    assert load_motion(CLIPS / "amp_humanoid_run.npy").num_frames == 82
    assert load_motion(DATA / "131_01_first60.bvh").num_frames == 60
    assert load_motion(MOCAP / "cmu_fbx" / "09_11_cmu.fbx").num_joints == 38
    amc = tmp_path / "01_01.amc"
    amc.write_bytes((DATA / "01_01_first60.amc").read_bytes())
    with pytest.raises(MotionFileError, match="no skeleton file found"):
        load_motion(amc)
    (tmp_path / "01.asf").write_bytes((DATA / "01.asf").read_bytes())
    assert load_motion(amc).num_frames == 60
    with pytest.raises(MotionFileError, match="unsupported motion file type '.c3d'"):
        load_motion(tmp_path / "take.c3d")
