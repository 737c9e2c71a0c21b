"""Thread settings that keep training fast on a busy machine."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = ("import ase_humanoid, torch, os; "
         "print(os.environ['OMP_WAIT_POLICY'], 'gomp' if 'OpenMP' in torch.__config__.parallel_info() else 'none')")


def _policy_seen_by_a_fresh_process(env_update: dict[str, str | None]) -> str:
    env = dict(os.environ)
    for key, value in env_update.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


def test_openmp_threads_sleep_when_waiting_unless_told_otherwise():
    # Set by the package before torch loads OpenMP (spinning threads starve a descheduled
    # sibling on a shared machine); a user's own choice wins.
    assert _policy_seen_by_a_fresh_process({"OMP_WAIT_POLICY": None}) == "PASSIVE"
    assert _policy_seen_by_a_fresh_process({"OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE"
