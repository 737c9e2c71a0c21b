"""The interactive viewer shows the character (issue 23, item 18): its camera frames the whole
humanoid from 3 m and follows the root (env 0 under `test=true viewer=true`), keeps what the user
set (zoom, turn, pan), and the corner shows the clip and time (policies: task, episode statistics).

Three levels:
- the camera logic (`frame_camera`, `camera_follow`) on plain MjvCameras;
- offscreen (EGL) renders through that camera along the walk clip: a segmentation render says how
  much of the view is the character, and that the colour test used on screenshots finds it;
- the real viewer (`tools/play_motion.py`'s `run_viewer`, and evaluate's) in a child process on an
  Xvfb display, from screenshots of the X screen (skipped where Xvfb is not installed: Debian
  package `xvfb`).

How much of the view is the character: at 3 m, with the default fovy of 45 degrees, the 1.7 m
humanoid is about 63% of the view's height and 3.8-4.5% of its pixels (walk clip, 4:3 view).
The stated thresholds: at least 3% of the pixels and 45% of the height, all of it inside the view.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import mujoco
import numpy as np
import pytest

from ase_humanoid import MOTIONS_DIR
from ase_humanoid.errors import AseHumanoidError
from ase_humanoid.utils import render
from ase_humanoid.utils.render import camera_follow, frame_camera

WALK = MOTIONS_DIR / "amp_humanoid" / "amp_humanoid_walk.npy"
ROOT = Path(__file__).resolve().parents[1]
MIN_SHARE = 0.03  # of the view's pixels
MIN_HEIGHT = 0.45  # of the view's height
RED_OVER_BLUE = 40  # screenshot test: the skin-coloured humanoid vs the blue-grey floor, black sky


def character_by_colour(rgb: np.ndarray) -> np.ndarray:
    """Pixels of the humanoid in a viewer image: red exceeds blue by RED_OVER_BLUE levels (the
    floor, its reflections, shadows, sky and overlay text do not)."""
    rgb = rgb.astype(np.int32)
    return rgb[..., 0] - rgb[..., 2] > RED_OVER_BLUE


def framing(mask: np.ndarray) -> dict:
    """Share of the view, and bounding box as fractions of height / width."""
    ys, xs = np.nonzero(mask)
    if not len(ys):
        return {"share": 0.0, "height": 0.0, "top": None, "bottom": None, "left": None, "right": None}
    h, w = mask.shape
    return {"share": float(mask.mean()), "height": float((ys.max() - ys.min() + 1) / h),
            "top": float(ys.min() / h), "bottom": float(ys.max() / h),
            "left": float(xs.min() / w), "right": float(xs.max() / w)}


def assert_framed(f: dict, what: str, min_share: float = MIN_SHARE, min_height: float = MIN_HEIGHT) -> None:
    assert f["share"] >= min_share, f"{what}: the character is {f['share']:.2%} of the view: {f}"
    assert f["height"] >= min_height, f"{what}: the character is {f['height']:.0%} of the view's height: {f}"
    # whole, not cut by an edge
    assert f["top"] > 0.01 and f["bottom"] < 0.99 and f["left"] > 0.01 and f["right"] < 0.99, f"{what}: {f}"


# ---- the camera logic -------------------------------------------------------------------------

def test_frame_camera_points_a_free_camera_at_the_root():
    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
    anchor = frame_camera(cam, [1.0, -2.0, 0.9])
    assert cam.type == mujoco.mjtCamera.mjCAMERA_FREE
    assert cam.distance == render.VIEW_DISTANCE == 3.0
    assert (cam.azimuth, cam.elevation) == (render.VIEW_AZIMUTH, render.VIEW_ELEVATION)
    assert np.allclose(cam.lookat, [1.0, -2.0, 0.9]) and np.allclose(anchor, cam.lookat)
    # a non-finite root (a broken state) still gives a usable camera
    assert np.isfinite(frame_camera(mujoco.MjvCamera(), [np.nan, 0.0, 0.0])).all()


def test_camera_follow_moves_only_the_lookat_and_keeps_the_users_view():
    cam = mujoco.MjvCamera()
    anchor = frame_camera(cam, [0.0, 0.0, 0.9])
    # the user zooms out, turns, looks from higher and pans 0.5 m sideways
    cam.distance, cam.azimuth, cam.elevation = 6.0, 40.0, -35.0
    cam.lookat[1] += 0.5
    root = np.array([0.0, 0.0, 0.9])
    for _ in range(100):  # walk 1.5 m along x, bobbing in height
        root = root + [0.015, 0.0, 0.0]
        bob = root + [0.0, 0.0, 0.05 * np.sin(root[0] * 20)]
        anchor = camera_follow(cam, anchor, bob)
    assert (cam.distance, cam.azimuth, cam.elevation) == (6.0, 40.0, -35.0)
    assert cam.lookat[0] == pytest.approx(1.5) and cam.lookat[1] == pytest.approx(0.5)  # pan kept
    assert abs(cam.lookat[2] - 0.9) < 0.03  # the height is smoothed, not bobbing with the pelvis
    # a fall: the look-at point goes down with the root, smoothly
    for _ in range(60):
        anchor = camera_follow(cam, anchor, [1.5, 0.0, 0.2])
    assert cam.lookat[2] == pytest.approx(0.2, abs=0.01)
    # a reset teleports the character: the camera goes with it
    anchor = camera_follow(cam, anchor, [-3.0, 2.0, 0.2])
    assert cam.lookat[0] == pytest.approx(-3.0) and cam.lookat[1] == pytest.approx(2.5)


def test_camera_follow_leaves_a_chosen_camera_alone_and_ignores_broken_states():
    cam = mujoco.MjvCamera()
    anchor = frame_camera(cam, [0.0, 0.0, 0.9])
    anchor = camera_follow(cam, anchor, [np.nan, 0.0, 0.9])
    assert np.allclose(cam.lookat, [0.0, 0.0, 0.9]) and np.isfinite(anchor).all()
    cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING  # the user picked a body to track
    anchor = camera_follow(cam, anchor, [2.0, 0.0, 0.9])
    assert np.allclose(cam.lookat, [0.0, 0.0, 0.9])
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE  # back to the free camera: it follows from here
    camera_follow(cam, anchor, [3.0, 0.0, 0.9])
    assert np.allclose(cam.lookat, [1.0, 0.0, 0.9])


def test_playback_corner_text_names_clip_time_and_speed():
    from ase_humanoid.motion import playback

    lib = playback.load_motion_lib_any_robot(WALK)
    control = playback.PlaybackController(1, [float(lib.motion_lengths[0])], time=1.25)
    rows = dict(playback.viewer_texts(lib, control))
    assert rows["clip"].startswith("amp_humanoid_walk") and "(1/1)" in rows["clip"]
    assert rows["time"] == " 1.25 / 2.55 s" and rows["speed"] == "1x"
    control.on_key(playback.KEY_SPACE)
    assert "paused" in dict(playback.viewer_texts(lib, control))["speed"]


def test_policy_corner_text_names_task_episode_and_finished_statistics():
    from ase_humanoid.envs import make_env
    from ase_humanoid.evaluate import viewer_texts
    from ase_humanoid.runner import EpisodeTracker

    env = make_env("HumanoidViewMotion", num_envs=1, robot="amp_humanoid", num_threads=1, seed=0,
                   motion_file=str(WALK), max_episode_length=5)
    tracker = EpisodeTracker()
    env.reset()
    rows = dict(viewer_texts(env, "HumanoidViewMotion", tracker))
    assert rows == {"task": "HumanoidViewMotion", "clip": "amp_humanoid_walk  t= 0.00 / 2.55 s",
                    "episode": "t= 0.00 s  return 0.00", "finished": "0"}
    for _ in range(7):
        _, _, terminated, truncated, info = env.step()
        tracker.add(info, terminated, truncated)
    rows = dict(viewer_texts(env, "HumanoidViewMotion", tracker))
    assert rows["clip"] == "amp_humanoid_walk  t= 0.07 / 2.55 s"  # 2 steps into the 2nd episode
    assert rows["finished"] == "1: return 0.00  length 5  falls 0%"


def test_unusable_display_is_a_clear_error_not_a_hang(monkeypatch):
    """GLFW failing inside launch_passive's thread used to leave the caller waiting forever."""
    monkeypatch.setenv("DISPLAY", ":4242")  # no X server there
    model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom size='1 1 .1' type='plane'/></worldbody></mujoco>")
    with pytest.raises(AseHumanoidError, match="could not open display ':4242'.*video"):
        render.launch_viewer(model, mujoco.MjData(model))


