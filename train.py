"""Train or evaluate a humanoid policy.

    python train.py task=HumanoidASE                      # ASE pre-training (CPU default)
    python train.py task=HumanoidAMP motion_file=motions/amp_humanoid/amp_humanoid_run.npy
    python train.py task=HumanoidASE resume=true run_dir=runs/HumanoidASE_...
    python train.py task=HumanoidASE test=true checkpoint=runs/.../latest.pt video=ase.mp4
    torchrun --nproc_per_node=2 train.py task=HumanoidASE       # one process per GPU / CPU group

Every key of cfg/config.yaml (and task.*, train.*) can be overridden as key=value;
`python train.py --help` lists them.
"""

from __future__ import annotations

import sys

from omegaconf import OmegaConf

from ase_humanoid.errors import AseHumanoidError


def main(argv: list[str]) -> int:
    if any(a in ("-h", "--help") for a in argv):
        from ase_humanoid.config import compose_config, group_choices

        cfg = compose_config([])
        print(__doc__)
        print("tasks:", ", ".join(group_choices("task")), "| train:", ", ".join(group_choices("train")))
        print(OmegaConf.to_yaml(cfg))
        return 0
    from ase_humanoid.app import run

    try:
        run(argv)
    except AseHumanoidError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: training has said where it stopped; no traceback
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
