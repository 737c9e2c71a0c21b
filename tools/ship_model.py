"""Ship a trained model with the project: a weights-only copy in pretrained/, its checksum and
a model card.

    python tools/ship_model.py ~/runs/ase_cpu/latest.pt --name ase_llc_amp_humanoid \\
        --metrics skills.json --hours 2.6 \\
        --command "python train.py task=HumanoidASE" --summary "ASE skill controller, CPU default"

Writes pretrained/<name>.pt (run config, networks and normalisers only: no optimiser state, no
sample buffers), updates pretrained/SHA256SUMS and writes pretrained/<name>.md, whose ```json
block holds `--metrics` (a JSON file, e.g. from benchmarks/ase_skills.py --json or a test=true
run) and the reproduction settings the tests use (`--check`, a JSON object). An existing model
of that name (its .pt or its .md) is replaced only with --replace. Everything is checked before
anything is written, and the three files are written all or none.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError  # noqa: E402

DATA_TERMS = ("Motion data: CMU Graphics Lab Motion Capture Database (mocap.cs.cmu.edu), through the "
              "clips listed in motions/ATTRIBUTION.md. The data used in this project was obtained from "
              "mocap.cs.cmu.edu. The database was created with funding from NSF EIA-0196217. CMU terms: "
              "free for research and for inclusion in products; the data may not be resold, even "
              "converted. The weights are released under the project's Apache-2.0 licence.")

# Names that cannot be a model's, in any case: the checksum list's own (SHA256SUMS.pt and .md
# beside the list would read as parts of it), and the device names Windows reserves, which would
# make a clone of the repository fail there.
RESERVED_NAMES = ("SHA256SUMS", "CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                  *(f"LPT{i}" for i in range(1, 10)))
MAX_HOURS = 100_000.0  # eleven years of training: more is a typo


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
    parser.add_argument("--replace", action="store_true", help="replace an existing NAME.pt / NAME.md")
    args = parser.parse_args(argv)
    try:
        return ship(args)
    except (AseHumanoidError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2  # as train.py and every other tool: 2 for a user error


def check_name(name: str) -> None:
    import re

    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]*", name):  # a leading '-' reads as an option in a shell
        raise ValueError(f"--name '{name}': use letters, digits, '_' and '-' only, not starting with '-'")
    if name.upper() in RESERVED_NAMES:
        raise ValueError(f"--name '{name}' is reserved ({', '.join(RESERVED_NAMES[:5])}, COM1-9, LPT1-9): "
                         "choose another name")


def check_hours(text: str) -> float:
    """`--hours` as a number of hours in (0, MAX_HOURS]; nan and inf are refused (the card
    would print them and the tests read them back)."""
    try:
        hours = float(text)
    except ValueError:
        raise ValueError(f"--hours '{text}': not a number of hours") from None
    if not 0 < hours <= MAX_HOURS:  # NaN fails every comparison
        raise ValueError(f"--hours '{text}': give a number of hours above 0 and at most {MAX_HOURS:,.0f}")
    return hours


def read_json_object(text: str, where: str) -> dict:
    """The JSON object in `text`; ValueError naming `where` for other JSON, or for NaN, Infinity
    or a number too large for a float (Python's json reads them, but they are no JSON and no
    metric a test can compare with)."""
    def refuse(token: str):
        raise ValueError(f"{where}: {token} is not a finite number; every value must be finite")

    def finite_float(token: str) -> float:
        value = float(token)
        return value if math.isfinite(value) else refuse(token)

    try:
        data = json.loads(text, parse_constant=refuse, parse_float=finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: must hold a JSON object, got {type(data).__name__}")
    return data


def read_metrics(path: str) -> dict:
    from ase_humanoid.errors import ConfigError
    from ase_humanoid.utils.checks import require_input_file

    file = require_input_file(path, "--metrics", ConfigError)
    try:
        text = file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--metrics '{path}': cannot read it: {exc}") from None
    return read_json_object(text, f"--metrics '{path}'")


def check_outputs(out: Path, paths: list[Path], replace: bool) -> None:
    """ValueError unless the files to write can be written: the folder is one (or does not exist
    yet), the checksum list and each output is a regular file if present, and an existing output
    is replaced only with --replace (a NAME.md or NAME.pt of someone else's is never lost)."""
    from ase_humanoid.utils.shipped_models import CHECKSUM_FILE

    if out.exists() and not out.is_dir():
        raise ValueError(f"--out '{out}' is not a folder")
    for path in [out / CHECKSUM_FILE, *paths]:
        if path.exists() and not path.is_file():
            raise ValueError(f"'{path}' exists and is not a file; move it away first")
    existing = [f"'{path}'" for path in paths if path.exists()]
    if existing and not replace:
        verb = "exists" if len(existing) == 1 else "exist"
        raise ValueError(f"{' and '.join(existing)} {verb}; pass --replace to replace the model of that name")


def write_all_or_nothing(writes: list[tuple[Path, Callable[[], object]]]) -> None:
    """Run each `(path, write)` in order; when one fails, put back every file written before it
    (its old bytes, or no file) and re-raise: a model is shipped whole or not at all."""
    from ase_humanoid.utils.atomic_file import write_atomic

    old = {path: path.read_bytes() if path.is_file() else None for path, _ in writes}
    started = []
    try:
        for path, write in writes:
            started.append(path)
            write()
    except BaseException:
        for path in reversed(started):
            with contextlib.suppress(OSError):  # the error that stopped the writes is the one to report
                if old[path] is None:
                    path.unlink(missing_ok=True)
                else:
                    write_atomic(path, lambda f, data=old[path]: f.write(data))
        raise


def ship(args: argparse.Namespace) -> int:
    from ase_humanoid.utils import atomic_file, shipped_models
    from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

    # Everything is read and checked first; then the card, the weights and the checksum list are
    # written, card first, all or none of them.
    check_name(args.name)
    out = Path(args.out) if args.out else shipped_models.PRETRAINED_DIR
    target, card_path = out / f"{args.name}.pt", out / f"{args.name}.md"
    check_outputs(out, [target, card_path], args.replace)
    check_hours(args.hours)
    metrics = read_metrics(args.metrics)
    check = read_json_object(args.check, "--check")
    state = shipped_models.weights_only_state(load_checkpoint(args.checkpoint),
                                              provenance={"command": args.command, "hours": args.hours,
                                                          "machine": args.machine})
    card = model_card(args.name, state, args, metrics, check)
    sums = shipped_models.read_checksums(out) if out.is_dir() else {}
    created = [folder for folder in (out, *out.parents) if not folder.exists()]
    out.mkdir(parents=True, exist_ok=True)
    try:
            write_all_or_nothing([
            (card_path, lambda: atomic_file.write_text_atomic(card_path, card)),
            (target, lambda: save_checkpoint(state, target)),
            (out / shipped_models.CHECKSUM_FILE,
             lambda: shipped_models.write_checksums(out, {**sums, target.name: shipped_models.sha256_of(target)})),
        ])
    except BaseException:
        for folder in created:  # innermost first: the folders this call made, if still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    print(f"shipped {target} ({target.stat().st_size / 1e6:.1f} MB), card {card_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