# ---- offscreen: the same camera, measured by segmentation ------------------------------------

@pytest.fixture(scope="module")
def walk_scene():
    from ase_humanoid.motion import playback

    lib = playback.load_motion_lib_any_robot(WALK)
    model = playback.scene_model(lib)
    width, height = 640, 480
    model.vis.global_.offwidth, model.vis.global_.offheight = width, height
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        renderer = mujoco.Renderer(model, height=height, width=width)
    except Exception as exc:  # no EGL/OSMesa here
        pytest.skip(f"offscreen rendering unavailable (MUJOCO_GL={os.environ.get('MUJOCO_GL')}): {exc}")
    yield lib, model, renderer
    renderer.close()


def test_follow_camera_keeps_the_walking_character_framed(walk_scene):
    from ase_humanoid.motion import playback

    lib, model, renderer = walk_scene
    data = mujoco.MjData(model)
    humanoid_geoms = np.nonzero(model.geom_bodyid >= 1)[0]  # body 0 is the world (floor)
    cam, still = mujoco.MjvCamera(), mujoco.MjvCamera()
    anchor = None
    fps, length = 30, float(lib.motion_lengths[0])
    checked = {}
    for k in range(int(length * fps) + 1):
        t = k / fps
        data.qpos[:] = playback.motion_qpos(lib, 0, t)
        mujoco.mj_forward(model, data)
        root = data.xpos[1].copy()
        if anchor is None:
            anchor = frame_camera(cam, root)
            frame_camera(still, root)  # framed once, never moved: what following adds
        else:
            anchor = camera_follow(cam, anchor, root)
        if k % 15 and k != int(length * fps):
            continue
        renderer.enable_segmentation_rendering()
        renderer.update_scene(data, cam)
        seg = renderer.render()
        renderer.disable_segmentation_rendering()
        mask = (seg[..., 1] == mujoco.mjtObj.mjOBJ_GEOM) & np.isin(seg[..., 0], humanoid_geoms)
        f = framing(mask)
        assert_framed(f, f"t={t:.2f} s")
        # the screenshot test's colour rule finds the same pixels
        renderer.update_scene(data, cam)
        by_colour = character_by_colour(renderer.render())
        iou = (mask & by_colour).sum() / (mask | by_colour).sum()
        assert iou > 0.9, f"t={t:.2f} s: colour rule vs segmentation IoU {iou:.3f}"
        checked[round(t, 2)] = f
    assert len(checked) >= 6
    # Without following, the character has walked out of the middle of the view by the end.
    renderer.update_scene(data, still)
    unfollowed = framing(character_by_colour(renderer.render()))
    followed = checked[max(checked)]
    assert unfollowed["share"] < 0.5 * followed["share"] or unfollowed["right"] is None \
        or abs((unfollowed["left"] + unfollowed["right"]) / 2 - 0.5) > 0.3, unfollowed


