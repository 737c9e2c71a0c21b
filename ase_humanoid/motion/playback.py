"""Kinematic playback of a MotionLib: poses as MuJoCo qpos, a keyboard-driven controller for the
interactive viewer, and offscreen video of every clip."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ase_humanoid.errors import AseHumanoidError, MotionFileError
from ase_humanoid.motion.motion_lib import MotionLib
from ase_humanoid.robots import load_robot
from ase_humanoid.utils.rotations import xyzw_to_wxyz

# GLFW key codes used by mujoco.viewer's key_callback.
KEY_SPACE, KEY_RIGHT, KEY_LEFT, KEY_UP, KEY_DOWN, KEY_N, KEY_P, KEY_R = 32, 262, 263, 265, 264, 78, 80, 82
SPEEDS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)


def load_motion_lib_any_robot(motion_file, robot: str | None = None, device="cpu") -> MotionLib:
    """MotionLib on `robot`, or on the first bundled humanoid whose skeleton matches the file."""
    names = [robot] if robot else ["amp_humanoid", "sword_shield"]
    errors = []
    for name in names:
        try:
            return MotionLib(motion_file, load_robot(name), device=device)
        except MotionFileError as exc:
            errors.append(f"{name}: {exc}")
            if robot:
                raise
    raise MotionFileError(f"'{motion_file}' fits none of the humanoids:\n  " + "\n  ".join(errors))


def motion_qpos(motion_lib: MotionLib, motion_id: int, time: float) -> np.ndarray:
    """MuJoCo qpos `[7 + D]` (root pos, root quat wxyz, hinge angles) of one clip at `time`."""
    ids = torch.tensor([motion_id], device=motion_lib.device)
    times = torch.tensor([time], dtype=motion_lib.dtype, device=motion_lib.device)
    state = motion_lib.get_motion_state(ids, times)
    qpos = torch.cat([state.root_pos[0], xyzw_to_wxyz(state.root_rot[0]), state.dof_pos[0]])
    return qpos.detach().cpu().double().numpy()


@dataclass
class PlaybackController:
    """Which clip, at what time and speed; keys: space pause, N/right next clip, P/left previous,
    up/down speed, R restart. Pure state, so it is testable without a window."""

    num_motions: int
    lengths: list[float]
    motion_id: int = 0
    time: float = 0.0
    speed_index: int = 3  # 1x
    paused: bool = False

    @property
    def speed(self) -> float:
        return SPEEDS[self.speed_index]

    def on_key(self, keycode: int) -> None:
        if keycode == KEY_SPACE:
            self.paused = not self.paused
        elif keycode in (KEY_RIGHT, KEY_N):
            self.motion_id, self.time = (self.motion_id + 1) % self.num_motions, 0.0
        elif keycode in (KEY_LEFT, KEY_P):
            self.motion_id, self.time = (self.motion_id - 1) % self.num_motions, 0.0
        elif keycode == KEY_UP:
            self.speed_index = min(self.speed_index + 1, len(SPEEDS) - 1)
        elif keycode == KEY_DOWN:
            self.speed_index = max(self.speed_index - 1, 0)
        elif keycode == KEY_R:
            self.time = 0.0

    def advance(self, dt: float) -> None:
        """Move time on by dt * speed, looping the current clip."""
        if self.paused:
            return
        length = self.lengths[self.motion_id]
        self.time = (self.time + dt * self.speed) % length if length > 0 else 0.0


def scene_model(motion_lib: MotionLib):
    from ase_humanoid.robots.scene import build_scene_spec

    return build_scene_spec(motion_lib.robot).compile()


MAX_VIDEO_SIDE = 8192  # pixels; larger offscreen buffers fail in GL drivers or exhaust memory


def check_video_options(out: str | Path, fps: float, width: int, height: int,
                        max_seconds: float | None = None) -> None:
    """AseHumanoidError naming the option unless the video can be rendered and written."""
    if not (isinstance(fps, (int, float)) and 0 < fps <= 1000):
        raise AseHumanoidError(f"--fps must be in (0, 1000], got {fps}")
    for name, value in (("--width", width), ("--height", height)):
        if not (isinstance(value, int) and 16 <= value <= MAX_VIDEO_SIDE):
            raise AseHumanoidError(f"{name} must be an integer from 16 to {MAX_VIDEO_SIDE} pixels, got {value}")
    if max_seconds is not None and not max_seconds > 0:
        raise AseHumanoidError(f"--seconds must be positive, got {max_seconds}")
    path = Path(out)
    if path.suffix.lower() not in (".mp4", ".gif"):
        raise AseHumanoidError(f"video '{path}': use a .mp4 or .gif file name")
    if not path.parent.is_dir():
        raise AseHumanoidError(f"video '{path}': folder '{path.parent}' does not exist")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise AseHumanoidError(f"video '{path}' is not writable")


def render_video(motion_lib: MotionLib, out: str | Path, fps: float = 30.0, width: int = 640,
                 height: int = 480, max_seconds_per_clip: float | None = None,
                 motion_ids: list[int] | None = None) -> Path:
    """Render clips one after another to `out` (.mp4/.gif); name and time drawn on each frame."""
    from ase_humanoid.utils.render import OffscreenRenderer, write_video

    check_video_options(out, fps, width, height, max_seconds_per_clip)
    renderer = OffscreenRenderer(scene_model(motion_lib), width=width, height=height)
    frames = []
    ids = range(motion_lib.num_motions) if motion_ids is None else motion_ids
    for motion_id in ids:
        length = float(motion_lib.motion_lengths[motion_id])
        if max_seconds_per_clip is not None:
            length = min(length, max_seconds_per_clip)
        name = motion_lib.motion_names[motion_id]
        for k in range(int(np.floor(length * fps)) + 1):
            t = k / fps
            frames.append(renderer.render(motion_qpos(motion_lib, motion_id, t), text=[f"{name}  t={t:5.2f}s"]))
    renderer.close()
    return write_video(out, frames, fps)


def viewer_texts(motion_lib: MotionLib, control: PlaybackController) -> list[tuple[str, str]]:
    """The viewer's corner text: clip name, time and speed."""
    name = motion_lib.motion_names[control.motion_id]
    speed = f"{control.speed:g}x" + ("  (paused)" if control.paused else "")
    return [("clip", f"{name}  ({control.motion_id + 1}/{control.num_motions})"),
            ("time", f"{control.time:5.2f} / {control.lengths[control.motion_id]:.2f} s"),
            ("speed", speed)]


