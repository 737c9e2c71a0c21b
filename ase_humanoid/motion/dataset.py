"""Motion datasets: which clips a MotionLib loads and how often each is sampled.

A motion file is either one clip (any format `load_motion` reads, e.g. a poselib `.npy`) or a
dataset YAML::

    motions:
      - file: amp_humanoid/amp_humanoid_walk.npy   # relative to the YAML's folder
        weight: 1.0                                  # optional, default 1; sampling weight
      - file: amp_humanoid/amp_humanoid_run.npy

Weights are relative: MotionLib normalises them to probabilities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from ase_humanoid.errors import MotionFileError

DATASET_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class MotionEntry:
    """One clip of a dataset: its resolved path and its (unnormalised) sampling weight."""

    path: Path
    weight: float


def is_dataset_file(path) -> bool:
    return Path(path).suffix.lower() in DATASET_SUFFIXES


def read_motion_entries(motion_file) -> list[MotionEntry]:
    """The clips named by `motion_file` (a single clip or a dataset YAML), in file order.

    Raises MotionFileError naming the file (and the key) for a missing file, malformed YAML, a
    missing or mistyped key, a negative or non-finite weight, a clip file that does not exist, or
    weights that are all zero.
    """
    path = Path(motion_file)
    if not path.is_file():
        raise MotionFileError(f"motion file not found: {path}")
    if not is_dataset_file(path):
        return [MotionEntry(path=path, weight=1.0)]
    entries = _parse_dataset(path)
    if sum(e.weight for e in entries) <= 0.0:
        raise MotionFileError(f"{path}: the weights of 'motions' are all zero; at least one must be positive")
    return entries


def _parse_dataset(path: Path) -> list[MotionEntry]:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise MotionFileError(f"{path}: malformed YAML: {exc}") from exc
    if not isinstance(data, dict) or "motions" not in data:
        raise MotionFileError(f"{path}: expected a mapping with the key 'motions' (a list of {{file, weight}})")
    motions = data["motions"]
    if not isinstance(motions, list) or not motions:
        raise MotionFileError(f"{path}: 'motions' must be a non-empty list of {{file, weight}} entries")
    return [_parse_entry(path, i, item) for i, item in enumerate(motions)]


def _parse_entry(path: Path, index: int, item) -> MotionEntry:
    key = f"motions[{index}]"
    if not isinstance(item, dict):
        raise MotionFileError(f"{path}: {key} must be a mapping with 'file' (and optional 'weight'), got {item!r}")
    unknown = sorted(set(item) - {"file", "weight"})
    if unknown:
        raise MotionFileError(f"{path}: {key} has unknown key(s) {unknown}; valid keys: file, weight")
    if "file" not in item or not isinstance(item["file"], str) or not item["file"]:
        raise MotionFileError(f"{path}: {key}.file is missing or not a string")
    clip_path = Path(item["file"])
    if not clip_path.is_absolute():
        clip_path = path.parent / clip_path
    if not clip_path.is_file():
        raise MotionFileError(f"{path}: {key}.file: clip not found: {clip_path}")
    weight = item.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise MotionFileError(f"{path}: {key}.weight must be a number, got {weight!r}")
    weight = float(weight)
    if not math.isfinite(weight) or weight < 0.0:
        raise MotionFileError(f"{path}: {key}.weight must be a finite number >= 0, got {weight}")
    return MotionEntry(path=clip_path, weight=weight)
