"""Denormal floats are flushed to zero on every torch thread once the package is imported.

A trained network's update ran 4.5x slower with denormals kept (utils/denormals.py); the flag is
per thread and inherited when a thread starts, so these run in fresh interpreters, where the
import comes before torch's OpenMP pool exists, as in train.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

from ase_humanoid import PROJECT_ROOT
from ase_humanoid.utils.denormals import KEEP_ENV_VAR

PROBE = """
import torch
import ase_humanoid
from ase_humanoid.utils.denormals import denormal_tensor, denormals_flushed_on_all_threads
torch.set_num_threads(2)
single = (denormal_tensor(1) * 1.5).item()
print(single, denormals_flushed_on_all_threads())
"""


def run_python(code: str, **extra_env: str) -> list[str]:
    """Run `code` in a fresh interpreter (denormals kept only if `extra_env` says so); its
    printed words."""
    env = {k: v for k, v in os.environ.items() if k != KEEP_ENV_VAR}
    env.update(extra_env)
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=PROJECT_ROOT, check=True,
                          capture_output=True, text=True, timeout=120).stdout.split()


def run_probe(**extra_env: str) -> tuple[float, bool]:
    out = run_python(PROBE, **extra_env)
    return float(out[-2]), out[-1] == "True"


def test_import_flushes_denormals_on_all_threads():
    single, all_threads = run_probe()
    assert single == 0.0  # a float32 denormal is read as 0
    assert all_threads


def test_env_var_keeps_denormals():
    single, all_threads = run_probe(**{KEEP_ENV_VAR: "1"})
    assert single > 0.0
    assert not all_threads


def test_probe_sees_a_pool_started_before_the_flag():
    """The check catches the case the import order guards against: worker threads that started
    before the flag was set keep denormals."""
    code = """
import torch
torch.set_num_threads(2)
torch.full((1 << 20,), 1.0) * 2.0  # starts the OpenMP pool with denormals on
torch.set_flush_denormal(True)      # the calling thread only
from ase_humanoid.utils.denormals import denormals_flushed_on_all_threads
print(denormals_flushed_on_all_threads())
"""
    out = run_python(code, **{KEEP_ENV_VAR: "1"})  # the import must not matter here
    assert out[-1] == "False"
