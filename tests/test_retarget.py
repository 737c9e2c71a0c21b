"""Retargeting raw CMU mocap onto the humanoids: the shipped hop clip is reproduced from the raw
FBX take, BVH / ASF-AMC takes give plausible, simulator-exact clips, errors name what is wrong."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from project_scripts import load_script

from ase_humanoid.errors import ConfigError
from ase_humanoid.motion.poselib_npy import load_poselib
from ase_humanoid.motion.retarget import (
    RetargetConfig,
    dof_round_trip_error,
    load_retarget_settings,
    lowest_geom_height,
    project_hinges,
    retarget_from_settings,
    robot_geoms,
    robot_local_rotation,
)
from ase_humanoid.robots.description import load_robot
from ase_humanoid.robots.kinematics import forward_kinematics, local_rot_to_dof_pos
from ase_humanoid.utils import rotations as rot

ROOT = Path(__file__).resolve().parents[1]
MOCAP = ROOT / "motions" / "mocap"
KEY_BODIES = ["head", "right_hand", "left_hand", "right_foot", "left_foot"]


@pytest.fixture(scope="module")
def amp():
    return load_robot("amp_humanoid")


def key_ids(robot):
    return [robot.body_id(n) for n in KEY_BODIES]


def test_fbx_01_01_reproduces_shipped_hop_clip(amp):
    settings = load_retarget_settings(ROOT / "cfg" / "retarget" / "example_cmu_hop.yaml")
    assert Path(settings["source"]) == MOCAP / "cmu_fbx" / "01_01_cmu.fbx"
    clip, result, robot = retarget_from_settings(settings)
    hop = load_poselib(ROOT / "motions" / "amp_humanoid" / "amp_humanoid_hop.npy")
    assert clip.num_frames == hop.num_frames == 297 and clip.fps == 60
    ids = key_ids(robot)
    error = (clip.global_translation[:, ids] - hop.global_translation[:, ids]).norm(dim=-1)
    print(f"hop clip from raw FBX: mean key-body error {100 * error.mean():.2f} cm, "
          f"per body {[round(100 * float(e), 2) for e in error.mean(0)]} cm")
    assert error.mean() < 0.03
    # The stored velocities were recomputed for the new clip and agree with the shipped ones.
    vel_err = (clip.global_velocity[:, 0] - hop.global_velocity[:, 0]).norm(dim=-1).mean()
    assert vel_err < 0.1


def _check_plausible(clip, result, robot, label):
    geoms = robot_geoms(robot)
    lowest = lowest_geom_height(geoms, clip.global_translation, clip.global_rotation)
    assert abs(float(lowest.min())) < 0.01, f"{label}: lowest point {float(lowest.min()):.3f} m"
    # Head centre (its sphere sits 0.175 m above the neck) while standing upright at the start.
    head = robot.body_id("head")
    head_center = clip.global_translation[:, head] + rot.quat_rotate(
        clip.global_rotation[:, head], torch.tensor([0.0, 0.0, 0.175]).expand(clip.num_frames, 3))
    standing = float(head_center[:10, 2].mean())
    assert 1.4 < standing < 1.8, f"{label}: head at {standing:.2f} m"
    # Elbows and knees are exactly hinges, welded bodies exactly identity: dof_pos round trip exact.
    assert dof_round_trip_error(robot, clip.local_rotation) < 1e-5
    lower, upper = robot.dof_limits_lower, robot.dof_limits_upper
    outside = ((result.dof_pos < lower - math.radians(1)) | (result.dof_pos > upper + math.radians(1))).double().mean()
    print(f"{label}: lowest point {1000 * float(lowest.min()):.1f} mm, head {standing:.2f} m, "
          f"{100 * float(outside):.2f}% of dof values outside limits; {result.limit_report}")
    assert outside < 0.02


@pytest.mark.parametrize("source", ["cmu_bvh/01_01.bvh", "cmu_asf_amc/01_01.amc"])
def test_bvh_and_asf_amc_takes_give_plausible_clips(source):
    settings = load_retarget_settings(preset="cmu", overrides=dict(source=str(MOCAP / source), fps=30, start=20, end=240))
    clip, result, robot = retarget_from_settings(settings)
    assert clip.num_frames == 220 and clip.fps == 30
    _check_plausible(clip, result, robot, source)


def test_sword_shield_target_has_17_bodies_and_props_follow_the_arms():
    settings = load_retarget_settings(preset="cmu", overrides=dict(
        source=str(MOCAP / "cmu_bvh" / "131_03.bvh"), target="sword_shield", fps=30, start=0, end=60))
    clip, result, robot = retarget_from_settings(settings)
    assert robot.num_bodies == 17 and clip.num_joints == 17 and result.dof_pos.shape == (60, 31)
    for prop, holder in (("sword", "right_hand"), ("shield", "left_lower_arm")):
        b, h = robot.body_id(prop), robot.body_id(holder)
        torch.testing.assert_close(clip.local_rotation[:, b], rot.quat_identity(60).expand(60, 4))
        expected = clip.global_translation[:, h] + rot.quat_rotate(
            clip.global_rotation[:, h], robot.local_translation[b].expand(60, 3))
        torch.testing.assert_close(clip.global_translation[:, b], expected, atol=1e-5, rtol=0)
    _check_plausible(clip, result, robot, "131_03 sword_shield")


def test_hinge_projection_keeps_elbow_and_wrist_positions(amp):
    # A random-ish arm pose: shoulder anywhere, elbow bent 70 deg plus some off-axis swing/twist.
    g = torch.Generator().manual_seed(3)
    T = 64
    local = rot.quat_identity((T, amp.num_bodies), dtype=torch.float64)
    ua, la = amp.body_id("right_upper_arm"), amp.body_id("right_lower_arm")
    local[:, ua] = rot.quat_normalize(torch.randn(T, 4, generator=g, dtype=torch.float64))
    bend = rot.quat_from_axis_angle(torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64).expand(T, 3),
                                    torch.full((T,), -1.2, dtype=torch.float64))
    wobble = rot.exp_map_to_quat(0.15 * torch.randn(T, 3, generator=g, dtype=torch.float64))
    local[:, la] = rot.quat_mul(bend, wobble)
    zeros, ident = torch.zeros(T, 3, dtype=torch.float64), rot.quat_identity(T, dtype=torch.float64)
    offsets = amp.local_translation.double()
    pos0, glob0 = forward_kinematics(amp.parent_indices, offsets, local, zeros, ident)
    glob1, angle = project_hinges(amp, glob0)
    pos1, _ = forward_kinematics(amp.parent_indices, offsets, robot_local_rotation(amp, glob1, angle), zeros, ident)
    hand = amp.body_id("right_hand")
    assert (pos1[:, [la, hand]] - pos0[:, [la, hand]]).norm(dim=-1).max() < 1e-6
    k = amp.hinge_body_ids.tolist().index(la)
    # The hinge angle is the angle between the upper and lower arm bones (bent the elbow's way).
    upper_dir = pos0[:, la] - pos0[:, ua]
    lower_dir = pos0[:, hand] - pos0[:, la]
    bone_angle = torch.acos(torch.nn.functional.cosine_similarity(upper_dir, lower_dir, dim=-1))
    torch.testing.assert_close(angle[:, k], -bone_angle)
    # The projected lower arm is a pure rotation about the elbow axis.
    assert dof_round_trip_error(amp, robot_local_rotation(amp, glob1, angle)) < 1e-6


def test_lowest_geom_height_matches_mujoco(amp):
    from ase_humanoid.robots.description import load_mjcf
    from ase_humanoid.sim.scene import lowest_point_height

    hop = load_poselib(ROOT / "motions" / "amp_humanoid" / "amp_humanoid_hop.npy", dtype=torch.float64)
    frames = [0, 50, 120, 200]
    ours = lowest_geom_height(robot_geoms(amp), hop.global_translation[frames], hop.global_rotation[frames])
    model = load_mjcf(amp.mjcf_path)
    for k, f in enumerate(frames):
        qpos = np.zeros(model.nq)
        qpos[:3] = hop.root_translation[f].numpy()
        qpos[3:7] = rot.xyzw_to_wxyz(hop.local_rotation[f, 0]).numpy()
        qpos[7:] = local_rot_to_dof_pos(amp, hop.local_rotation[f]).numpy()
        theirs = lowest_point_height(model, qpos, np.arange(1, model.nbody))
        assert abs(float(ours[k]) - theirs) < 2e-3  # the clip's hands are not exact hinges/welds


def test_mapping_errors_list_valid_names():
    base = dict(source=str(MOCAP / "cmu_bvh" / "131_03.bvh"), fps=30, end=10)
    settings = load_retarget_settings(preset="cmu", overrides=base)
    settings["joint_map"] = {"Hips": "pelvis", "LeftThigh": "left_thigh"}
    with pytest.raises(ConfigError, match=r"LeftThigh.*valid source joints: Hips, LHipJoint"):
        retarget_from_settings(settings)
    settings["joint_map"] = {"Hips": "pelvis", "LeftHip": "left_femur"}
    with pytest.raises(ConfigError, match=r"left_femur.*valid target bodies: pelvis, torso, head"):
        retarget_from_settings(settings)
    settings["joint_map"] = {"Chest": "torso"}
    with pytest.raises(ConfigError, match="target root 'pelvis' must be mapped"):
        retarget_from_settings(settings)
    with pytest.raises(ConfigError, match="unknown retarget preset 'nope'; presets: cmu"):
        load_retarget_settings(preset="nope")
    with pytest.raises(ConfigError, match="'target': 'robot' is not one of amp_humanoid, sword_shield"):
        retarget_from_settings({**settings, "joint_map": None, "target": "robot"})
    with pytest.raises(ConfigError, match="'ground'"):
        RetargetConfig(joint_map={"Hips": "pelvis"}, ground="floor")


def test_unknown_config_key_is_an_error(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("preset: cmu\nsorce: x.bvh\n")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['sorce'\]; valid keys: preset, source"):
        load_retarget_settings(cfg)


def test_cli_writes_a_loadable_clip(tmp_path):
    tool = load_script("tools/retarget_motion.py")
    out = tmp_path / "walk.npy"
    rc = tool.main(["--preset", "cmu", "--source", str(MOCAP / "cmu_fbx" / "09_11_cmu.fbx"), "--out", str(out),
                    "--fps", "30", "--start", "1"])
    assert rc == 0
    clip = load_poselib(out)
    assert clip.skeleton.node_names == load_robot("amp_humanoid").body_names and clip.fps == 30
    assert tool.main(["--preset", "cmu", "--source", str(MOCAP / "cmu_fbx" / "09_11_cmu.fbx")]) == 2  # no --out


@pytest.mark.parametrize("dataset, robot_name, count", [
    ("dataset_sword_shield.yaml", "sword_shield", 8),
    ("dataset_amp_humanoid_retargeted.yaml", "amp_humanoid", 11),
])
def test_bundled_retargeted_clips_load_in_motion_lib(dataset, robot_name, count):
    from ase_humanoid.motion.motion_lib import MotionLib

    robot = load_robot(robot_name)
    lib = MotionLib(ROOT / "motions" / dataset, robot)
    assert lib.num_motions == count
    # On the floor: the lowest collision-geom point of every clip is at z = 0 within 1 mm.
    geoms = robot_geoms(robot)
    for entry in lib.motion_names:
        clip = load_poselib(ROOT / "motions" / "retargeted" / f"{entry}.npy")
        assert clip.skeleton.node_names == robot.body_names
        lowest = lowest_geom_height(geoms, clip.global_translation, clip.global_rotation).min()
        assert abs(float(lowest)) < 1e-3, entry


@pytest.mark.parametrize("robot_name", ["amp_humanoid", "sword_shield"])
@pytest.mark.parametrize("side, sign", [("right", -1.0), ("left", 1.0)])
def test_bundled_turns_on_the_spot_turn_half_round_in_place_on_the_floor(robot_name, side, sign):
    """CMU 01_01's two recorded turns: about 180 degrees the named way, within 0.6 m of
    where they start (0.51 m at most), feet on the floor, on both humanoids."""
    robot = load_robot(robot_name)
    clip = load_poselib(ROOT / "motions" / "retargeted" / f"cmu_01_01_turn_{side}_{robot_name}.npy")
    assert clip.skeleton.node_names == robot.body_names and clip.fps == 30 and clip.num_frames == 72
    heading = torch.from_numpy(np.unwrap(rot.calc_heading(clip.global_rotation[:, 0]).numpy()))
    turned = float(heading[-1] - heading[0])
    assert abs(turned - sign * math.pi) < 0.35, turned
    drift = (clip.root_translation[:, :2] - clip.root_translation[0, :2]).norm(dim=-1).max()
    assert float(drift) < 0.6
    lowest = lowest_geom_height(robot_geoms(robot), clip.global_translation, clip.global_rotation).min()
    assert abs(float(lowest)) < 1e-3
