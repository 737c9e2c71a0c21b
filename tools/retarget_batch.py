#!/usr/bin/env python
"""Retarget a list of clips cut from raw mocap takes onto the humanoids, check each, write them.

    python tools/retarget_batch.py cfg/retarget/cmu_extra.yaml --mocap PATH/TO/cmu_extra \
        --out-dir motions/cmu_extra [--only NAME ...] [--replace] [--json report.json]

The manifest (YAML): `settings`, retarget keys for every clip (as in a retarget config: preset,
fps, ground, clamp_limits, ...); `targets`, the humanoids every clip is made for; and `clips`,
each with `name`, `source` (relative to --mocap), `start` / `end` (frames at the output rate,
end exclusive), `motion` (what it shows), `tags`, and optionally its own `targets`. Each clip is
written as `<out-dir>/<name>_<target>.npy` when it passes the shipped-clip checks
(ase_humanoid.motion.clip_checks: feet on the ground, joints in range, no jumps); one that fails
is reported and not written, and the exit status is 1. An existing file is replaced only with
--replace.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError, ConfigError  # noqa: E402

CLIP_KEYS = ("name", "source", "start", "end", "motion", "tags", "targets", "note")
MANIFEST_KEYS = ("settings", "targets", "clips")


def read_manifest(path: Path) -> dict:
    """The manifest, validated: unknown keys, a clip without name or source, a repeated name
    are errors naming the clip."""
    import yaml

    if not path.is_file():
        raise ConfigError(f"manifest not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: malformed YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("clips"), list):
        raise ConfigError(f"{path}: expected a mapping with a 'clips' list")
    unknown = sorted(set(data) - set(MANIFEST_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; valid keys: {', '.join(MANIFEST_KEYS)}")
    seen = set()
    for i, clip in enumerate(data["clips"]):
        if not isinstance(clip, dict) or not clip.get("name") or not clip.get("source"):
            raise ConfigError(f"{path}: clip {i} needs at least 'name' and 'source'")
        bad = sorted(set(clip) - set(CLIP_KEYS))
        if bad:
            raise ConfigError(f"{path}: clip '{clip['name']}': unknown key(s) {bad}; valid keys: {', '.join(CLIP_KEYS)}")
        if clip["name"] in seen:
            raise ConfigError(f"{path}: clip name '{clip['name']}' appears twice")
        seen.add(clip["name"])
    return data


def make_clip(entry: dict, target: str, settings: dict, mocap: Path):
    """(MotionClip, RetargetResult, robot, problems) of one manifest entry on `target`."""
    from ase_humanoid.motion.clip_checks import clip_problems
    from ase_humanoid.motion.retarget import load_retarget_settings, retarget_from_settings

    overrides = dict(settings, source=str(mocap / entry["source"]), target=target,
                     start=entry.get("start"), end=entry.get("end"))
    merged = load_retarget_settings(preset=settings.get("preset"), overrides=overrides)
    clip, result, robot = retarget_from_settings(merged)
    return clip, result, robot, clip_problems(clip, robot)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("manifest", type=Path, help="clip manifest YAML (e.g. cfg/retarget/cmu_extra.yaml)")
    parser.add_argument("--mocap", type=Path, required=True, help="folder the manifest's sources are relative to")
    parser.add_argument("--out-dir", type=Path, required=True, help="folder the clips are written to")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="make only these clips")
    parser.add_argument("--replace", action="store_true", help="replace clips that already exist")
    parser.add_argument("--json", type=Path, help="write the per-clip report (JSON) here")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    from ase_humanoid.motion.poselib_npy import save_poselib

    args = parse_args(argv)
    try:
        manifest = read_manifest(args.manifest)
        if not args.mocap.is_dir():
            raise ConfigError(f"--mocap {args.mocap}: not a folder")
        if not args.out_dir.is_dir():
            raise ConfigError(f"--out-dir {args.out_dir}: not a folder")
        clips = manifest["clips"]
        if args.only:
            missing = sorted(set(args.only) - {c["name"] for c in clips})
            if missing:
                raise ConfigError(f"--only: no clip named {missing} in {args.manifest}")
            clips = [c for c in clips if c["name"] in args.only]
        settings = dict(manifest.get("settings") or {})
        report, failed = [], 0
        for entry in clips:
            for target in entry.get("targets") or manifest.get("targets") or ["amp_humanoid"]:
                out = args.out_dir / f"{entry['name']}_{target}.npy"
                if out.exists() and not args.replace:
                    raise ConfigError(f"{out} exists: pass --replace to remake it")
                clip, result, _, problems = make_clip(entry, target, settings, args.mocap)
                row = dict(name=entry["name"], target=target, frames=clip.num_frames, fps=clip.fps,
                           ground_shift_m=round(result.ground_shift, 4), ground_drift_m=round(result.ground_drift, 4),
                           clamped=sorted(result.limit_report), problems=problems)
                report.append(row)
                if problems:
                    failed += 1
                    print(f"FAILED {out.name}: {'; '.join(problems)}", file=sys.stderr)
                    continue
                save_poselib(clip, out)
                print(f"wrote {out} ({clip.num_frames} frames, ground drift {100 * result.ground_drift:.1f} cm"
                      + (f", clamped: {', '.join(row['clamped'])}" if row["clamped"] else "") + ")")
        if args.json:
            args.json.write_text(json.dumps(report, indent=1) + "\n")
    except AseHumanoidError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{len(report) - failed} clips written, {failed} failed the checks")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
