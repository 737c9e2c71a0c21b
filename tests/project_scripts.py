"""The project's command-line scripts (tools/, benchmarks/, examples/) as modules for the tests.
They are run as files, not installed as packages, so plain pytest cannot import them by name:
`load_script("tools/curve_motion.py").main([...])`."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def load_script(relative_path: str) -> ModuleType:
    """A fresh module made from the script at `relative_path` under the project root."""
    path = PROJECT_ROOT / relative_path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
