"""ase_humanoid: humanoid task suite with AMP and ASE agents on MuJoCo."""

from pathlib import Path

__version__ = "0.1.0"

PACKAGE_ROOT = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_ROOT.parent
ASSETS_DIR = PROJECT_ROOT / "assets"
MOTIONS_DIR = PROJECT_ROOT / "motions"
CFG_DIR = PROJECT_ROOT / "cfg"

# Every task is a gymnasium vector env: gymnasium.make_vec("ase_humanoid/HumanoidAMP-v0", num_envs=N).
from ase_humanoid.envs import register_gymnasium_envs  # noqa: E402

register_gymnasium_envs()
