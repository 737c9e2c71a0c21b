"""The learning curve of a training run, from its metrics.jsonl: a PNG and a JSON.

    python benchmarks/run_curve.py ~/runs/ase_cpu --out docs/benchmarks/ase_cpu --title "ASE, CPU profile"

Several runs (an ablation) go on the same panels, one line each, by samples:

    python benchmarks/run_curve.py ~/runs/amp ~/runs/ase --labels "AMP,ASE" --out cmp --title "AMP vs ASE"

or by hours of training (`--x hours`), where a sample is not the same thing in each run (a
high-level step of 5 control steps against one of 2).

Works on any run (AMP, ASE, hierarchical tasks) and across resumed sittings: each epoch's last
logged line counts (a resume cuts the log back to its checkpoint, so there is one), and the
training hours are the sum of the epochs' own durations (samples / samples per second), so time
between sittings does not count. The JSON holds every `--every`-th epoch of the chosen keys and
a summary of the last `--tail` epochs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

# (metrics key, short name, panel title); panels whose key a run never logged are left out.
CURVE_KEYS = (
    ("episode/length", "episode_length", "episode length (control steps)"),
    ("episode/fall_rate", "fall_rate", "fall rate"),
    ("quality/key_body_error_cm", "key_body_error_cm", "key-body distance to the dataset (cm)"),
    ("quality/root_speed", "root_speed", "root speed of the probe worlds (m/s)"),
    ("train/disc_reward_mean", "style_reward", "style reward"),
    ("train/enc_reward_mean", "encoder_reward", "encoder reward"),
    ("skills/enc_z", "enc_z", "enc(amp_obs) . z (probe worlds)"),
    ("skills/clip_coverage", "clip_coverage", "clips nearest to probe worlds"),
    ("train/task_reward_mean", "task_reward", "task reward"),
    ("perf/samples_per_s", "samples_per_s", "samples per second"),
)


def read_epochs(metrics_path: Path) -> list[dict]:
    """One record per epoch (the last logged), in epoch order; unreadable lines are skipped
    with a note (a line torn by a kill)."""
    by_epoch: dict[int, dict] = {}
    for number, line in enumerate(metrics_path.read_text().splitlines(), start=1):
        try:
            record = json.loads(line)
            by_epoch[int(record["epoch"])] = record
        except (ValueError, KeyError, TypeError):
            print(f"note: {metrics_path}:{number} is not a metrics record; skipped", file=sys.stderr)
    return [by_epoch[e] for e in sorted(by_epoch)]


def curve_points(records: list[dict]) -> list[dict]:
    """Per epoch: epoch, samples, training hours so far, and the CURVE_KEYS values it has."""
    points, hours, last_step = [], 0.0, 0
    for record in records:
        step = int(record.get("global_step", 0))
        rate = record.get("perf/samples_per_s")
        if rate and math.isfinite(rate) and rate > 0:
            hours += (step - last_step) / rate / 3600.0
        last_step = step
        point = {"epoch": int(record["epoch"]), "samples": step, "hours": round(hours, 4)}
        point.update({name: record[key] for key, name, _ in CURVE_KEYS
                      if isinstance(record.get(key), (int, float)) and math.isfinite(record[key])})
        points.append(point)
    return points


def tail_summary(points: list[dict], tail: int) -> dict:
    """Mean of each curve value over the last `tail` epochs that logged it."""
    summary = {}
    for _, name, _ in CURVE_KEYS:
        values = [p[name] for p in points if name in p][-tail:]
        if values:
            summary[name] = round(sum(values) / len(values), 4)
    return summary


X_AXES = {"samples": ("million samples", lambda point: point["samples"] / 1e6),
          "hours": ("hours of training", lambda point: point["hours"])}


def plot(runs: list[tuple[str, list[dict]]], path: Path, title: str, x_axis: str = "samples") -> None:
    """One panel per CURVE_KEYS entry any run logged; one line per run `(label, points)`, over
    samples or training hours (`x_axis`: runs whose samples differ in kind, such as high-level
    steps of different lengths, compare by time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # A key no run logged, or logged only as 0 (the task reward of pre-training), has no panel.
    panels = [(name, label) for _, name, label in CURVE_KEYS
              if any(p.get(name) for _, points in runs for p in points)]
    cols = 3
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
    x_label, x_of = X_AXES[x_axis]
    for ax, (name, label) in zip(axes.flat, panels):
        for run_label, points in runs:
            xs = [x_of(p) for p in points if name in p]
            ax.plot(xs, [p[name] for p in points if name in p], linewidth=0.8, label=run_label)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel(x_label)
        ax.grid(alpha=0.3)
    if len(runs) > 1 and panels:
        axes.flat[0].legend(fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if len(runs) == 1:
        last = runs[0][1][-1]
        title = (f"{title}: {last['epoch']} epochs, {last['samples'] / 1e6:.1f} M samples, "
                 f"{last['hours']:.2f} h of training")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def run_result(title: str, points: list[dict], every: int, tail: int) -> dict:
    """The JSON of one run: totals, the summary of its last `tail` epochs, every `every`-th point."""
    kept = [p for p in points if p["epoch"] % max(every, 1) == 0 or p is points[-1]]
    return {"run": title, "epochs": points[-1]["epoch"], "samples": points[-1]["samples"],
            "training_hours": points[-1]["hours"], f"last_{tail}_epochs": tail_summary(points, tail),
            "points": kept}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+", metavar="run_dir", help="run folders (each holding metrics.jsonl)")
    parser.add_argument("--out", required=True, help="output prefix: writes PREFIX.png and PREFIX.json")
    parser.add_argument("--title", default=None)
    parser.add_argument("--labels", default=None, help="comma-separated, one per run (default: folder names)")
    parser.add_argument("--every", type=int, default=10, help="epochs between points in the JSON")
    parser.add_argument("--tail", type=int, default=50, help="epochs the summary averages")
    parser.add_argument("--x", choices=sorted(X_AXES), default="samples",
                        help="x axis: samples, or hours of training (for runs whose samples differ in kind)")
    args = parser.parse_args(argv)
    labels = args.labels.split(",") if args.labels else [Path(d).name for d in args.run_dirs]
    if len(labels) != len(args.run_dirs):
        print(f"error: --labels names {len(labels)} runs, {len(args.run_dirs)} run folders given", file=sys.stderr)
        return 1
    runs = []
    for run_dir, label in zip(args.run_dirs, labels):
        metrics = Path(run_dir) / "metrics.jsonl"
        if not metrics.is_file():
            print(f"error: no metrics.jsonl in '{run_dir}'", file=sys.stderr)
            return 1
        points = curve_points(read_epochs(metrics))
        if not points:
            print(f"error: '{metrics}' holds no epochs", file=sys.stderr)
            return 1
        runs.append((label, points))
    out = Path(args.out)
    if len(runs) == 1:
        title = args.title or Path(args.run_dirs[0]).name
        result = run_result(title, runs[0][1], args.every, args.tail)
        summary = {k: v for k, v in result.items() if k != "points"}
    else:
        title = args.title or " vs ".join(labels)
        result = {"title": title, "runs": [run_result(label, points, args.every, args.tail)
                                           for label, points in runs]}
        summary = {"title": title, "runs": [{k: v for k, v in r.items() if k != "points"} for r in result["runs"]]}
    plot(runs, out.with_suffix(".png"), title, args.x)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