def run_viewer(motion_lib: MotionLib, show_ui: bool = False, on_frame=None) -> None:
    """Interactive playback in the MuJoCo viewer (needs a display). The camera frames the
    character and follows its root (zoom, turns and pans of the user's stay); the clip's name
    and time are shown in the corner. `on_frame(viewer, control)` runs after each shown frame and
    may return False to close the viewer (tests, scripted screenshots)."""
    import time

    import mujoco

    from ase_humanoid.utils.render import FollowViewer

    model = scene_model(motion_lib)
    data = mujoco.MjData(model)
    control = PlaybackController(motion_lib.num_motions, [float(x) for x in motion_lib.motion_lengths])
    print("keys: space pause | N/right next clip | P/left previous | up/down speed | R restart"
          " | Tab / Shift+Tab panels")
    with FollowViewer(model, data, key_callback=control.on_key, show_ui=show_ui) as viewer:
        last = time.time()
        while viewer.is_running():
            now = time.time()
            control.advance(now - last)
            last = now
            data.qpos[:] = motion_qpos(motion_lib, control.motion_id, control.time)
            mujoco.mj_forward(model, data)
            viewer.sync(viewer_texts(motion_lib, control))
            if on_frame is not None:
                hook_start = time.time()
                if on_frame(viewer, control) is False:
                    break
                last += time.time() - hook_start  # the hook's time is not playback time
            time.sleep(1.0 / 60.0)
