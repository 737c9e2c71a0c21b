"""`HumanoidAMP`: the humanoid imitating a motion dataset with an AMP discriminator.

The environment itself is the base humanoid: reference-state (Hybrid / Random) resets, early
termination on falls, the AMP observation history in `info["amp_obs"]` and demo observations from
`fetch_amp_obs_demo`. Its task reward is 0: the AMP agent's style reward is the whole signal.
"""

from __future__ import annotations

from ase_humanoid.envs.config import HumanoidEnvConfig
from ase_humanoid.envs.humanoid import Humanoid


class HumanoidAMP(Humanoid):
    """AMP pre-training environment (see the module docstring and `Humanoid`)."""

    config_class = HumanoidEnvConfig
