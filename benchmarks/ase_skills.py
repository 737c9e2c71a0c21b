"""What the latents of an ASE controller do, measured without its discriminator.

    python benchmarks/ase_skills.py runs/ase1                         # summary, 64 latents x 10 s
    python benchmarks/ase_skills.py runs/ase1/latest.pt --latents 16 --seconds 5 --json
    python benchmarks/ase_skills.py runs/ase1 --video grid.mp4 --paths paths.png
    python benchmarks/ase_skills.py runs/ase1 sim=mujoco_warp device=cuda   # any train.py override
    python benchmarks/ase_skills.py runs/ase1 --every 500 --getup-episodes 256   # a table over the run

Loads the checkpoint as `train.py test=true` does (its saved network sizes, AMP history, robot
and motion file) and reports fall rate, key-body distance to the dataset, each latent's skill
(nearest clip) and the clip coverage, the spread of speed, turning and height across latents,
the encoder's enc(amp_obs) . z, and the getup success from fallen states. What each number
means: ase_humanoid/analysis/ and the README ("Is the ASE controller done?").

`--every N` on a run folder measures each snapshot `epoch_K.pt` with K a multiple of N and prints
one table row per snapshot (fall rate, key-body distance, clips, enc . z, getup, targets met), so
a run's progress towards a usable controller can be read off in one place. Each report is kept
in `RUN/skill_reports/` under its settings: measuring a run again, while it trains or after,
measures only the snapshots that are new.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Longest rollout per latent (and getup episode): the default is 10 s; an hour of 30 Hz control
# steps per latent (with --video, their frames in memory) is a typo, not a measurement.
MAX_ROLLOUT_SECONDS = 600.0
MAX_VIDEO_TILES = 64  # an 8 x 8 grid of 160 x 120 tiles: a 1280 x 960 video


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
    parser.add_argument("--every", type=int, default=None,
                        help="on a run folder: measure each snapshot epoch_K.pt with K a multiple of this, as a table")
    parser.add_argument("--mirror-pairs", action="store_true",
                        help="the second half of the latents the mirror images of the first (a symmetric "
                             "controller turns each pair opposite ways; reported as mirror_pairs)")
    parser.add_argument("overrides", nargs="*", help="extra train.py overrides (sim=..., device=...)")
    return parser.parse_args(argv)


def compose_skill_config(args: argparse.Namespace):
    """train.py's test=true config for the checkpoint (task and robot as it was trained,
    evaluate.checkpoint_test_config; its motion file follows in load_policy) and its epoch."""
    from ase_humanoid.evaluate import checkpoint_test_config

    cfg, state = checkpoint_test_config(args.checkpoint, [f"seed={args.seed}", *args.overrides])
    return cfg, state.get("epoch")


def check_seconds(option: str, seconds: float) -> None:
    """ConfigError unless `seconds` is a finite rollout length in (0, MAX_ROLLOUT_SECONDS]: nan
    and inf would end in an error deep in the rollout, 0 would measure one step and 1e9 run for
    years."""
    from ase_humanoid.errors import ConfigError

    if not 0 < seconds <= MAX_ROLLOUT_SECONDS:  # NaN fails every comparison
        raise ConfigError(f"{option} {seconds:g}: give a number of seconds above 0 and at most "
                          f"{MAX_ROLLOUT_SECONDS:g}")


def check_arguments(args: argparse.Namespace) -> None:
    """ConfigError for an option out of range, before a checkpoint is read or an env built. The
    latents are one env each, bounded by memory as train.py bounds num_envs."""
    from ase_humanoid.config import ENV_BYTES, MAX_TEST_EPISODES, check_fits_memory
    from ase_humanoid.errors import ConfigError

    if args.latents < 1:
        raise ConfigError(f"--latents {args.latents}: give at least 1 (one env each)")
    check_fits_memory("--latents", args.latents, "latents (one env each)", ENV_BYTES)
    check_seconds("--seconds", args.seconds)
    check_seconds("--getup-seconds", args.getup_seconds)
    if args.getup_episodes is not None and not 0 <= args.getup_episodes <= MAX_TEST_EPISODES:
        raise ConfigError(f"--getup-episodes {args.getup_episodes}: give 0 to {MAX_TEST_EPISODES:,} "
                          "(0: no getup measurement)")
    if not 1 <= args.video_tiles <= MAX_VIDEO_TILES:
        raise ConfigError(f"--video-tiles {args.video_tiles}: give 1 to {MAX_VIDEO_TILES} (tiles of the grid video)")


def check_output_paths(args: argparse.Namespace) -> None:
    """Refuse bad --video / --paths names before minutes of work."""
    from ase_humanoid.evaluate import check_video_path

    check_video_path(args.video)
    if args.paths is not None:
        path = Path(args.paths)
        if path.suffix.lower() != ".png" or not path.parent.is_dir():
            raise SystemExit(f"--paths '{args.paths}': give a .png file in an existing folder")


def measure(args: argparse.Namespace) -> dict:
    """The skill report of `args.checkpoint` (a run folder or .pt), with its epoch."""
    import torch

    from ase_humanoid.evaluate import skill_report
    from ase_humanoid.sim.base import PHYSICS_DT
    from ase_humanoid.analysis.skill_report import SkillOptions

    cfg, epoch = compose_skill_config(args)
    torch.set_num_threads(int(cfg.torch_threads))  # as train.py does
    control_dt = int(cfg.task.env.control_substeps) * PHYSICS_DT  # 1/30 s
    options = SkillOptions(num_latents=args.latents, steps=max(1, round(args.seconds / control_dt)),
                           seed=args.seed, getup_episodes=args.getup_episodes,
                           getup_steps=max(1, round(args.getup_seconds / control_dt)),
                           video=args.video, video_tiles=args.video_tiles, paths=args.paths,
                           start=args.start, mirror_pairs=args.mirror_pairs)
    return {"checkpoint": str(args.checkpoint), "epoch": epoch, **skill_report(cfg, options)}


def snapshots(run_dir: Path, every: int) -> list[tuple[int, Path]]:
    """`(epoch, path)` of the run's `epoch_K.pt` with K a multiple of `every`, by epoch."""
    found = []
    for path in run_dir.glob("epoch_*.pt"):
        digits = path.stem.removeprefix("epoch_")
        if digits.isdigit() and int(digits) % every == 0:
            found.append((int(digits), path))
    return sorted(found)


