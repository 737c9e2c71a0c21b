"""Offscreen video and the interactive MuJoCo viewer, shared by play_motion and evaluation.

Offscreen rendering needs an OpenGL backend without a display: set MUJOCO_GL=egl (Debian/Ubuntu
packages libegl1 and libgl1, plus a Mesa or NVIDIA driver) or MUJOCO_GL=osmesa (libosmesa6).
`./run` sets MUJOCO_GL=egl when it is unset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from ase_humanoid.errors import AseHumanoidError


@dataclass
class Marker:
    """A visual-only shape drawn into the scene (task targets, directions)."""

    kind: str  # sphere | box | arrow | capsule
    pos: np.ndarray  # [3]
    size: tuple[float, float, float] = (0.05, 0.05, 0.05)
    rgba: tuple[float, float, float, float] = (1.0, 0.2, 0.2, 1.0)
    mat: np.ndarray | None = None  # [3, 3] orientation; arrows point along its z axis


_GEOM_TYPES = {"sphere": mujoco.mjtGeom.mjGEOM_SPHERE, "box": mujoco.mjtGeom.mjGEOM_BOX,
               "arrow": mujoco.mjtGeom.mjGEOM_ARROW, "capsule": mujoco.mjtGeom.mjGEOM_CAPSULE}


def add_markers(scene: mujoco.MjvScene, markers: list[Marker]) -> None:
    for marker in markers:
        if scene.ngeom >= scene.maxgeom:
            return
        mat = np.eye(3) if marker.mat is None else np.asarray(marker.mat, dtype=np.float64)
        mujoco.mjv_initGeom(scene.geoms[scene.ngeom], _GEOM_TYPES[marker.kind],
                            np.asarray(marker.size, dtype=np.float64), np.asarray(marker.pos, dtype=np.float64),
                            mat.reshape(-1), np.asarray(marker.rgba, dtype=np.float32))
        scene.ngeom += 1


def follow_camera(lookat: np.ndarray, distance: float = 4.0, azimuth: float = 135.0,
                  elevation: float = -15.0) -> mujoco.MjvCamera:
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_FREE
    camera.distance, camera.azimuth, camera.elevation = distance, azimuth, elevation
    camera.lookat[:] = lookat
    return camera


def draw_text(frame: np.ndarray, lines: list[str]) -> np.ndarray:
    """Write `lines` in the top-left corner of an RGB frame (white on a dark box)."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    text = "\n".join(lines)
    box = draw.multiline_textbbox((8, 6), text)
    draw.rectangle((box[0] - 4, box[1] - 3, box[2] + 4, box[3] + 3), fill=(0, 0, 0))
    draw.multiline_text((8, 6), text, fill=(255, 255, 255))
    return np.asarray(image)


class OffscreenRenderer:
    """Renders one world's qpos to RGB frames with a camera following `follow_body`."""

    def __init__(self, model: mujoco.MjModel, width: int = 640, height: int = 480, follow_body: int = 1):
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        try:
            self.renderer = mujoco.Renderer(model, height=height, width=width)
        except Exception as exc:
            backend = os.environ.get("MUJOCO_GL", "(unset: glfw, needs a display)")
            raise AseHumanoidError(
                f"offscreen rendering failed with MUJOCO_GL={backend}: {exc}. Set MUJOCO_GL=egl "
                "(packages libegl1 libgl1) or MUJOCO_GL=osmesa (libosmesa6)") from exc
        self.model = model
        self.data = mujoco.MjData(model)
        self.follow_body = follow_body
        self.camera = follow_camera(np.zeros(3))

    def render(self, qpos: np.ndarray, text: list[str] | None = None,
               markers: list[Marker] | None = None) -> np.ndarray:
        """`qpos [nq]` -> frame `[height, width, 3]` uint8."""
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)
        target = self.data.xpos[self.follow_body]
        # Follow in the ground plane and smoothly in height, so the floor stays in view; on a
        # terrain (heightfield) the ground rises and falls, so the camera follows the body's height.
        self.camera.lookat[:] = (target[0], target[1], 0.9 if self.model.nhfield == 0 else target[2])
        self.renderer.update_scene(self.data, self.camera)
        if markers:
            add_markers(self.renderer.scene, markers)
        frame = self.renderer.render()
        return draw_text(frame, text) if text else frame

    def close(self) -> None:
        self.renderer.close()


