"""The skill report's pictures: a grid video with one tile per latent and a top-down plot of the
latents' root paths."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np

from ase_humanoid.analysis.skill_measures import LatentRollouts
from ase_humanoid.envs.motion_quality import short_clip_names


TILE_WIDTH, TILE_HEIGHT = 160, 120  # one character's tile in the grid video
TILE_CAMERA_DISTANCE = 3.0  # m; closer than the 640x480 evaluation video's 4 m, tiles are small
TILE_SHADOW_MAP = 512  # px; the scene's 4096 costs ~0.2 s a tile on a software (llvmpipe) EGL
VIDEO_FRAME_STRIDE = 2  # control steps per video frame: 15 fps halves the rendering, still smooth


def tile_grid(tiles: np.ndarray, columns: int) -> np.ndarray:
    """Tiles `[n, H, W, 3]` row by row into one image `[rows * H, columns * W, 3]` (rows =
    ceil(n / columns)); places without a tile stay black."""
    n, height, width, channels = tiles.shape
    rows = -(-n // columns)
    grid = np.zeros((rows * height, columns * width, channels), dtype=tiles.dtype)
    for i in range(n):
        r, c = divmod(i, columns)
        grid[r * height:(r + 1) * height, c * width:(c + 1) * width] = tiles[i]
    return grid


def tile_labels(report: dict, count: int) -> list[str]:
    """`"<latent> <skill>"` for the first `count` latents."""
    names = report["per_latent"]["skill"][:count]
    short = dict(zip(report["clip_counts"], short_clip_names(list(report["clip_counts"]))))
    return [f"z{i} {short[name]}" for i, name in enumerate(names)]


def tile_renderer(mj_model):
    """An OffscreenRenderer for one small tile, cheap enough for thousands of frames on a CPU:
    a small shadow map, no multisampling, reflections or skybox (14 ms a tile instead of 190 ms
    with software EGL on 2 busy cores), the camera closer than for a full-size video."""
    import mujoco

    from ase_humanoid.utils.render import OffscreenRenderer

    model = copy.deepcopy(mj_model)  # the env's model keeps its settings
    model.vis.quality.shadowsize = TILE_SHADOW_MAP
    model.vis.quality.offsamples = 0
    renderer = OffscreenRenderer(model, width=TILE_WIDTH, height=TILE_HEIGHT)
    for flag in (mujoco.mjtRndFlag.mjRND_REFLECTION, mujoco.mjtRndFlag.mjRND_SKYBOX):
        renderer.renderer.scene.flags[flag] = False
    renderer.camera.distance = TILE_CAMERA_DISTANCE
    return renderer


def write_grid_video(path: str | Path, mj_model, rollouts: LatentRollouts, report: dict, dt: float) -> Path:
    """One tile per recorded latent (a camera following its character, labelled with the latent
    and its skill; frozen from a fall on), tiles in a square-ish grid, as .mp4 or .gif; a frame
    every VIDEO_FRAME_STRIDE control steps of `dt` seconds."""
    from ase_humanoid.utils.render import write_video

    qpos = rollouts.qpos  # [T + 1, n, nq]
    n = qpos.shape[1]
    columns = math.ceil(math.sqrt(n))
    labels = tile_labels(report, n)
    fall_step = rollouts.fall_step[:n].tolist()
    renderer = tile_renderer(mj_model)
    try:
        frames = []
        for t in range(0, qpos.shape[0], VIDEO_FRAME_STRIDE):
            tiles = [renderer.render(qpos[t, i], text=[labels[i] + (" fell" if 0 <= fall_step[i] <= t else "")])
                     for i in range(n)]
            frames.append(tile_grid(np.stack(tiles), columns))
    finally:
        renderer.close()
    return write_video(path, frames, fps=1.0 / (VIDEO_FRAME_STRIDE * dt))


def write_path_plot(path: str | Path, rollouts: LatentRollouts, report: dict) -> Path:
    """Top-down root paths (x-y, m) of every latent, coloured by its skill clip (legend: clip and
    number of latents); an x marks where a latent fell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["clip_counts"])
    colours = {name: plt.get_cmap("tab10")(i % 10) for i, name in enumerate(names)}
    short = dict(zip(names, short_clip_names(names)))
    xy = rollouts.root_xy.cpu().numpy()  # [T + 1, K, 2]
    fig, ax = plt.subplots(figsize=(7, 7))
    for i, skill in enumerate(report["per_latent"]["skill"]):
        path_i = xy[:, i][np.isfinite(xy[:, i]).all(-1)]
        ax.plot(path_i[:, 0], path_i[:, 1], color=colours[skill], lw=1.0, alpha=0.8)
        if report["per_latent"]["fell"][i] and len(path_i):
            ax.plot(path_i[-1, 0], path_i[-1, 1], "x", color=colours[skill], ms=6)
    for name in names:
        if report["clip_counts"][name]:
            ax.plot([], [], color=colours[name], label=f"{short[name]} ({report['clip_counts'][name]})")
    ax.plot(0, 0, "ko", ms=4)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(f"root paths of {report['latents']} latents, {report['seconds']:.0f} s (x: fell)")
    ax.legend(title="skill (latents)", loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
