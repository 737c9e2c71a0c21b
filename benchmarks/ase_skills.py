"""What the latents of an ASE controller do, measured without its discriminator.

    python benchmarks/ase_skills.py runs/ase1                         # summary, 64 latents x 10 s
    python benchmarks/ase_skills.py runs/ase1/latest.pt --latents 16 --seconds 5 --json
    python benchmarks/ase_skills.py runs/ase1 --video grid.mp4 --paths paths.png
    python benchmarks/ase_skills.py runs/ase1 sim=mujoco_warp device=cuda   # any train.py override

Loads the checkpoint as `train.py test=true` does (its saved network sizes, AMP history, robot
and motion file) and reports fall rate, key-body distance to the dataset, each latent's skill
(nearest clip) and the clip coverage, the spread of speed, turning and height across latents,
the encoder's enc(amp_obs) . z, and the getup success from fallen states. What each number
means: ase_humanoid/skills.py and the README ("Is the ASE controller done?").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="an ASE run folder or .pt checkpoint")
    parser.add_argument("--latents", type=int, default=64, help="fixed random latents, one env each")
    parser.add_argument("--seconds", type=float, default=10.0, help="rollout length per latent")
    parser.add_argument("--seed", type=int, default=0, help="latents and env")
    parser.add_argument("--getup-episodes", type=int, default=None, help="default: one per latent")
    parser.add_argument("--getup-seconds", type=float, default=3.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    parser.add_argument("--video", default=None, help="grid video of the first --video-tiles latents (.mp4/.gif)")
    parser.add_argument("--video-tiles", type=int, default=16)
    parser.add_argument("--paths", default=None, help="top-down plot of every latent's root path (.png)")
    parser.add_argument("--start", choices=["standing", "reference"], default="standing",
                        help="rollouts from the standing pose, or from random frames of the dataset "
                             "(moving; with motion_file=<clip> of one clip)")
    parser.add_argument("overrides", nargs="*", help="extra train.py overrides (sim=..., device=...)")
    return parser.parse_args(argv)


def compose_skill_config(args: argparse.Namespace):
    """train.py's test=true config for the checkpoint (task and robot as it was trained,
    evaluate.checkpoint_test_config; its motion file follows in load_policy) and its epoch."""
    from ase_humanoid.evaluate import checkpoint_test_config

    cfg, state = checkpoint_test_config(args.checkpoint, [f"seed={args.seed}", *args.overrides])
    return cfg, state.get("epoch")


def check_output_paths(args: argparse.Namespace) -> None:
    """Refuse bad --video / --paths names before minutes of work."""
    from ase_humanoid.evaluate import check_video_path

    check_video_path(args.video)
    if args.paths is not None:
        path = Path(args.paths)
        if path.suffix.lower() != ".png" or not path.parent.is_dir():
            raise SystemExit(f"--paths '{args.paths}': give a .png file in an existing folder")


def main(argv=None) -> dict:
    args = parse_args(argv)
    check_output_paths(args)
    import torch

    from ase_humanoid.evaluate import skill_report
    from ase_humanoid.sim.base import PHYSICS_DT
    from ase_humanoid.skills import SkillOptions, format_summary

    cfg, epoch = compose_skill_config(args)
    torch.set_num_threads(int(cfg.torch_threads))  # as train.py does
    control_dt = int(cfg.task.env.control_substeps) * PHYSICS_DT  # 1/30 s
    options = SkillOptions(num_latents=args.latents, steps=max(1, round(args.seconds / control_dt)),
                           seed=args.seed, getup_episodes=args.getup_episodes,
                           getup_steps=max(1, round(args.getup_seconds / control_dt)),
                           video=args.video, video_tiles=args.video_tiles, paths=args.paths,
                           start=args.start)
    report = {"checkpoint": str(args.checkpoint), "epoch": epoch, **skill_report(cfg, options)}
    if args.json:
        print(json.dumps(report), flush=True)
    else:
        print(f"{args.checkpoint} (epoch {epoch})")
        print(format_summary(report))
        for key in ("video", "paths"):
            if key in report:
                print(f"  {key}: {report[key]}")
        print(f"  ({report['seconds_taken']:.1f} s)", flush=True)
    return report


if __name__ == "__main__":
    main()
