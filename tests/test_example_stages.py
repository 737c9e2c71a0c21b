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


def copy_examples(tmp_path: Path, *names: str) -> Path:
    """`names` copied into tmp_path/examples, beside a `./run` that prints the command it was given."""
    examples = tmp_path / "examples"
    examples.mkdir()
    for name in names:
        (examples / name).write_text((STAGES.parent / name).read_text())
    (tmp_path / "run").write_text('#!/usr/bin/env bash\necho "RUN $*"\n')
    (tmp_path / "run").chmod(0o755)
    return examples


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


def test_walk_controller_passes_overrides_to_both_stages(tmp_path):
    """Overrides after RUNS and ROBOT (e.g. robot.pd_damping=drive_implicit) reach each stage."""
    examples = copy_examples(tmp_path, "ase_walk_controller.sh", "stages.sh")
    done = subprocess.run(["bash", str(examples / "ase_walk_controller.sh"), "runs/w", "amp_humanoid",
                           "robot.pd_damping=drive_implicit"], cwd=tmp_path, capture_output=True, text=True,
                          check=True)
    stage_commands = [line for line in done.stdout.splitlines() if line.startswith("RUN python train.py")]
    assert [cmd.split()[3] for cmd in stage_commands] == ["run_dir=runs/w/stage1", "run_dir=runs/w/stage2"]
    assert all(cmd.endswith(" robot.pd_damping=drive_implicit") for cmd in stage_commands)
    plain = subprocess.run(["bash", str(examples / "ase_walk_controller.sh"), "runs/p"], cwd=tmp_path,
                           capture_output=True, text=True, check=True)
    assert "pd_damping" not in plain.stdout


def test_symmetric_walk_controller_redraws_then_adds_the_symmetric_stage(tmp_path):
    """The symmetric controller's recipe: stage 1, stage 1's style layer redrawn, stage 2 from it
    (1000 epochs), then the symmetric actor on the mirrored dataset; all under drive_implicit."""
    examples = copy_examples(tmp_path, "ase_symmetric_walk_controller.sh", "ase_walk_controller.sh", "stages.sh")
    done = subprocess.run(["bash", str(examples / "ase_symmetric_walk_controller.sh"), "runs/s"], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    commands = [line for line in done.stdout.splitlines() if line.startswith("RUN python")]
    assert [cmd.split()[2] for cmd in commands] == ["train.py", "tools/redraw_style_layer.py", "train.py", "train.py"]
    stage1, redraw, stage2, stage3 = commands
    assert "run_dir=runs/s/stage1 max_epochs=1150" in stage1
    assert redraw.endswith("runs/s/stage1/epoch_001150.pt runs/s/stage1_redrawn.pt")
    assert "max_epochs=1000" in stage2 and "checkpoint=runs/s/stage1_redrawn.pt" in stage2
    assert "run_dir=runs/s/stage3_symmetric max_epochs=200" in stage3
    assert "checkpoint=runs/s/stage2/epoch_001000.pt" in stage3
    assert "motion_file=motions/dataset_amp_humanoid_locomotion_symmetric.yaml" in stage3
    assert "train.params.symmetric_actor=true" in stage3
    assert all("robot.pd_damping=drive_implicit" in cmd for cmd in (stage1, stage2, stage3))
