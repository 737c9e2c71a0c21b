"""Build a simulator backend by name.

Kept apart from `sim/base.py` so that the interface module never imports its implementations:
each backend imports `base`, and only this module knows all of them.
"""

from __future__ import annotations

import os
import warnings

from ase_humanoid.errors import ConfigError
from ase_humanoid.sim.base import SimBackend

BACKEND_NAMES = ("mujoco", "mujoco_warp", "isaacgym")


def make_backend(
    name: str,
    robot,
    num_envs: int,
    props=(),
    device="cpu",
    num_threads: int | None = None,
    terrain=None,
) -> SimBackend:
    """Build a backend by name: `mujoco` (native MuJoCo on CPU threads), `mujoco_warp` (GPU) or
    `isaacgym` (only where Isaac Gym Preview is installed).

    `num_threads` (CPU backend only) defaults to `os.cpu_count()`. `terrain`: an
    `ase_humanoid.terrain.Terrain` whose heightfield replaces the floor plane (MuJoCo backends),
    None for the plane.
    """
    if name == "mujoco":
        from ase_humanoid.sim.mujoco_cpu import MujocoCpuBackend

        return MujocoCpuBackend(
            robot, num_envs, props=props, device=device, num_threads=num_threads or os.cpu_count(),
            terrain=terrain,
        )
    if name == "mujoco_warp":
        if terrain is not None:
            warnings.warn("MuJoCo Warp on terrain: its box-heightfield contacts differ from native MuJoCo's "
                          "(mujoco-warp 4.0 on warp's CPU device: a dropped box jumped or sank; the humanoid's box "
                          "feet stood 5 mm lower within 0.2 s); spheres and capsules agree. Check results with "
                          "sim=mujoco.", stacklevel=2)
        try:
            from ase_humanoid.sim.mujoco_warp import MujocoWarpBackend
        except ImportError as exc:
            raise ConfigError(
                f"sim backend 'mujoco_warp' is not available ({exc}); install the 'gpu' extra "
                "(mujoco-warp, warp-lang) or use sim=mujoco"
            ) from exc
        return MujocoWarpBackend(robot, num_envs, props=props, device=device, terrain=terrain)
    if name == "isaacgym":
        if terrain is not None:
            raise ConfigError("sim backend 'isaacgym' has no terrain support here; use sim=mujoco or "
                              "sim=mujoco_warp, or terrain=flat")
        try:
            from ase_humanoid.sim.isaacgym import IsaacGymBackend
        except ImportError as exc:
            raise ConfigError(f"sim backend 'isaacgym' is not available: {exc}") from exc
        return IsaacGymBackend(robot, num_envs, props=props, device=device)
    raise ConfigError(f"unknown sim backend {name!r}; valid choices: {list(BACKEND_NAMES)}")
