"""Simulator backends: one interface (`SimBackend`), native MuJoCo on CPU threads, MuJoCo Warp on GPU."""

from ase_humanoid.sim.base import PHYSICS_DT, PropSpec, PropState, SimBackend, SimState
from ase_humanoid.sim.factory import BACKEND_NAMES, make_backend
from ase_humanoid.sim.mujoco_warnings import route_mujoco_warnings

route_mujoco_warnings()  # no MUJOCO_LOG.TXT in the user's folder (sim/mujoco_warnings.py)

__all__ = [
    "BACKEND_NAMES",
    "PHYSICS_DT",
    "PropSpec",
    "PropState",
    "SimBackend",
    "SimState",
    "make_backend",
]
