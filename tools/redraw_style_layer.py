"""Copy an ASE checkpoint with its actor's style output layer drawn afresh, so that the latent
acts on the actor again when training goes on from it.

    python tools/redraw_style_layer.py runs/stage1/epoch_001150.pt runs/stage1_redrawn.pt
    python train.py task=HumanoidASE checkpoint=runs/stage1_redrawn.pt resume=false ...

Why: a controller trained with `train.params.style_init_scale=0` and no encoder reward (stage 1
of examples/ase_walk_controller.sh) ends with that layer near zero (mean |w| about 0.015), so
the latent hardly reaches the actor; ASE training started from it begins with latents that all
act alike, and its encoder has nothing to tell apart. Drawing the layer's weights from
U(-scale, scale) (the release's initialisation at scale 1) and keeping every other weight
gives a walking policy whose latents differ from the first step (docs/research-notes.md, "Why the
latents stay alike"). The bias is kept. The source file is never changed; the copy is written
atomically and holds the same optimiser and buffers, which `resume=false` does not load.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError, CheckpointError  # noqa: E402

STYLE_OUT_WEIGHT = "actor.style_out.weight"


def redraw_style_layer(checkpoint: dict, scale: float, seed: int):
    """Replace, in place, the ASE actor's style output weights `[style_dim, style_units[-1]]` of
    `checkpoint` (a run checkpoint's plain data) by a U(-scale, scale) draw from `seed`; returns
    the weights it replaced."""
    import torch

    model = (checkpoint.get("agent") or {}).get("model")
    if not isinstance(model, dict) or STYLE_OUT_WEIGHT not in model:
        algo = (checkpoint.get("agent") or {}).get("algo", "no agent")
        raise CheckpointError(f"not an ASE controller checkpoint ({algo}): it has no '{STYLE_OUT_WEIGHT}'")
    old = model[STYLE_OUT_WEIGHT]
    generator = torch.Generator().manual_seed(int(seed))
    drawn = (2.0 * torch.rand(old.shape, generator=generator) - 1.0) * float(scale)
    model[STYLE_OUT_WEIGHT] = drawn.to(old.dtype)
    return old


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="an ASE run checkpoint (latest.pt, epoch_N.pt)")
    parser.add_argument("out", help="the new checkpoint file (must not exist)")
    parser.add_argument("--scale", type=float, default=1.0, help="weights ~ U(-scale, scale) (release: 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

        src, out = Path(args.checkpoint), Path(args.out)
        if not args.scale > 0:
            raise CheckpointError(f"--scale must be > 0, got {args.scale}")
        if out.exists():
            raise CheckpointError(f"'{out}' exists; give a new file (the source is never overwritten)")
        state = load_checkpoint(src)
        try:
            replaced = redraw_style_layer(state, args.scale, args.seed)
        except CheckpointError as err:
            raise CheckpointError(f"'{src}': {err}") from None
        save_checkpoint(state, out)
        before = float(replaced.abs().mean())
        after = float(state["agent"]["model"][STYLE_OUT_WEIGHT].abs().mean())
        print(f"{out}: style output layer mean |w| {before:.4f} -> {after:.4f} (U(-{args.scale:g}, {args.scale:g}), "
              f"seed {args.seed}); start from it with checkpoint={out} resume=false")
    except AseHumanoidError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