def write_video(path: str | Path, frames: list[np.ndarray], fps: float) -> Path:
    """Write frames to .mp4 (H.264 via imageio-ffmpeg) or .gif."""
    import imageio.v2 as imageio

    path = Path(path)
    if path.suffix.lower() not in (".mp4", ".gif"):
        raise AseHumanoidError(f"video '{path}': use a .mp4 or .gif file name")
    if not frames:
        raise AseHumanoidError(f"video '{path}': no frames to write")
    if not fps > 0:
        raise AseHumanoidError(f"video '{path}': frame rate must be positive, got {fps}")
    if not path.parent.is_dir():
        raise AseHumanoidError(f"video '{path}': folder '{path.parent}' does not exist")
    try:
        if path.suffix.lower() == ".gif":
            imageio.mimsave(path, frames, duration=1000.0 / fps, loop=0)
        else:
            imageio.mimsave(path, frames, fps=fps, macro_block_size=8)
    except (OSError, BrokenPipeError) as exc:  # unwritable path, full disk: ffmpeg's pipe breaks
        path.unlink(missing_ok=True)
        raise AseHumanoidError(f"video '{path}' could not be written: {exc}") from exc
    if not path.is_file() or path.stat().st_size == 0:
        raise AseHumanoidError(f"video '{path}' was not written")
    return path


def launch_viewer(model: mujoco.MjModel, data: mujoco.MjData, key_callback=None, show_ui: bool = False):
    """Open the interactive MuJoCo viewer (passive: the caller steps and syncs). Its side panels
    are hidden unless `show_ui` (Tab / Shift+Tab toggle them), so the scene has the whole window.

    Raises AseHumanoidError with a hint when no display is available.
    """
    if os.name == "posix" and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") \
            and os.uname().sysname == "Linux":
        raise AseHumanoidError("the interactive viewer needs a display (DISPLAY is unset); "
                               "record a video instead with video=out.mp4 / --video out.mp4")
    import warnings

    import glfw
    import mujoco.viewer

    # Checked here: a failure inside launch_passive's thread would leave this one waiting forever.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ready = glfw.init()
    if not ready:
        reason = "; ".join(str(w.message) for w in caught) or "GLFW could not be initialised"
        raise AseHumanoidError(f"the interactive viewer could not open display "
                               f"'{os.environ.get('DISPLAY') or os.environ.get('WAYLAND_DISPLAY')}': {reason}; "
                               "record a video instead with video=out.mp4 / --video out.mp4")
    return mujoco.viewer.launch_passive(model, data, key_callback=key_callback,
                                        show_left_ui=show_ui, show_right_ui=show_ui)


# The viewer's camera, as the ASE release's: framed once on the character, then moved with it.
VIEW_DISTANCE = 3.0  # m, as the ASE release: at fovy 45 degrees a 1.7 m humanoid fills ~60% of the view's height
VIEW_AZIMUTH = 135.0  # degrees, as the videos (follow_camera)
VIEW_ELEVATION = -15.0
VIEW_HEIGHT_GAIN = 0.1  # per frame: the camera's height follows the root's smoothly (no bobbing)


