"""Optional bridges from this project's agents to other RL libraries.

skrl (`pip install ase_humanoid[skrl]`): `SkrlAMP`, `SkrlASE` and `SkrlHRL` are skrl `Agent`
subclasses that skrl's trainers drive on `gymnasium.make_vec("ase_humanoid/<task>-v0")`. They
are thin adapters: the networks, losses, normalisers, rollout storage and update are this
project's `AMPAgent`, `ASEAgent` and `HRLAgent` (`agent.project_agent`). See docs/skrl.md.

Nothing here imports skrl until one of those names is asked for, so the package works without
it; asking for one without skrl installed raises ImportError naming the extra to install.
"""

from __future__ import annotations

import importlib
from typing import Any

SKRL_MISSING = ("the skrl integration needs skrl (>= 2.1), which is not installed: "
                "pip install ase_humanoid[skrl]  (or, in a checkout, pip install -e .[skrl])")

# public name -> module of this package that defines it (imported on first use)
_SKRL_NAMES = {
    "SkrlAMP": "ase_humanoid.integrations.skrl_agents",
    "SkrlASE": "ase_humanoid.integrations.skrl_agents",
    "SkrlHRL": "ase_humanoid.integrations.skrl_agents",
    "SKRL_AMP_DEFAULT_CONFIG": "ase_humanoid.integrations.skrl_agents",
    "SKRL_ASE_DEFAULT_CONFIG": "ase_humanoid.integrations.skrl_agents",
    "SKRL_HRL_DEFAULT_CONFIG": "ase_humanoid.integrations.skrl_agents",
    "ProjectAgentAdapter": "ase_humanoid.integrations.skrl_base",
}


def require_skrl() -> None:
    """ImportError with the install command unless skrl can be imported."""
    try:
        importlib.import_module("skrl")
    except ImportError as err:
        raise ImportError(SKRL_MISSING) from err


def __getattr__(name: str) -> Any:
    if name not in _SKRL_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require_skrl()
    return getattr(importlib.import_module(_SKRL_NAMES[name]), name)


__all__ = ["SKRL_MISSING", "require_skrl", *_SKRL_NAMES]
