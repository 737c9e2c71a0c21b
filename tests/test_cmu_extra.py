"""The clips cut from the 40 extra CMU takes (motions/cmu_extra, cfg/retarget/cmu_extra.yaml):
every shipped clip passes the shipped-clip checks, the datasets hold them, and the clips made
again from the bundled raw takes (motions/mocap/cmu_extra) are the shipped ones. The checks
themselves catch a floating floor, a joint past its range and a glitched frame."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from ase_humanoid.motion.clip_checks import clip_problems
from ase_humanoid.motion.ground_alignment import robot_geoms
from ase_humanoid.motion.motion_lib import MotionLib
from ase_humanoid.motion.poselib_npy import load_poselib
from ase_humanoid.motion.retarget import load_retarget_settings, retarget_from_settings
from ase_humanoid.robots import load_robot

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "cfg" / "retarget" / "cmu_extra.yaml"
CLIPS = ROOT / "motions" / "cmu_extra"
RAW = ROOT / "motions" / "mocap" / "cmu_extra"
TARGETS = ("amp_humanoid", "sword_shield")


def manifest_entries():
    data = yaml.safe_load(MANIFEST.read_text())
    return [(c, t) for c in data["clips"] for t in (c.get("targets") or data["targets"])]


def test_every_manifest_clip_ships_and_passes_the_checks():
    robots = {name: load_robot(name) for name in TARGETS}
    geoms = {name: robot_geoms(robot) for name, robot in robots.items()}
    entries = manifest_entries()
    assert len(entries) == 138  # 56 clips on both humanoids, 12 swordplay and one boxing clip on one
    shipped = {p.name for p in CLIPS.glob("*.npy")}
    assert shipped == {f"{c['name']}_{t}.npy" for c, t in entries}
    for entry, target in entries:
        clip = load_poselib(CLIPS / f"{entry['name']}_{target}.npy")
        assert clip.fps == 30 and clip.num_frames == entry["end"] - entry["start"], entry["name"]
        assert clip_problems(clip, robots[target], geoms=geoms[target]) == [], f"{entry['name']}_{target}"


@pytest.mark.parametrize("robot_name, kind, count", [
    ("amp_humanoid", "all", 82), ("amp_humanoid", "locomotion", 42), ("amp_humanoid", "combat", 32),
    ("sword_shield", "all", 83), ("sword_shield", "locomotion", 40), ("sword_shield", "combat", 40),
])
def test_datasets_load_with_their_clips(robot_name, kind, count):
    lib = MotionLib(ROOT / "motions" / "datasets" / f"{robot_name}_{kind}.yaml", load_robot(robot_name))
    assert lib.num_motions == count
    names = " ".join(lib.motion_names)
    if kind != "combat":
        assert "turn_left" in names and "turn_right" in names and "run" in names and "stop" in names
    if kind != "locomotion":
        assert "kick" in names and "punch" in names
        assert ("swordplay" in names) == (robot_name == "sword_shield")


def test_default_ase_dataset_is_every_clip_of_the_humanoid():
    from ase_humanoid.config import compose_config

    for robot_name in TARGETS:
        cfg = compose_config([f"robot={robot_name}"])
        assert cfg.task.motion_file[robot_name] == f"motions/datasets/{robot_name}_all.yaml"


@pytest.mark.parametrize("name", ["cmu_16_17_walk_turn_left_90", "cmu_135_11_side_kick_1", "cmu_07_04_slow_walk"])
def test_clips_made_again_from_the_bundled_raw_takes_are_the_shipped_ones(tmp_path, name):
    manifest = yaml.safe_load(MANIFEST.read_text())
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "retarget_batch.py"), str(MANIFEST), "--mocap", str(RAW),
         "--out-dir", str(tmp_path), "--only", name, "--json", str(tmp_path / "report.json")],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    for target in manifest["targets"]:
        made, shipped = load_poselib(tmp_path / f"{name}_{target}.npy"), load_poselib(CLIPS / f"{name}_{target}.npy")
        torch.testing.assert_close(made.local_rotation, shipped.local_rotation, atol=1e-6, rtol=0)
        torch.testing.assert_close(made.root_translation, shipped.root_translation, atol=1e-6, rtol=0)
    # a second run does not replace them without --replace
    again = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "retarget_batch.py"), str(MANIFEST), "--mocap", str(RAW),
         "--out-dir", str(tmp_path), "--only", name], capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "--replace" in again.stderr


def _take(source, **overrides):
    settings = load_retarget_settings(preset="cmu", overrides=dict(source=str(RAW / source), fps=30, **overrides))
    return retarget_from_settings(settings)


def test_a_tilted_capture_floor_is_followed():
    """CMU 07_04's floor rises about 10 cm along the walk: one constant shift leaves the feet
    floating by the end, ground=track keeps them on the floor."""
    clip, result, robot = _take("bvh/07_04.bvh", start=1, ground="geoms")
    assert any("floats" in p for p in clip_problems(clip, robot))
    clip, result, robot = _take("bvh/07_04.bvh", start=1, ground="track")
    assert clip_problems(clip, robot) == []
    assert 0.05 < result.ground_drift < 0.2


def test_a_kick_past_the_hip_range_is_clamped_to_it():
    """A karate side kick abducts the kicking hip about 60 deg past the humanoid's range: without
    clamping the clip asks for what the simulator cannot do; with it, it passes, and the
    report still says which joints were clamped."""
    clip, result, robot = _take("amc/135_11.amc", start=63, end=117, ground="track")
    assert any("beyond its range" in p for p in clip_problems(clip, robot))
    clip, result, robot = _take("amc/135_11.amc", start=63, end=117, ground="track", clamp_limits=True)
    assert clip_problems(clip, robot) == []
    assert result.limit_report["right_hip_x"][1] > 40  # degrees past the range, before clamping


def test_checks_name_a_glitched_frame():
    robot = load_robot("amp_humanoid")
    clip = load_poselib(CLIPS / "cmu_127_14_run_side_step_right_amp_humanoid.npy")
    assert clip_problems(clip, robot) == []
    root = clip.root_translation.clone()
    root[20, 0] += 1.0  # one frame 1 m off: 30 m/s there and back
    glitched = type(clip)(clip.skeleton, clip.local_rotation, root, clip.fps)
    problems = clip_problems(glitched, robot)
    assert any("jumps" in p and "frames 19 and 20" in p for p in problems), problems
    local = clip.local_rotation.clone()
    local[10, 3] = torch.tensor([math.sin(1.5), 0.0, 0.0, math.cos(1.5)])  # one joint 172 deg off for a frame
    turned = type(clip)(clip.skeleton, local, clip.root_translation, clip.fps)
    assert any("turns at" in p for p in clip_problems(turned, robot))


def test_manifest_errors_name_the_clip(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("clips:\n  - {name: a, source: x.amc, strat: 3}\n")
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "retarget_batch.py"), str(bad), "--mocap", str(RAW),
                             "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "clip 'a'" in result.stderr and "strat" in result.stderr
    assert list(tmp_path.glob("*.npy")) == []
