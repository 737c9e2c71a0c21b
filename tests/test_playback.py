"""Motion playback: offscreen video frames are real renders; viewer controls; clear no-display error."""

import os

import imageio.v2 as imageio
import numpy as np
import pytest

from ase_humanoid import MOTIONS_DIR
from ase_humanoid.errors import AseHumanoidError
from ase_humanoid.motion import playback

WALK = MOTIONS_DIR / "amp_humanoid" / "amp_humanoid_walk.npy"


@pytest.fixture(scope="module")
def walk_lib():
    return playback.load_motion_lib_any_robot(WALK)


def test_video_frames_are_not_blank_and_follow_the_motion(walk_lib, tmp_path, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", os.environ.get("MUJOCO_GL", "egl"))
    out = playback.render_video(walk_lib, tmp_path / "walk.mp4", fps=15, width=160, height=120,
                                max_seconds_per_clip=1.0)
    frames = [f for f in imageio.get_reader(out)]
    assert len(frames) == 16  # 0 .. 1 s at 15 fps
    first, last = frames[0].astype(float), frames[-1].astype(float)
    assert first.shape == (120, 160, 3)
    assert first.std() > 10.0  # a scene, not a flat colour
    assert np.abs(first - last).mean() > 1.0  # the character moved
    gif = playback.render_video(walk_lib, tmp_path / "walk.gif", fps=10, width=96, height=64,
                                max_seconds_per_clip=0.3)
    assert len(imageio.mimread(gif)) == 4


def test_qpos_matches_motion_state(walk_lib):
    qpos = playback.motion_qpos(walk_lib, 0, 0.5)
    assert qpos.shape == (7 + walk_lib.robot.num_dofs,)
    assert np.isclose(np.linalg.norm(qpos[3:7]), 1.0)


def test_controller_keys_and_looping():
    c = playback.PlaybackController(num_motions=3, lengths=[1.0, 2.0, 0.5])
    c.advance(0.4)
    assert c.time == pytest.approx(0.4)
    c.on_key(playback.KEY_SPACE)
    c.advance(0.4)
    assert c.time == pytest.approx(0.4) and c.paused
    c.on_key(playback.KEY_SPACE)
    c.on_key(playback.KEY_UP)
    assert c.speed == 2.0
    c.advance(0.4)
    assert c.time == pytest.approx(0.2)  # 0.4 + 0.8 wraps at 1.0
    c.on_key(playback.KEY_LEFT)
    assert c.motion_id == 2 and c.time == 0.0
    c.on_key(playback.KEY_N)
    assert c.motion_id == 0
    for _ in range(10):
        c.on_key(playback.KEY_DOWN)
    assert c.speed == playback.SPEEDS[0]


def test_viewer_without_display_gives_clear_error(walk_lib, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(AseHumanoidError, match="display"):
        playback.run_viewer(walk_lib)


def test_unknown_skeleton_is_refused(tmp_path):
    from ase_humanoid.errors import MotionFileError

    with pytest.raises(MotionFileError, match="not found|fits none"):
        playback.load_motion_lib_any_robot(tmp_path / "missing.npy")
