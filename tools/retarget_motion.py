#!/usr/bin/env python
"""Retarget a raw motion capture take (FBX, BVH, ASF/AMC or poselib .npy) onto a humanoid.

Examples:
    python tools/retarget_motion.py --preset cmu --source motions/mocap/cmu_bvh/131_01.bvh \
        --out motions/retargeted/131_01_walk_amp.npy
    python tools/retarget_motion.py --config cfg/retarget/example_cmu_hop.yaml
    python tools/retarget_motion.py --config cfg/retarget/example_cmu_hop.yaml --target sword_shield \
        --out /tmp/hop_sword_shield.npy

Settings (YAML keys; a preset < the config file < command-line flags):
    source        the take: .fbx, .bvh, .amc (with `asf`, default: same stem or the subject's
                  NN.asf next to it) or .npy
    tpose         the source T-pose: first_frame | rest | auto | a poselib SkeletonState .npy
    tpose_up      up axis of a T-pose file (default: the source's)
    target        amp_humanoid | sword_shield
    target_tpose  arms_out (default) | rest | a poselib SkeletonState .npy of the humanoid
    joint_map     {source joint: target body}; entries for left_* bodies are mirrored to the
                  right side (see cfg/retarget/presets/cmu.yaml); or `joint_maps` variants
    root_rotation [x, y, z, w] source axes -> target axes (after the y-up turn, see source_up)
    source_up     y | z
    scale         source length unit -> metres
    ground        geoms | origins | none;  root_height_offset: height of the lowest point (m)
    fps           output frame rate, 1 to 1000 (default: the source's); the resampled clip may
                  hold at most 4M frames x joints
    start, end    frames to keep, counted at the OUTPUT rate (after resampling), end exclusive
    out           output poselib SkeletonMotion .npy
`scale`, `tpose`, `tpose_up`, `source_up`, `ground` and `root_height_offset` may be given per
source format as a mapping {fbx: ..., bvh: ..., amc: ..., npy: ...}.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError  # noqa: E402
from ase_humanoid.motion.poselib_npy import check_output_path, save_poselib  # noqa: E402
from ase_humanoid.motion.retarget import (  # noqa: E402
    dof_round_trip_error,
    load_retarget_settings,
    preset_names,
    retarget_from_settings,
)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="retarget YAML (see cfg/retarget/)")
    parser.add_argument("--preset", help=f"settings preset: {', '.join(preset_names())}")
    parser.add_argument("--source", help="motion file to retarget")
    parser.add_argument("--asf", help="ASF skeleton for an .amc source")
    parser.add_argument("--target", help="amp_humanoid | sword_shield")
    parser.add_argument("--tpose", help="source T-pose: first_frame | rest | auto | T-pose .npy")
    parser.add_argument("--fps", type=float, help="output frame rate")
    parser.add_argument("--start", type=int, help="first frame to keep (output rate)")
    parser.add_argument("--end", type=int, help="frame to stop before (output rate)")
    parser.add_argument("--out", help="output .npy")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if not (args.config or args.preset):
        print("error: give --config and/or --preset", file=sys.stderr)
        return 2
    overrides = {k: getattr(args, k) for k in ("preset", "source", "asf", "target", "tpose", "fps", "start", "end", "out")}
    try:
        settings = load_retarget_settings(args.config, overrides=overrides)
        if not settings.get("out"):
            print("error: no output path: set 'out' in the config or pass --out", file=sys.stderr)
            return 2
        check_output_path(settings["out"])  # before the retarget, which can take minutes
        clip, result, robot = retarget_from_settings(settings)
        path = save_poselib(clip, settings["out"])
    except AseHumanoidError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {path}: {clip.num_frames} frames at {clip.fps:g} fps on {robot.name}; "
          f"ground shift {result.ground_shift:+.3f} m; dof round-trip error "
          f"{dof_round_trip_error(robot, result.local_rotation):.1e} rad")
    if result.limit_report:
        print("joint-limit violations (fraction of frames, worst excess in degrees):")
        for name, (fraction, worst) in result.limit_report.items():
            print(f"  {name:20s} {fraction:6.1%}  {worst:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
