"""ase_humanoid: humanoid task suite with AMP and ASE agents on MuJoCo."""

__version__ = "0.1.0"

from ase_humanoid.paths import ASSETS_DIR, CFG_DIR, MOTIONS_DIR, PACKAGE_ROOT, PROJECT_ROOT  # noqa: E402,F401

# Every task is a gymnasium vector env: gymnasium.make_vec("ase_humanoid/HumanoidAMP-v0", num_envs=N).
from ase_humanoid.envs import register_gymnasium_envs  # noqa: E402

register_gymnasium_envs()