# ---- the real viewer on an Xvfb display --------------------------------------------------------

PLAYBACK_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from PIL import ImageGrab
    from ase_humanoid.motion import playback

    display, out = sys.argv[1], sys.argv[2]
    lib = playback.load_motion_lib_any_robot(sys.argv[3])
    state = {"shots": [], "texts": [], "frame": 0}

    def grab(viewer):
        vp = viewer.handle.viewport
        image = np.asarray(ImageGrab.grab(xdisplay=display).convert("RGB"))
        return image, image[:vp.height, :vp.width]  # no window manager: the window is at (0, 0)

    def shot(viewer, control, name):
        # The scene is still while this hook runs. update_texture blocks until the window's
        # render loop has begun another frame: after three, what was synced last is on screen
        # (software GL on a busy machine takes up to seconds a frame).
        for _ in range(3):
            viewer.handle.update_texture(0)
        screen, view = grab(viewer)
        from PIL import Image
        Image.fromarray(screen).save(f"{out}/{name}.png")
        cam = viewer.cam
        root = viewer.data.xpos[1]
        corner = view[:90, :320]
        state["shots"].append({
            "name": name, "clip_time": control.time, "viewport": [viewer.handle.viewport.width,
                                                                  viewer.handle.viewport.height],
            "root": root.tolist(), "lookat": np.asarray(cam.lookat).tolist(), "distance": cam.distance,
            "azimuth": cam.azimuth, "elevation": cam.elevation, "text_pixels": int((corner.min(-1) > 180).sum())})

    STEP = 1.0 / 15.0  # playback seconds per shown frame: the clock is the test's, not the wall's
    SHOTS = {0: "start", 18: "mid", 30: "far", 45: "after_3s", 60: "user_view"}  # frame: name

    def on_frame(viewer, control):
        frame = state["frame"]
        if frame == 0:
            handle = viewer.handle
            set_texts = handle.set_texts
            handle.set_texts = lambda texts: (state["texts"].append(texts), set_texts(texts))
            control.paused = True  # real-time playback off: this hook moves the clip on
        if frame in SHOTS:
            shot(viewer, control, SHOTS[frame])
        if frame == 45:  # after 3 s of playback (2.55 s clip, looped): the user zooms out and
            with viewer.handle.lock():  # turns, as with the mouse
                viewer.cam.distance, viewer.cam.azimuth, viewer.cam.elevation = 4.0, 90.0, -20.0
        state["frame"] = frame + 1
        control.time = (state["frame"] * STEP) % control.lengths[0]
        return frame < max(SHOTS)

    playback.run_viewer(lib, on_frame=on_frame)
    texts = state["texts"][-1]  # (font, grid position, left column, right column)
    print("RESULT " + json.dumps({"shots": state["shots"], "texts": [list(texts[2:])]}), flush=True)
