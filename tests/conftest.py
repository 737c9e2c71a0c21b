"""Test-wide settings: one torch thread (MuJoCo's own threads do the parallel work, and two
torch threads on a 2-core machine fight them), headless rendering, warp kernel cache."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import torch  # noqa: E402

torch.set_num_threads(1)
