"""Simulator backends: one interface (`SimBackend`), native MuJoCo on CPU threads, MuJoCo Warp on GPU."""

from ase_humanoid.sim.base import PHYSICS_DT, PropSpec, PropState, SimBackend, SimState
from ase_humanoid.sim.factory import BACKEND_NAMES, make_backend

__all__ = [
    "BACKEND_NAMES",
    "PHYSICS_DT",
    "PropSpec",
    "PropState",
    "SimBackend",
    "SimState",
    "make_backend",
]
