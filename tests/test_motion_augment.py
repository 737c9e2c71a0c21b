"""Clips made from others (ase_humanoid/motion/augment.py, tools/curve_motion.py,
tools/mirror_motion.py). Turning clips: the path turns at the asked rate, the poses and the speed
along the path stay the clip's, turning back undoes it, the shipped turning clips are what the
tool makes of the walk clip, and turning about the stance foot keeps that foot planted. Mirror
images: every body lands at its partner's reflected place, a right turn becomes a left one,
mirroring twice gives the clip back, an asymmetric skeleton is refused by name."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from project_scripts import load_script

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.augment import curve_path, mirror, mirror_partners
from ase_humanoid.motion.io import load_motion
from ase_humanoid.utils import rotations as rot

ROOT = Path(__file__).resolve().parents[1]
WALK = ROOT / "motions" / "amp_humanoid" / "amp_humanoid_walk.npy"
curve_motion = load_script("tools/curve_motion.py")
mirror_motion = load_script("tools/mirror_motion.py")
RETARGETED = ROOT / "motions" / "retargeted"


@pytest.fixture(scope="module")
def walk():
    return load_motion(WALK)


def unwrapped_heading(clip) -> torch.Tensor:
    """Root heading `[T]` without jumps of 2 pi."""
    step = rot.normalize_angle(torch.diff(rot.calc_heading(clip.local_rotation[:, 0])))
    return torch.cat([torch.zeros(1, dtype=step.dtype), torch.cumsum(step, 0)])


@pytest.mark.parametrize("yaw_rate", [0.5, -1.0])
def test_path_turns_at_the_rate_and_keeps_poses_and_speed(walk, yaw_rate):
    curved = curve_path(walk, yaw_rate)
    extra = unwrapped_heading(curved) - unwrapped_heading(walk)
    times = torch.arange(walk.num_frames, dtype=extra.dtype) / walk.fps
    assert torch.allclose(extra, yaw_rate * times, atol=1e-4)
    assert torch.equal(curved.local_rotation[:, 1:], walk.local_rotation[:, 1:])
    assert torch.equal(curved.root_translation[:, 2], walk.root_translation[:, 2])
    step_length = lambda clip: torch.diff(clip.root_translation[:, :2], dim=0).norm(dim=-1)  # noqa: E731
    assert torch.allclose(step_length(curved), step_length(walk), atol=1e-5)
    assert torch.allclose(curved.root_translation[0], walk.root_translation[0])


def test_velocities_seen_from_the_root_gain_only_the_turn(walk):
    """What the AMP observations see: the root's angular velocity about z grows by the yaw rate,
    its velocity in its own heading frame stays (away from the smoothed ends of the clip)."""
    yaw_rate = 0.8
    curved = curve_path(walk, yaw_rate)
    inner = slice(10, -10)
    spin = curved.global_angular_velocity[inner, 0, 2] - walk.global_angular_velocity[inner, 0, 2]
    assert torch.allclose(spin, torch.full_like(spin, yaw_rate), atol=0.02)

    def local_velocity(clip):
        heading_inv = rot.calc_heading_quat_inv(clip.local_rotation[inner, 0])
        return rot.quat_rotate(heading_inv, clip.global_velocity[inner, 0])

    assert (local_velocity(curved) - local_velocity(walk)).abs().max() < 0.05


def test_turning_back_restores_the_clip(walk):
    back = curve_path(curve_path(walk, 1.2), -1.2)
    assert torch.allclose(back.root_translation, walk.root_translation, atol=1e-5)
    assert torch.allclose(rot.quat_angle_between(back.local_rotation[:, 0], walk.local_rotation[:, 0]),
                          torch.zeros(walk.num_frames), atol=1e-3)


def stance_foot_speeds(clip) -> torch.Tensor:
    """Horizontal speed (m/s) of the lower foot between frames where it stays the lower one `[n]`."""
    feet = [clip.skeleton.node_names.index(name) for name in ("left_foot", "right_foot")]
    pos = clip.global_translation[:, feet]  # [T, 2, 3]
    lower = pos[..., 2].argmin(dim=1)
    speed = torch.diff(pos[..., :2], dim=0).norm(dim=-1) * clip.fps  # [T - 1, 2]
    speed = speed[torch.arange(clip.num_frames - 1), lower[1:]]
    return speed[lower[1:] == lower[:-1]]


@pytest.mark.parametrize("yaw_rate", [1.0, -2.0])
def test_pivoting_on_the_stance_foot_turns_at_the_rate_and_keeps_the_foot_planted(walk, yaw_rate):
    pivoted = curve_path(walk, yaw_rate, pivot="stance_foot")
    extra = unwrapped_heading(pivoted) - unwrapped_heading(walk)
    times = torch.arange(walk.num_frames, dtype=extra.dtype) / walk.fps
    assert torch.allclose(extra, yaw_rate * times, atol=1e-4)
    assert torch.equal(pivoted.local_rotation[:, 1:], walk.local_rotation[:, 1:])
    assert torch.equal(pivoted.root_translation[:, 2], walk.root_translation[:, 2])
    # the planted foot moves as in the straight clip; turning about the root drags it round
    straight, pivot_slide = stance_foot_speeds(walk), stance_foot_speeds(pivoted)
    root_slide = stance_foot_speeds(curve_path(walk, yaw_rate))
    assert torch.allclose(pivot_slide, straight, atol=1e-3)
    assert root_slide.median() > 0.2 and pivot_slide.median() < 0.01


def test_unknown_pivot_and_a_skeleton_without_feet_are_clear_errors(walk):
    with pytest.raises(MotionFileError, match="pivot 'hand': must be one of root, stance_foot"):
        curve_path(walk, 1.0, pivot="hand")
    footless = walk.skeleton.__class__(
        [name.replace("foot", "paw") for name in walk.skeleton.node_names], walk.skeleton.parent_indices,
        walk.skeleton.local_translation)
    clip = walk.__class__(footless, walk.local_rotation, walk.root_translation, walk.fps)
    with pytest.raises(MotionFileError, match="two joints named \\*foot\\*; the skeleton's joints: pelvis"):
        curve_path(clip, 1.0, pivot="stance_foot")


@pytest.mark.parametrize("yaw_rate", [math.nan, math.inf, 10.0])
def test_implausible_yaw_rate_is_a_clear_error(walk, yaw_rate):
    with pytest.raises(MotionFileError, match="yaw rate"):
        curve_path(walk, yaw_rate)


@pytest.mark.parametrize("name, yaw_rate", [("left_0.5", 0.5), ("right_0.5", -0.5), ("left_1.0", 1.0),
                                            ("right_1.0", -1.0)])
def test_shipped_turning_clips_are_the_tools_output(walk, name, yaw_rate):
    shipped = load_motion(ROOT / "motions" / "turning" / f"amp_humanoid_walk_{name}.npy")
    made = curve_path(walk, yaw_rate)
    assert shipped.num_frames == made.num_frames and shipped.fps == made.fps
    assert torch.allclose(shipped.root_translation, made.root_translation, atol=1e-5)
    assert torch.allclose(shipped.global_translation, made.global_translation, atol=1e-4)


def test_cli_writes_a_clip_that_loads(tmp_path, capsys):
    out = tmp_path / "walk_left.npy"
    assert curve_motion.main([str(WALK), "--yaw-rate", "0.7", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert load_motion(out).num_frames == load_motion(WALK).num_frames


def test_cli_pivots_on_the_stance_foot_when_asked(tmp_path, walk):
    out = tmp_path / "walk_left_pivot.npy"
    assert curve_motion.main([str(WALK), "--yaw-rate", "1.5", "--pivot", "stance_foot", "--out", str(out)]) == 0
    made = curve_path(walk, 1.5, pivot="stance_foot")
    assert torch.allclose(load_motion(out).root_translation, made.root_translation, atol=1e-5)


@pytest.mark.parametrize("args, message", [
    (["--yaw-rate", "0.5", "--out", "{tmp}/walk.txt"], "suffix"),
    (["--yaw-rate", "99", "--out", "{tmp}/walk.npy"], "yaw rate"),
])
def test_cli_bad_arguments_name_the_problem_and_write_nothing(tmp_path, capsys, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert curve_motion.main([str(WALK), *args]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_cli_missing_input_names_the_file(tmp_path, capsys):
    missing = tmp_path / "nope.npy"
    assert curve_motion.main([str(missing), "--yaw-rate", "0.5", "--out", str(tmp_path / "o.npy")]) == 2
    assert "nope.npy" in capsys.readouterr().err


def test_mirror_puts_every_body_at_its_partners_reflected_place(walk):
    mirrored = mirror(walk)
    partners = mirror_partners(walk.skeleton)
    names = walk.skeleton.node_names
    assert names[int(partners[names.index("left_foot")])] == "right_foot"
    assert names[int(partners[names.index("pelvis")])] == "pelvis"
    reflect = torch.tensor([1.0, -1.0, 1.0])
    torch.testing.assert_close(mirrored.global_translation[:, partners] * reflect, walk.global_translation,
                               atol=1e-5, rtol=0)
    torch.testing.assert_close(mirrored.global_velocity[:, partners] * reflect, walk.global_velocity,
                               atol=1e-3, rtol=0)
    torch.testing.assert_close(mirror(mirrored).global_translation, walk.global_translation, atol=1e-5, rtol=0)


def test_mirrored_right_turn_turns_left_as_far(tmp_path, capsys):
    source = RETARGETED / "cmu_01_01_turn_right_amp_humanoid.npy"
    out = tmp_path / "turn_left.npy"
    assert mirror_motion.main([str(source), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    turn, mirrored = load_motion(source), load_motion(out)
    assert float(unwrapped_heading(turn)[-1]) < -2.8
    assert float(unwrapped_heading(mirrored)[-1]) == pytest.approx(-float(unwrapped_heading(turn)[-1]), abs=1e-4)


@pytest.mark.parametrize("source", ["amp_humanoid/amp_humanoid_walk", "amp_humanoid/amp_humanoid_run",
                                    "retargeted/cmu_131_01_walk_amp_humanoid",
                                    "retargeted/cmu_01_01_turn_right_amp_humanoid",
                                    "retargeted/cmu_01_01_turn_left_amp_humanoid"])
def test_shipped_mirrored_clips_are_the_tools_output(source):
    original = load_motion(ROOT / "motions" / f"{source}.npy")
    shipped = load_motion(ROOT / "motions" / "mirrored" / f"{Path(source).name}_mirrored.npy")
    made = mirror(original)
    assert shipped.num_frames == made.num_frames and shipped.fps == made.fps
    torch.testing.assert_close(shipped.global_translation, made.global_translation, atol=1e-6, rtol=0)
    torch.testing.assert_close(shipped.local_rotation, made.local_rotation, atol=1e-6, rtol=0)
    # a reflection: the root's lateral position and its turn change sign
    torch.testing.assert_close(shipped.root_translation[:, 1], -original.root_translation[:, 1], atol=1e-5, rtol=0)
    assert float(unwrapped_heading(shipped)[-1]) == pytest.approx(-float(unwrapped_heading(original)[-1]), abs=1e-4)


def test_mirror_refuses_an_asymmetric_skeleton_by_joint_and_writes_nothing(tmp_path, capsys):
    source = RETARGETED / "cmu_01_01_turn_right_sword_shield.npy"
    with pytest.raises(MotionFileError, match="'sword' hangs from 'right_hand'"):
        mirror(load_motion(source))
    assert mirror_motion.main([str(source), "--out", str(tmp_path / "o.npy")]) == 2
    assert "not left-right symmetric" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("change, message", [
    ("offset", "its mirror image 'left_thigh' at"),
    ("name", "joint 'left_foot' has no partner 'right_foot'"),
])
def test_mirror_checks_offsets_and_names_pair_up(walk, change, message):
    from ase_humanoid.motion.clip import MotionClip
    from ase_humanoid.motion.skeleton import Skeleton

    names = list(walk.skeleton.node_names)
    offsets = walk.skeleton.local_translation.clone()
    if change == "offset":
        offsets[names.index("left_thigh"), 1] += 0.02
    else:
        names[names.index("right_foot")] = "r_foot"
    skeleton = Skeleton(names, walk.skeleton.parent_indices, offsets)
    with pytest.raises(MotionFileError, match=message):
        mirror(MotionClip(skeleton, walk.local_rotation, walk.root_translation, walk.fps))
