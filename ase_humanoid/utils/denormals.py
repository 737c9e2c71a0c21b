"""Flush denormal floats to zero on every CPU thread: a trained network's update runs 4-6x faster.

Why: a trained network's numbers (in its update, and in the forward passes of a trained ASE
controller under a task policy) include float32 values below 1.2e-38 (denormals), and x86 CPUs
compute with those through a slow microcode path. Measured
on a 2-core Intel Xeon (Sapphire Rapids), HumanoidASE from the shipped controller's weights, CPU
profile, 128 envs: the update took 3.4-3.6 s per epoch with denormals and 0.62-0.63 s with them
flushed (1.1k -> 4.2k samples/s); a freshly initialised network shows no difference, which is why
short benchmarks never saw it. Flushing changes only values below 1.2e-38 (float32) and
2.2e-308 (float64) to 0.

The flag lives in each thread's floating-point control register (MXCSR) and a new thread copies
its creator's, so it must be set before torch's OpenMP pool (and MuJoCo's threads) start: the
package sets it when it is imported (`ase_humanoid/__init__.py`). `ASE_HUMANOID_KEEP_DENORMALS=1`
in the environment leaves denormals alone (to measure the difference).
"""

from __future__ import annotations

import os

import torch

KEEP_ENV_VAR = "ASE_HUMANOID_KEEP_DENORMALS"
# Elements of the probe: enough that torch splits an elementwise product over its threads
# (its grain is 32 768 elements per thread).
_PROBE_ELEMENTS = 1 << 18


def flush_denormals() -> bool:
    """Set flush-to-zero on the calling thread (and threads it creates from now on), unless
    `ASE_HUMANOID_KEEP_DENORMALS=1`. Returns whether denormals are now flushed here."""
    if os.environ.get(KEEP_ENV_VAR, "0") not in ("", "0"):
        return False
    return bool(torch.set_flush_denormal(True))


def denormals_flushed_on_all_threads() -> bool:
    """Whether an elementwise product run on all of torch's intra-op threads turns a denormal
    input into 0 everywhere (False when any thread, e.g. one of an OpenMP pool started before the
    flag was set, still computes with denormals)."""
    return not bool((denormal_tensor(_PROBE_ELEMENTS) * 1.5).any())


def denormal_tensor(n: int) -> torch.Tensor:
    """`n` float32 denormals (about 5.9e-39), made from their bits: a float such as 1e-39 given to
    torch would be converted on a thread that may already flush it to 0."""
    return torch.full((n,), 0x00400000, dtype=torch.int32).view(torch.float32)
