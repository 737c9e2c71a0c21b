"""examples/stages.sh, the stage runner of the examples/ase_*_controller.sh scripts: a finished
stage is skipped, a begun one resumed without its start checkpoint, a new one started as given.
`./run` is replaced by a script that prints the command it was given: what is tested is the
runner's choice and the arguments it passes, not training (tests/test_checkpoint_config.py
covers resume itself)."""

import subprocess
from pathlib import Path

STAGES = Path(__file__).resolve().parents[1] / "examples" / "stages.sh"


def run_stage(tmp_path: Path, *args: str) -> str:
    (tmp_path / "run").write_text('#!/usr/bin/env bash\necho "RUN $*"\n')
    (tmp_path / "run").chmod(0o755)
    script = f'set -euo pipefail; RUNS=runs; source "{STAGES}"; stage {" ".join(args)}'
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_stage_starts_resumes_and_skips(tmp_path):
    started = run_stage(tmp_path, "share", "40", "task=HumanoidASE", "checkpoint=a.pt", "resume=false", "seed=42")
    assert started == "RUN python train.py run_dir=runs/share max_epochs=40 task=HumanoidASE checkpoint=a.pt " \
                      "resume=false seed=42"
    (tmp_path / "runs" / "share").mkdir(parents=True)
    (tmp_path / "runs" / "share" / "latest.pt").write_bytes(b"")
    resumed = run_stage(tmp_path, "share", "40", "task=HumanoidASE", "checkpoint=a.pt", "resume=false", "seed=42")
    assert resumed == "RUN python train.py resume=true run_dir=runs/share max_epochs=40 task=HumanoidASE seed=42"
    (tmp_path / "runs" / "share" / "epoch_000040.pt").write_bytes(b"")
    skipped = run_stage(tmp_path, "share", "40", "task=HumanoidASE", "checkpoint=a.pt", "resume=false", "seed=42")
    assert skipped == "stage share: done (runs/share/epoch_000040.pt)"


def test_example_scripts_parse():
    for script in sorted(STAGES.parent.glob("*.sh")):
        subprocess.run(["bash", "-n", str(script)], check=True)
