"""Two default trainings side by side, as a user runs them: each one's samples/s against one
training alone, measured in the same run (issue 22's "two trainings side by side" row).

    python benchmarks/side_by_side.py --task HumanoidAMP --seconds 90 --json
    python benchmarks/side_by_side.py --task HumanoidAMP --seconds 90 --json adapt_update_threads=false

Unlike `train_throughput.py --beside-training` (which pauses and resumes the second training
between interleaved epochs), both trainings here run uninterrupted `train.py` processes, so the
scheduler sees exactly what a user's machine sees. Throughput is the median of each run's
`perf/samples_per_s` over the epochs logged after its first `--skip` epochs (start-up, warm-up).
Prints one JSON object: alone, each of the pair, and pair_each_to_alone (fair share: 0.5 on a
machine whose cores one training fills).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))

from train_throughput import cpu_description  # noqa: E402


def start_training(task: str, run_dir: Path, overrides: list[str]) -> subprocess.Popen:
    argv = [sys.executable, str(PROJECT_ROOT / "train.py"), f"task={task}", f"run_dir={run_dir}",
            "max_epochs=1000000", "checkpoint_every=1000000", "save_every=0", *overrides]
    return subprocess.Popen(argv, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def logged_samples_per_s(run_dir: Path, skip: int) -> list[float]:
    metrics = run_dir / "metrics.jsonl"
    if not metrics.is_file():
        return []
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return [row["perf/samples_per_s"] for row in rows[skip:] if "perf/samples_per_s" in row]


def run_for(task: str, count: int, seconds: float, skip: int, overrides: list[str], folder: Path) -> list[float]:
    """Start `count` trainings together, let them run `seconds` after each logged `skip` epochs,
    stop them; each one's median samples/s."""
    run_dirs = [folder / f"run_{count}_{i}" for i in range(count)]
    processes = [start_training(task, run_dir, overrides) for run_dir in run_dirs]
    try:
        deadline = time.monotonic() + 900
        while any(len(logged_samples_per_s(d, 0)) <= skip for d in run_dirs):
            for process in processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a training ended early: {process.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("the trainings did not start within 900 s")
            time.sleep(1.0)
        time.sleep(seconds)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
    return [statistics.median(logged_samples_per_s(d, skip)) for d in run_dirs]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="HumanoidAMP")
    parser.add_argument("--seconds", type=float, default=90.0, help="measured time of each phase")
    parser.add_argument("--skip", type=int, default=2, help="first epochs of each run left out")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("overrides", nargs="*", help="train.py overrides given to every training")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        alone = run_for(args.task, 1, args.seconds, args.skip, args.overrides, Path(tmp))[0]
        pair = run_for(args.task, 2, args.seconds, args.skip, args.overrides, Path(tmp))
    result = {"task": args.task, "overrides": args.overrides, "seconds": args.seconds,
              "alone_samples_per_s": alone, "pair_samples_per_s": pair,
              "pair_each_to_alone": [each / alone for each in pair],
              "pair_total_to_alone": sum(pair) / alone, "cpu": cpu_description()}
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