def settings_tag(args: argparse.Namespace) -> str:
    """What a kept report was measured with, as a file-name part: a report is reused only for the
    same latents, seconds, seed, getups, start and overrides."""
    import hashlib

    getups = args.latents if args.getup_episodes is None else args.getup_episodes  # None: one per latent
    tag = (f"latents{args.latents}_s{args.seconds:g}_seed{args.seed}_getup{getups}"
           f"x{args.getup_seconds:g}s_{args.start}")
    if args.overrides:
        tag += "_" + hashlib.sha256(" ".join(sorted(args.overrides)).encode()).hexdigest()[:10]
    return tag


def table_row(report: dict) -> str:
    """One markdown row: epoch, fall rate, key-body cm, clips (locomotion counts), enc . z,
    getup, targets met (ase_humanoid.analysis.skill_targets.usability)."""
    from ase_humanoid.envs.motion_quality import short_clip_names
    from ase_humanoid.analysis.skill_targets import covered_and_locomotion_clips, usability

    _, locomotion = covered_and_locomotion_clips(report)
    counts = ", ".join(f"{short} {report['clip_counts'][name]}"
                       for name, short in zip(locomotion, short_clip_names(locomotion)))
    error, getup, met = report["key_body_error_cm"], report["getup"]["success_rate"], usability(report)
    return (f"| {report['epoch']} | {report['fall_rate']:.2f} | "
            f"{'-' if error is None else f'{error:.2f}'} | {report['clip_coverage']} ({counts}) | "
            f"{report['enc_z']:.3f} | {'-' if getup is None else f'{getup:.2f}'} | "
            f"{sum(met.values())} of {len(met)} |")


TABLE_HEADER = ("| epoch | fall rate | key-body cm | clips (locomotion) | enc . z | getup | targets met |\n"
                "|---|---|---|---|---|---|---|")


def read_kept_report(path: Path) -> dict | None:
    """A report kept by an earlier `--every`, or None when there is none or it does not read
    (then it is measured again and replaced)."""
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        print(f"note: {path} does not read ({exc}); measuring that snapshot again", flush=True)
        return None
    return report if isinstance(report, dict) and "epoch" in report else None


def measure_run(args: argparse.Namespace) -> list[dict]:
    """`--every`: the report of every chosen snapshot of the run folder, kept in
    RUN/skill_reports/ and read back from there when measured before with the same settings."""
    from ase_humanoid.utils.atomic_file import write_text_atomic

    run_dir = Path(args.checkpoint)
    if args.every < 1 or not run_dir.is_dir():
        raise SystemExit("--every N needs a run folder and N >= 1")
    if args.video or args.paths:
        raise SystemExit("--every measures many snapshots: give --video / --paths for one checkpoint")
    chosen = snapshots(run_dir, args.every)
    if not chosen:
        raise SystemExit(f"{run_dir} holds no epoch_K.pt with K a multiple of {args.every} "
                         "(snapshots are written every save_every epochs)")
    kept_dir, tag = run_dir / "skill_reports", settings_tag(args)
    kept_dir.mkdir(exist_ok=True)
    if not args.json:
        print(f"{run_dir}: {len(chosen)} snapshots, {tag}\n{TABLE_HEADER}", flush=True)
    reports = []
    for epoch, path in chosen:
        kept = kept_dir / f"epoch_{epoch:06d}_{tag}.json"
        report = read_kept_report(kept)
        if report is None:
            report = measure(argparse.Namespace(**{**vars(args), "checkpoint": str(path)}))
            write_text_atomic(kept, json.dumps(report))
        reports.append(report)
        if not args.json:
            print(table_row(report), flush=True)
    if args.json:
        print(json.dumps({"run": str(run_dir), "every": args.every, "settings": tag, "reports": reports}), flush=True)
    return reports


def main(argv=None):
    args = parse_args(argv)
    check_arguments(args)
    check_output_paths(args)
    if args.every is not None:
        return measure_run(args)
    from ase_humanoid.analysis.skill_report import format_summary
    from ase_humanoid.analysis.skill_targets import format_usability

    report = measure(args)
    if args.json:
        print(json.dumps(report), flush=True)
    else:
        print(f"{args.checkpoint} (epoch {report['epoch']})")
        print(format_summary(report))
        if report["getup"]["success_rate"] is not None:  # the verdict train.py's end report prints
            print(format_usability(report))
        for key in ("video", "paths"):
            if key in report:
                print(f"  {key}: {report[key]}")
        print(f"  ({report['seconds_taken']:.1f} s)", flush=True)
    return report


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
