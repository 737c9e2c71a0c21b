"""Play motion clips: kinematic playback in the MuJoCo viewer, or an offscreen video.

    python tools/play_motion.py motions/amp_humanoid/amp_humanoid_walk.npy
    python tools/play_motion.py motions/dataset_amp_humanoid_all.yaml --video all.mp4
    MUJOCO_GL=egl python tools/play_motion.py clip.npy --video clip.gif --seconds 3

Viewer keys: space pause, N / right arrow next clip, P / left previous, up/down speed, R restart,
Tab / Shift+Tab MuJoCo's side panels. The camera frames the character and follows it (the mouse
zooms, turns and pans as usual, and that stays); the clip's name and time are in the corner.
Videos need an offscreen GL backend: MUJOCO_GL=egl (packages libegl1 libgl1) or
MUJOCO_GL=osmesa (libosmesa6); ./run sets MUJOCO_GL=egl.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError  # noqa: E402
from ase_humanoid.motion import playback  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("motion_file", help="a clip (.npy) or a dataset YAML")
    parser.add_argument("--robot", choices=["amp_humanoid", "sword_shield"], default=None,
                        help="humanoid (default: whichever matches the clip's skeleton)")
    parser.add_argument("--video", help="write an .mp4 or .gif instead of opening the viewer")
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--seconds", type=float, default=None, help="at most this long per clip")
    parser.add_argument("--panels", action="store_true", help="viewer: open with MuJoCo's side panels shown")
    args = parser.parse_args(argv)
    try:
        if args.video:  # before the (slow) clip loading
            playback.check_video_options(args.video, args.fps, args.width, args.height, args.seconds)
        motion_lib = playback.load_motion_lib_any_robot(args.motion_file, args.robot)
        print(f"{motion_lib.num_motions} clip(s) on {motion_lib.robot.name}: {', '.join(motion_lib.motion_names)}")
        if args.video:
            path = playback.render_video(motion_lib, args.video, fps=args.fps, width=args.width,
                                         height=args.height, max_seconds_per_clip=args.seconds)
            print(f"wrote {path}")
        else:
            playback.run_viewer(motion_lib, show_ui=args.panels)
    except AseHumanoidError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