def frame_camera(cam: mujoco.MjvCamera, root_pos, distance: float = VIEW_DISTANCE,
                 azimuth: float = VIEW_AZIMUTH, elevation: float = VIEW_ELEVATION) -> np.ndarray:
    """Make `cam` a free camera looking at the root (pelvis) from `distance`, so that the whole
    character is in view. Returns the follow anchor for `camera_follow` (the root)."""
    anchor = np.array(root_pos, dtype=np.float64)
    if not np.isfinite(anchor).all():
        anchor = np.array([0.0, 0.0, 0.9])
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.fixedcamid, cam.trackbodyid = -1, -1
    cam.distance, cam.azimuth, cam.elevation = distance, azimuth, elevation
    cam.lookat[:] = anchor
    return anchor


def camera_follow(cam: mujoco.MjvCamera, anchor: np.ndarray, root_pos,
                  height_gain: float = VIEW_HEIGHT_GAIN) -> np.ndarray:
    """Move a free camera with the character: its look-at point moves as the root does (the
    ground-plane motion at once, the height smoothed), so what the user set (distance, azimuth,
    elevation, a pan offset) stays. A fixed or tracking camera the user chose is left alone.
    Returns the new anchor (pass it to the next call)."""
    root = np.asarray(root_pos, dtype=np.float64)
    if not np.isfinite(root).all():
        return anchor
    new_anchor = np.array([root[0], root[1], anchor[2] + height_gain * (root[2] - anchor[2])])
    if cam.type == mujoco.mjtCamera.mjCAMERA_FREE:
        cam.lookat[:] = np.asarray(cam.lookat) + (new_anchor - anchor)
    return new_anchor


class FollowViewer:
    """The interactive viewer on one world: a camera that frames and follows `follow_body`,
    text in the top-left corner and render-only markers. `sync` after each change of `data`.

        with FollowViewer(model, data) as viewer:
            while viewer.is_running():
                ...  # set data.qpos, mj_forward
                viewer.sync([("clip", "walk"), ("time", "1.25 s")], markers)
    """

    def __init__(self, model: mujoco.MjModel, data: mujoco.MjData, key_callback=None,
                 follow_body: int = 1, show_ui: bool = False):
        import threading

        self.model, self.data, self.follow_body = model, data, follow_body
        before = set(threading.enumerate())
        self.handle = launch_viewer(model, data, key_callback=key_callback, show_ui=show_ui)
        # The viewer's window thread: joined on close, so that the process does not exit (and
        # GLFW terminate) while it still draws.
        self._threads = [t for t in threading.enumerate() if t not in before]
        self.anchor: np.ndarray | None = None

    def is_running(self) -> bool:
        return self.handle.is_running()

    @property
    def cam(self) -> mujoco.MjvCamera:
        return self.handle.cam

    def sync(self, texts: list[tuple[str, str]] | None = None, markers: list[Marker] | None = None) -> None:
        """Show the current `data`: move the camera with the character, redraw markers and text
        (`texts`: (label, value) rows)."""
        root = self.data.xpos[self.follow_body].copy()
        if texts and hasattr(self.handle, "set_texts"):  # mujoco >= 3.3
            self.handle.set_texts((mujoco.mjtFontScale.mjFONTSCALE_150, mujoco.mjtGridPos.mjGRID_TOPLEFT,
                                   "\n".join(label for label, _ in texts),
                                   "\n".join(value for _, value in texts)))
        scene = self.handle.user_scn  # read by sync() only, on this thread
        if scene is not None:
            scene.ngeom = 0
            add_markers(scene, markers or [])
        # The camera moves right before sync(), not under lock(): the window's thread, waiting
        # for that lock, would take it between the two and draw the new camera on the old pose
        # (each frame behind; at a clip's loop or a reset the character is out of view). The
        # window reads the camera under the lock that sync() holds while it copies the pose.
        if self.anchor is None:
            self.anchor = frame_camera(self.handle.cam, root)
        else:
            self.anchor = camera_follow(self.handle.cam, self.anchor, root)
        self.handle.sync()  # takes the lock itself (not reentrant: never inside lock())

    def close(self) -> None:
        self.handle.close()
        for thread in self._threads:
            thread.join(timeout=10.0)

    def __enter__(self) -> "FollowViewer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
