"""`load_motion(path)`: read any supported motion file into a MotionClip, chosen by suffix."""

from __future__ import annotations

from pathlib import Path

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.asf_amc import load_asf_amc
from ase_humanoid.motion.bvh import load_bvh
from ase_humanoid.motion.clip import MotionClip
from ase_humanoid.motion.fbx import load_fbx
from ase_humanoid.motion.poselib_npy import load_poselib

SUFFIXES = (".npy", ".bvh", ".fbx", ".amc")


def load_motion(path, **options) -> MotionClip:
    """Dispatch on the suffix: .npy (poselib), .bvh, .fbx, .amc (with its .asf: `asf=` or found
    next to it as <subject>.asf for CMU's <subject>_<take>.amc, or <stem>.asf). Options go to
    the reader (e.g. scale=, dtype=)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return load_poselib(path, **options)
    if suffix == ".bvh":
        return load_bvh(path, **options)
    if suffix == ".fbx":
        return load_fbx(path, **options)
    if suffix == ".amc":
        asf = options.pop("asf", None) or find_asf(path)
        return load_asf_amc(path, asf, **options)
    raise MotionFileError(f"{path}: unsupported motion file type {suffix or '(none)'!r}; supported: {', '.join(SUFFIXES)}")


def find_asf(amc_path: Path) -> Path:
    """The skeleton file of an AMC: <stem>.asf, else <subject>.asf for <subject>_<take>.amc."""
    candidates = [amc_path.with_suffix(".asf")]
    if "_" in amc_path.stem:
        candidates.append(amc_path.with_name(amc_path.stem.split("_")[0] + ".asf"))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise MotionFileError(f"{amc_path}: no skeleton file found (looked for {', '.join(c.name for c in candidates)}); pass asf=")
