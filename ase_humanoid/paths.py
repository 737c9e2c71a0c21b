"""Where the project's files are: the one owner of these paths (`ase_humanoid` re-exports them).

Kept out of `ase_humanoid/__init__.py` so that modules needing a path do not import the package
root, which registers the gymnasium envs and so imports `envs`.
"""

from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_ROOT.parent
ASSETS_DIR = PROJECT_ROOT / "assets"
MOTIONS_DIR = PROJECT_ROOT / "motions"
CFG_DIR = PROJECT_ROOT / "cfg"
