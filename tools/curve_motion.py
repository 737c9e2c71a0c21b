"""Make a turning clip from a straight one: the same poses on a path that bends at a constant rate.

    python tools/curve_motion.py motions/amp_humanoid/amp_humanoid_walk.npy --yaw-rate 0.5 \
        --out motions/turning/amp_humanoid_walk_left_0.5.npy

Positive --yaw-rate turns left (counter-clockwise seen from above), in rad/s. Joint angles and
root height stay the clip's; feet in stance slide by about yaw rate x their distance from the
root, unless `--pivot stance_foot` turns each frame about the planted foot (the path then grows:
3.90 -> 4.21 m at 1 rad/s for the walk clip; ase_humanoid/motion/augment.py). Writes a poselib
.npy that datasets and tools/play_motion.py read like any clip; an existing --out is replaced only
with --replace.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError, MotionFileError  # noqa: E402
from ase_humanoid.motion.augment import PIVOTS, curve_path  # noqa: E402
from ase_humanoid.motion.io import load_motion  # noqa: E402
from ase_humanoid.motion.poselib_npy import check_output_path, save_poselib  # noqa: E402
from ase_humanoid.utils import rotations as rot  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("motion_file", help="a poselib clip (.npy)")
    parser.add_argument("--yaw-rate", type=float, required=True, help="rad/s; positive turns left")
    parser.add_argument("--pivot", choices=PIVOTS, default="root",
                        help="turn each frame about the root (the shipped turning clips; the stance foot "
                             "slides) or about the lower foot (it stays planted; the root swings round it)")
    parser.add_argument("--out", required=True, help="output .npy")
    parser.add_argument("--replace", action="store_true", help="replace --out if it exists")
    args = parser.parse_args(argv)
    try:
        check_output_path(args.out)
        if Path(args.out).exists() and not args.replace:  # a shipped clip or a day's work: ask first
            raise MotionFileError(f"--out {args.out} exists; pass --replace to replace it")
        clip = load_motion(args.motion_file)
        curved = curve_path(clip, args.yaw_rate, args.pivot)
        save_poselib(curved, args.out)
        heading = rot.calc_heading(curved.local_rotation[[0, -1], 0])
        path = curved.root_translation[1:, :2] - curved.root_translation[:-1, :2]
        print(f"wrote {args.out}: {curved.num_frames} frames, {curved.duration:.2f} s, heading "
              f"{float(heading[0]):+.2f} -> {float(heading[1]):+.2f} rad, path {float(path.norm(dim=-1).sum()):.2f} m")
    except AseHumanoidError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
