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
import reprlib
from dataclasses import dataclass
from pathlib import Path

import yaml

from ase_humanoid.errors import MotionFileError
from ase_humanoid.utils.checks import input_file_problem

DATASET_SUFFIXES = (".yaml", ".yml")
# Weights are relative; above this their sum could overflow to inf (and the probabilities to NaN).
MAX_WEIGHT = 1e12
# A dataset YAML lists clips: a few KB. The cap bounds parse time and memory of a hostile file.
MAX_DATASET_BYTES = 8 * 1024 * 1024
# Collections nested deeper than this are refused before PyYAML builds them: its recursive
# composer takes seconds to reach its RecursionError (minutes under a memory tracer). A dataset
# nests 3 deep (mapping, list, entry).
MAX_NESTING = 64

# Values quoted in error messages stay short: a YAML alias bomb ("billion laughs") is small in
# memory (shared references) but its full repr would be gigabytes.
_short = reprlib.Repr()
_short.maxlevel, _short.maxlist, _short.maxdict, _short.maxstring, _short.maxother = 2, 4, 4, 80, 80


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
    problem = input_file_problem(path)
    if problem is not None:  # a folder or a FIFO is not "not found": say what it is
        raise MotionFileError(f"motion file not found: {path}" if problem == "does not exist"
                              else f"motion file '{path}' {problem}")
    if not is_dataset_file(path):
        return [MotionEntry(path=path, weight=1.0)]
    entries = _parse_dataset(path)
    if sum(e.weight for e in entries) <= 0.0:
        raise MotionFileError(f"{path}: the weights of 'motions' are all zero; at least one must be positive")
    return entries


def _read_yaml_text(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_DATASET_BYTES:
        raise MotionFileError(f"{path}: {size} bytes is too large for a dataset YAML (at most "
                              f"{MAX_DATASET_BYTES}); is it a motion clip with a .yaml name?")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MotionFileError(f"{path}: not a text (UTF-8) dataset YAML: byte {exc.start} is "
                              f"{exc.object[exc.start:exc.start + 1]!r}") from None


def _parse_dataset(path: Path) -> list[MotionEntry]:
    text = _read_yaml_text(path)
    try:
        _check_nesting(path, text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MotionFileError(f"{path}: malformed YAML: {_short.repr(str(exc))[:500]}") from None
    if not isinstance(data, dict) or "motions" not in data:
        raise MotionFileError(f"{path}: expected a mapping with the key 'motions' (a list of {{file, weight}})")
    motions = data["motions"]
    if not isinstance(motions, list) or not motions:
        raise MotionFileError(f"{path}: 'motions' must be a non-empty list of {{file, weight}} entries")
    return [_parse_entry(path, i, item) for i, item in enumerate(motions)]


def _check_nesting(path: Path, text: str) -> None:
    """MotionFileError if collections nest deeper than MAX_NESTING (PyYAML's event parser is a
    state machine: walking its events costs no recursion); yaml.YAMLError if malformed."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise MotionFileError(f"{path}: malformed YAML: collections nested more than {MAX_NESTING} deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _parse_entry(path: Path, index: int, item) -> MotionEntry:
    key = f"motions[{index}]"
    if not isinstance(item, dict):
        raise MotionFileError(f"{path}: {key} must be a mapping with 'file' (and optional 'weight'), "
                              f"got {_short.repr(item)}")
    unknown = sorted(map(str, set(item) - {"file", "weight"}))
    if unknown:
        raise MotionFileError(f"{path}: {key} has unknown key(s) {_short.repr(unknown)}; valid keys: file, weight")
    if "file" not in item or not isinstance(item["file"], str) or not item["file"]:
        raise MotionFileError(f"{path}: {key}.file is missing or not a string")
    clip_path = Path(item["file"])
    if not clip_path.is_absolute():
        clip_path = path.parent / clip_path
    problem = input_file_problem(clip_path)
    if problem is not None:
        raise MotionFileError(f"{path}: {key}.file: clip not found: {clip_path}" if problem == "does not exist"
                              else f"{path}: {key}.file: clip '{clip_path}' {problem}")
    weight = _parse_weight(item.get("weight", 1.0))
    if weight is None:
        raise MotionFileError(f"{path}: {key}.weight must be a number, got {_short.repr(item['weight'])}")
    if not math.isfinite(weight) or not 0.0 <= weight <= MAX_WEIGHT:
        raise MotionFileError(f"{path}: {key}.weight must be a finite number >= 0 and <= {MAX_WEIGHT:g} "
                              f"(weights are relative), got {weight}")
    return MotionEntry(path=clip_path, weight=weight)


def _parse_weight(value) -> float | None:
    """A number, or a string that spells one: YAML 1.1 (PyYAML) reads `1e-3` (no dot) as a string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if abs(value) < 1e300 else math.inf  # float() of a huge int overflows
    if isinstance(value, float):
        return value
    if isinstance(value, str) and len(value) < 64:
        try:
            return float(value)
        except ValueError:
            return None
    return None
