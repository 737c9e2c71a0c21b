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
        # Follow in the ground plane and smoothly in height, so the floor stays in view.
        self.camera.lookat[:] = (target[0], target[1], 0.9)
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


def launch_viewer(model: mujoco.MjModel, data: mujoco.MjData, key_callback=None):
    """Open the interactive MuJoCo viewer (passive: the caller steps and syncs).

    Raises AseHumanoidError with a hint when no display is available.
    """
    if os.name == "posix" and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY") \
            and os.uname().sysname == "Linux":
        raise AseHumanoidError("the interactive viewer needs a display (DISPLAY is unset); "
                               "record a video instead with video=out.mp4 / --video out.mp4")
    import mujoco.viewer

    return mujoco.viewer.launch_passive(model, data, key_callback=key_callback)
