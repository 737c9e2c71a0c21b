"""Ship a trained model with the project: a weights-only copy in pretrained/, its checksum and
a model card.

    python tools/ship_model.py ~/runs/ase_cpu/latest.pt --name ase_llc_amp_humanoid \\
        --metrics skills.json --hours 2.6 \\
        --command "python train.py task=HumanoidASE" --summary "ASE skill controller, CPU default"

Writes pretrained/<name>.pt (run config, networks and normalisers only: no optimiser state, no
sample buffers), updates pretrained/SHA256SUMS and writes pretrained/<name>.md, whose ```json
block holds `--metrics` (a JSON file, e.g. from benchmarks/ase_skills.py --json or a test=true
run) and the reproduction settings the tests use (`--check`, a JSON object). An existing model
of that name is replaced only with --replace.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError  # noqa: E402

DATA_TERMS = ("Motion data: CMU Graphics Lab Motion Capture Database (mocap.cs.cmu.edu), through the "
              "clips listed in motions/ATTRIBUTION.md. The data used in this project was obtained from "
              "mocap.cs.cmu.edu. The database was created with funding from NSF EIA-0196217. CMU terms: "
              "free for research and for inclusion in products; the data may not be resold, even "
              "converted. The weights are released under the project's Apache-2.0 licence.")


def sample_count(agent: dict, samples: int) -> str:
    """`samples` (the run's global step) in words: control steps, or for a high-level policy
    its decisions and the control steps they span (llc_steps each)."""
    if agent.get("algo") == "HRLAgent":
        llc_steps = int(agent["config"].get("llc_steps", 1))
        return f"{samples:,} high-level samples ({samples * llc_steps:,} control steps)"
    return f"{samples:,} control steps"


def model_card(name: str, state: dict, args: argparse.Namespace, metrics: dict, check: dict) -> str:
    config = state.get("config") or {}
    agent = state["agent"]
    samples = state.get("global_step")
    block = json.dumps({"metrics": metrics, "check": check}, indent=2, sort_keys=True)
    task = (config.get("task") or {}).get("name")
    robot = (config.get("robot") or {}).get("name")
    units = {k: v for k, v in agent["config"].items() if k.endswith("_units") or k == "latent_dim"}
    motion = config.get("motion_file") or (config.get("task") or {}).get("motion_file")
    if isinstance(motion, dict):  # the task's default per robot
        motion = motion.get(robot)
    return f"""# {name}

{args.summary}

| | |
|---|---|
| file | `pretrained/{name}.pt` (weights only; checksum in `pretrained/SHA256SUMS`) |
| agent | {agent['algo']} on task {task}, robot {robot} |
| networks | {', '.join(f'{k}={v}' for k, v in sorted(units.items()))} |
| motion data | `{motion}` (the dataset's clips and their sources: motions/ATTRIBUTION.md) |
| trained with | `{args.command}` |
| epochs / samples | {state.get('epoch')} / {sample_count(agent, samples)} |
| training time | {args.hours} h on {args.machine} |

{args.notes}

## Metrics

Measured with `{args.metrics_command}`. The `check` entry is a short run the test suite
repeats on every model (`tests/test_pretrained.py`), with the tolerance it allows.

```json
{block}
```

## Licence

{DATA_TERMS}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a run checkpoint (latest.pt, epoch_N.pt) or run folder")
    parser.add_argument("--name", required=True, help="file stem in pretrained/ (letters, digits, _ -)")
    parser.add_argument("--metrics", required=True, help="JSON file of the model's measured metrics")
    parser.add_argument("--check", default="{}", help="JSON object: the short reproduction run of the tests")
    parser.add_argument("--hours", required=True, help="training wall-clock hours")
    parser.add_argument("--machine", default="2 CPU cores", help="what it was trained on")
    parser.add_argument("--command", required=True, help="the training command")
    parser.add_argument("--metrics-command", default="see the metrics' source", help="how the metrics were measured")
    parser.add_argument("--summary", default="", help="one paragraph: what the model is")
    parser.add_argument("--notes", default="", help="further paragraphs for the card (Markdown)")
    parser.add_argument("--out", default=None, help="folder (default: the project's pretrained/)")
    parser.add_argument("--replace", action="store_true", help="replace an existing model of that name")
    args = parser.parse_args(argv)
    try:
        return ship(args)
    except (AseHumanoidError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2  # as train.py and every other tool: 2 for a user error


def ship(args: argparse.Namespace) -> int:
    import re

    from ase_humanoid.utils.atomic_file import write_text_atomic
    from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint
    from ase_humanoid.utils.shipped_models import (PRETRAINED_DIR, read_checksums, sha256_of,
                                                    weights_only_state, write_checksums)

    if not re.fullmatch(r"[A-Za-z0-9_-]+", args.name):
        raise ValueError(f"--name '{args.name}': use letters, digits, '_' and '-' only")
    out = Path(args.out) if args.out else PRETRAINED_DIR
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{args.name}.pt"
    if target.exists() and not args.replace:
        raise ValueError(f"'{target}' exists; pass --replace to replace it")
    metrics = json.loads(Path(args.metrics).read_text())
    check = json.loads(args.check)
    if not isinstance(metrics, dict) or not isinstance(check, dict):
        raise ValueError("--metrics and --check must hold JSON objects")
    state = weights_only_state(load_checkpoint(args.checkpoint),
                               provenance={"command": args.command, "hours": args.hours,
                                           "machine": args.machine})
    sums = read_checksums(out)
    save_checkpoint(state, target)
    sums[target.name] = sha256_of(target)
    write_checksums(out, sums)
    card = model_card(args.name, state, args, metrics, check)
    write_text_atomic(out / f"{args.name}.md", card)
    print(f"shipped {target} ({target.stat().st_size / 1e6:.1f} MB), card {out / (args.name + '.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
