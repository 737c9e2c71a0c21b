"""ase_humanoid: humanoid task suite with AMP and ASE agents on MuJoCo."""

__version__ = "0.1.0"

import os

# Threads of torch's OpenMP pool sleep at once when they wait, instead of spinning first. On a
# busy machine (a browser, a test run, a second training) a spinning thread burns the core its
# descheduled sibling needs: measured here, an ASE training beside another training fell from
# 1 500 to 166 samples/s with spinning and kept 573 (its fair share) with sleeping threads.
# It must be set before torch loads its OpenMP runtime; `OMP_WAIT_POLICY=ACTIVE` in the
# environment restores spinning.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Denormal floats flushed to zero before torch's OpenMP pool or MuJoCo's threads start (threads
# inherit the flag): a trained network's update runs 4-6x faster (utils/denormals.py).
from ase_humanoid.utils.denormals import flush_denormals  # noqa: E402

flush_denormals()

from ase_humanoid.paths import ASSETS_DIR, CFG_DIR, MOTIONS_DIR, PACKAGE_ROOT, PROJECT_ROOT  # noqa: E402,F401

# Every task is a gymnasium vector env: gymnasium.make_vec("ase_humanoid/HumanoidAMP-v0", num_envs=N).
from ase_humanoid.envs import register_gymnasium_envs  # noqa: E402

register_gymnasium_envs()
