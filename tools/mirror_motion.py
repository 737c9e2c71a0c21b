"""Mirror a clip: reflected left to right, so a right turn becomes a left one in the same style.

    python tools/mirror_motion.py motions/retargeted/cmu_01_01_turn_right_amp_humanoid.npy \
        --out cmu_01_01_turn_right_mirrored_amp_humanoid.npy

The clip is reflected in the vertical plane through the world x axis and its left and right
joints swap (ase_humanoid/motion/augment.py). The skeleton must be left-right symmetric: the AMP
humanoid is; the sword-and-shield humanoid is not (its sword and shield would change hands), and
the error says which joint breaks the symmetry. Writes a poselib .npy that datasets and
tools/play_motion.py read like any clip.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError  # noqa: E402
from ase_humanoid.motion.augment import mirror  # noqa: E402
from ase_humanoid.motion.io import load_motion  # noqa: E402
from ase_humanoid.motion.poselib_npy import check_output_path, save_poselib  # noqa: E402
from ase_humanoid.utils import rotations as rot  # noqa: E402


def heading_turned(clip) -> float:
    """Radians the root's heading turns from the first frame to the last (positive: left)."""
    step = rot.calc_heading(clip.local_rotation[1:, 0]) - rot.calc_heading(clip.local_rotation[:-1, 0])
    return float(rot.normalize_angle(step).sum())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("motion_file", help="a poselib clip (.npy)")
    parser.add_argument("--out", required=True, help="output .npy")
    args = parser.parse_args(argv)
    try:
        check_output_path(args.out)
        clip = load_motion(args.motion_file)
        mirrored = mirror(clip)
        save_poselib(mirrored, args.out)
        print(f"wrote {args.out}: {mirrored.num_frames} frames, {mirrored.duration:.2f} s; the root turns "
              f"{heading_turned(clip):+.2f} rad in the clip, {heading_turned(mirrored):+.2f} mirrored")
    except AseHumanoidError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