""")

FREE_RUNNING_CHILD = textwrap.dedent("""
    import json, sys, threading, time
    import numpy as np
    from PIL import Image, ImageGrab
    from ase_humanoid.motion import playback

    display, out = sys.argv[1], sys.argv[2]
    lib = playback.load_motion_lib_any_robot(sys.argv[3])
    state = {"start": None, "shots": [], "done": False}

    def shooter(viewport):
        # screenshots while the clip plays at real time (the loop does not wait for them)
        for k in range(9):
            time.sleep(0.5)
            image = np.asarray(ImageGrab.grab(xdisplay=display).convert("RGB"))
            Image.fromarray(image).save(f"{out}/free_{k}.png")
            state["shots"].append({"name": f"free_{k}", "wall": time.time() - state["start"],
                                   "viewport": viewport})
        state["done"] = True

    def on_frame(viewer, control):
        if state["start"] is None:
            for _ in range(3):  # the first frame is on screen
                viewer.handle.update_texture(0)
            state["start"] = time.time()
            vp = viewer.handle.viewport
            threading.Thread(target=shooter, args=([vp.width, vp.height],), daemon=True).start()
        return not state["done"]

    playback.run_viewer(lib, on_frame=on_frame)
    print("RESULT " + json.dumps({"shots": state["shots"]}), flush=True)
""")

POLICY_CHILD = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from PIL import ImageGrab
    from ase_humanoid import evaluate
    from ase_humanoid.envs import make_env

    display, out = sys.argv[1], sys.argv[2]
    env = make_env("HumanoidHeading", num_envs=2, robot="amp_humanoid", num_threads=1, seed=0,
                   state_init="Default", max_episode_length=20)
    state = {"frames": 0, "texts": [], "result": {}}

    def on_frame(viewer):
        state["frames"] += 1
        if state["frames"] == 1:
            handle = viewer.handle
            set_texts = handle.set_texts
            handle.set_texts = lambda texts: (state["texts"].append(texts), set_texts(texts))
        if state["frames"] < 45:  # two episodes of 20 steps and a few more
            return True
        for _ in range(3):  # the window has drawn what was synced (see the playback child)
            viewer.handle.update_texture(0)
        vp = viewer.handle.viewport
        screen = np.asarray(ImageGrab.grab(xdisplay=display).convert("RGB"))
        from PIL import Image
        Image.fromarray(screen).save(f"{out}/policy.png")
        root = env.sim.state.root_pos[0].cpu().numpy()
        state["result"] = {"root": root.tolist(), "lookat": np.asarray(viewer.cam.lookat).tolist(),
                           "markers": int(viewer.handle.user_scn.ngeom), "viewport": [vp.width, vp.height]}
        return False

    stats = evaluate.run_viewer(env, None, task_name="HumanoidHeading", on_frame=on_frame)
    texts = state["texts"][-1]
    print("RESULT " + json.dumps({**state["result"], "stats": stats, "frames": state["frames"],
                                  "texts": [list(texts[2:])]}), flush=True)
""")


