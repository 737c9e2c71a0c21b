"""Export a trained policy for deployment (game engines, robots): ONNX, torch.export or TorchScript.

    python tools/export_policy.py runs/amp1/latest.pt --out policy.onnx     # AMP: obs -> actions
    python tools/export_policy.py runs/ase1 --out llc.onnx                  # ASE: obs, latent -> actions
    python tools/export_policy.py runs/HumanoidStrike_x --out strike.onnx   # HRL: strike_high_level.onnx
                                                                            #  + strike_low_level.onnx
    python tools/export_policy.py runs/amp1/latest.pt --out policy.pt2      # torch.export (ExportedProgram)
    python tools/export_policy.py runs/amp1/latest.pt --out policy.pt       # TorchScript (deprecated by torch)

The observation normaliser is folded in: the model takes the env's raw observation. Outputs:
`actions` (the deterministic action) and `pd_targets` (PD position targets in radians, from the
robot's action mapping). A `.json` next to the output names every file's inputs, outputs and
sizes, the control rate and, for HRL, llc_steps. The written files are loaded back and checked
against the PyTorch modules on 100 random observations (ONNX with onnxruntime where installed;
`--no-check` skips it); a difference above 1e-4 (EXPORT_TOLERANCE) is an error, exit status 1. ONNX needs `pip install 'ase_humanoid[export]'` (onnx, onnxscript,
onnxruntime).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError  # noqa: E402


# Largest |exported - torch| accepted: float32 kernels of ONNX Runtime and torch differ by 1e-6
# or so on these networks; a wrong export (or a checkpoint changed while it was read) by 1e-1 and more.
EXPORT_TOLERANCE = 1e-4


def max_export_error(path: Path, model, samples: int = 100) -> float:
    """Largest absolute difference between the written file (.onnx or .pt2) and the module on
    `samples` inputs."""
    import torch

    from ase_humanoid.policy_export import example_inputs

    inputs = example_inputs(model, samples)
    with torch.no_grad():
        expected = model.module(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    if path.suffix == ".onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        got = session.run(None, {name: x.numpy() for name, x in zip(model.inputs, inputs)})
    else:
        with torch.no_grad():
            got = torch.export.load(str(path)).module()(*inputs)
        got = [y.numpy() for y in (got if isinstance(got, tuple) else (got,))]
    return max(float(abs(g - e.numpy()).max()) for g, e in zip(got, expected))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a run checkpoint (latest.pt, epoch_N.pt) or a run folder")
    parser.add_argument("--out", required=True,
                        help="output file: .onnx (ONNX), .pt2 (torch.export) or .pt (TorchScript)")
    parser.add_argument("--robot", default=None,
                        help="robot for the pd_targets output (default: the run config's robot)")
    parser.add_argument("--no-check", action="store_true", help="skip loading the written files back to compare them")
    args = parser.parse_args(argv)
    from ase_humanoid.policy_export import export_checkpoint, policy_models, read_policy_state, robot_name_of

    try:
        paths = export_checkpoint(args.checkpoint, args.out, robot=args.robot)
        print(json.dumps({"wrote": [str(p) for p in paths], "description": str(Path(args.out).with_suffix(".json"))}))
        suffix = Path(args.out).suffix
        if suffix == ".pt":
            print("note: torch deprecates TorchScript; --out with .pt2 writes its successor (torch.export)",
                  file=sys.stderr)
        if suffix in (".onnx", ".pt2") and not args.no_check:
            if suffix == ".onnx":
                try:
                    import onnxruntime  # noqa: F401
                except ImportError:
                    print("onnxruntime not installed: exported files not checked", file=sys.stderr)
                    return 0
            agent_state, run_config = read_policy_state(args.checkpoint)
            models = policy_models(agent_state, args.robot or robot_name_of(run_config))
            worst = 0.0
            for model, path in zip(models, paths):
                error = max_export_error(path, model)
                worst = max(worst, error)
                print(f"{path.name}: max |exported - torch| = {error:.2e} on 100 inputs")
            if not worst <= EXPORT_TOLERANCE:  # NaN fails too
                print(f"error: the exported files differ from the checkpoint's networks by {worst:.2e} "
                      f"(tolerance {EXPORT_TOLERANCE:g}); was {args.checkpoint} changed while it was read?",
                      file=sys.stderr)
                return 1
    except AseHumanoidError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
