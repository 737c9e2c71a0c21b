"""Test-wide settings: one torch thread (MuJoCo's own threads do the parallel work, and two
torch threads on a 2-core machine fight them), headless rendering, warp kernel cache."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture
def single_torch_thread():
    """Tiny networks: intra-op threads only add contention on a shared 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