@pytest.fixture(scope="module")
def xvfb():
    """An Xvfb display (1280x960, so the viewer's window is 853x640) for this module."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (Debian package xvfb): the on-screen viewer test needs a display")
    from PIL import features

    if not features.check("xcb"):
        pytest.skip("this Pillow has no XCB support: it cannot take screenshots of an X display")
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x960x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    if not number:
        proc.kill()
        pytest.skip("Xvfb did not start")
    yield f":{number}"
    proc.terminate()
    proc.wait(timeout=10)


def run_child(script: str, display: str, out: Path, *args: str) -> dict:
    env = {**os.environ, "DISPLAY": display, "PYTHONPATH": str(ROOT)}
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.run([sys.executable, "-c", script, display, str(out), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=400)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"viewer child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(lines[-1][len("RESULT "):])


def view_of(out: Path, name: str, viewport) -> np.ndarray:
    from PIL import Image

    screen = np.asarray(Image.open(out / f"{name}.png").convert("RGB"))
    return screen[:viewport[1], :viewport[0]]


def test_play_motion_viewer_screenshots_hold_the_character(xvfb, tmp_path):
    result = run_child(PLAYBACK_CHILD, xvfb, tmp_path, str(WALK))
    shots = {s["name"]: s for s in result["shots"]}
    assert list(shots) == ["start", "mid", "far", "after_3s", "user_view"], result
    for name in ("start", "mid", "far", "after_3s"):
        s = shots[name]
        assert s["viewport"] == [853, 640]  # the whole window: side panels hidden (Tab shows them)
        f = framing(character_by_colour(view_of(tmp_path, name, s["viewport"])))
        assert_framed(f, f"screenshot '{name}' (clip t={s['clip_time']:.2f} s)")
        # followed: the look-at point is over the root in the ground plane
        assert np.allclose(s["lookat"][:2], s["root"][:2], atol=0.05), s
        assert (s["distance"], s["azimuth"], s["elevation"]) == (3.0, 135.0, -15.0)
        assert s["text_pixels"] > 100, s  # the corner text is drawn
    # the character walked ~3 m between the first and the farthest screenshot, the camera with it
    assert shots["far"]["root"][0] - shots["start"]["root"][0] > 2.5
    # the user's zoom and turn stay while the camera keeps following
    user = shots["user_view"]
    assert (user["distance"], user["azimuth"], user["elevation"]) == (4.0, 90.0, -20.0)
    assert np.allclose(user["lookat"][:2], user["root"][:2], atol=0.05), user
    assert_framed(framing(character_by_colour(view_of(tmp_path, "user_view", user["viewport"]))),
                  "after the user's zoom to 4 m", min_share=0.015, min_height=0.35)
    labels, values = result["texts"][0]
    assert labels.split("\n") == ["clip", "time", "speed"]
    assert values.startswith("amp_humanoid_walk") and " / 2.55 s" in values


def test_play_motion_viewer_at_real_time_keeps_the_character_in_view(xvfb, tmp_path):
    """Screenshots taken from another thread while the clip plays at real time and loops (at
    2.55 s) all hold the character, centred: the window draws each pose with its own camera."""
    result = run_child(FREE_RUNNING_CHILD, xvfb, tmp_path, str(WALK))
    shots = result["shots"]
    assert len(shots) == 9 and shots[-1]["wall"] >= 4.0  # more than 3 s of playback, a loop included
    for s in shots:
        mask = character_by_colour(view_of(tmp_path, s["name"], s["viewport"]))
        f = framing(mask)
        assert_framed(f, f"real-time screenshot at {s['wall']:.1f} s")
        ys, xs = np.nonzero(mask)
        assert abs(xs.mean() / mask.shape[1] - 0.5) < 0.1, f"off-centre at {s['wall']:.1f} s: {f}"


def test_policy_viewer_follows_env_0_with_markers_and_statistics(xvfb, tmp_path):
    result = run_child(POLICY_CHILD, xvfb, tmp_path)
    assert np.allclose(result["lookat"][:2], result["root"][:2], atol=0.05), result
    assert result["markers"] == 2  # heading task: target direction and facing arrows
    f = framing(character_by_colour(view_of(tmp_path, "policy", result["viewport"])))
    # a zero-action policy: the humanoid may be falling, so less of its height shows
    assert f["share"] >= 0.01 and f["top"] > 0.01 and f["bottom"] < 0.99, f
    labels, values = result["texts"][0]
    assert labels.split("\n") == ["task", "goal", "episode", "finished"]
    assert values.startswith("HumanoidHeading\ntarget speed") and "return" in values
    assert result["stats"]["episode/count"] >= 2  # episodes of 20 steps ended and were counted
