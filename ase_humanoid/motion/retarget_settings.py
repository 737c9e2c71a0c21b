"""Retargeting jobs as files: presets, config files, command-line overrides and source files
(what tools/retarget_motion.py reads)."""

from __future__ import annotations

from pathlib import Path

import torch

from ase_humanoid.errors import ConfigError
from ase_humanoid.paths import CFG_DIR, PROJECT_ROOT
from ase_humanoid.utils.checks import input_file_problem


PRESET_DIR = CFG_DIR / "retarget" / "presets"
SOURCE_FORMATS = {".fbx": "fbx", ".bvh": "bvh", ".amc": "amc", ".npy": "npy"}
TARGETS = ("amp_humanoid", "sword_shield")


# Keys a config may set, with what they mean (documented in cfg/retarget/example_*.yaml).
CONFIG_KEYS = (
    "preset", "source", "asf", "tpose", "tpose_up", "target", "target_tpose", "joint_map", "joint_maps",
    "root_rotation", "scale", "root_height_offset", "ground", "source_up", "project_hinges",
    "clamp_limits", "fps", "start", "end", "out",
)


# Output frame rates accepted (mocap is captured at 30-480 fps), and the most frames x joints a
# resampled clip may have: retargeting holds about 800 bytes per frame and joint (float64 clip,
# velocities, global transforms), so 4M is about 3 GB; --fps 1e7 would have needed terabytes.
FPS_RANGE = (1.0, 1000.0)
MAX_RESAMPLED_FRAME_JOINTS = 4_000_000


# Keys whose value may be a mapping {source format: value}.
PER_FORMAT_KEYS = ("scale", "tpose", "tpose_up", "source_up", "root_height_offset", "ground")


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def _read_yaml(path: Path, what: str) -> dict:
    import yaml

    problem = input_file_problem(path)
    if problem is not None:  # a folder or a FIFO is not "not found": say what it is
        raise ConfigError(f"{what} not found: {path}" if problem == "does not exist" else f"{what} '{path}' {problem}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: malformed YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of retarget settings")
    unknown = sorted(set(data) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; valid keys: {', '.join(CONFIG_KEYS)}")
    return data


def load_retarget_settings(config_path=None, preset: str | None = None, overrides: dict | None = None) -> dict:
    """Merge preset < config file < overrides (None values in overrides are ignored).

    Relative paths in a config file (source, asf, tpose, target_tpose, out) are taken relative
    to the project root when they exist there, else to the config file's folder.
    """
    settings: dict = {}
    file_cfg = {}
    if config_path is not None:
        config_path = Path(config_path)
        file_cfg = _read_yaml(config_path, "retarget config")
        for key in ("source", "asf", "tpose", "target_tpose", "out"):
            value = file_cfg.get(key)
            if isinstance(value, str) and value.endswith((".npy", ".fbx", ".bvh", ".amc", ".asf")):
                file_cfg[key] = str(resolve_settings_path(value, config_path.parent))
    preset = (overrides or {}).get("preset") or preset or file_cfg.get("preset")
    if preset:
        path = PRESET_DIR / f"{preset}.yaml"
        if not path.is_file():
            raise ConfigError(f"unknown retarget preset '{preset}'; presets: {', '.join(preset_names())}")
        settings.update(_read_yaml(path, "retarget preset"))
    settings.update(file_cfg)
    settings.update({k: v for k, v in (overrides or {}).items() if v is not None})
    settings.pop("preset", None)
    return settings


def resolve_settings_path(value: str, base: Path) -> Path:
    p = Path(value)
    if p.is_absolute():
        return p
    return PROJECT_ROOT / p if (PROJECT_ROOT / p).exists() or not (base / p).exists() else base / p


def source_format(path) -> str:
    fmt = SOURCE_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise ConfigError(f"retarget key 'source': {path} has an unsupported extension; "
                          f"supported: {', '.join(SOURCE_FORMATS)}")
    return fmt


def load_source(path, asf=None):
    """A source MotionClip in the file's own units and axes (any format `load_motion` reads)."""
    from ase_humanoid.motion.io import load_motion

    source_format(path)
    options = {"asf": asf} if asf and source_format(path) == "amc" else {}
    return load_motion(path, dtype=torch.float64, **options)


def per_format_value(settings: dict, key: str, fmt: str, default=None):
    value = settings.get(key, default)
    if isinstance(value, dict) and key in PER_FORMAT_KEYS:
        if fmt not in value:
            raise ConfigError(f"retarget key '{key}': no value for source format '{fmt}' in {value}")
        value = value[fmt]
    return value


def output_fps(value) -> float | None:
    """The `fps` setting as a number in FPS_RANGE; None when absent (keep the source's rate)."""
    if value is None:
        return None
    try:
        fps = float(value) if not isinstance(value, bool) else float("nan")
    except (TypeError, ValueError):
        fps = float("nan")
    if not FPS_RANGE[0] <= fps <= FPS_RANGE[1]:  # NaN fails too
        raise ConfigError(f"retarget key 'fps' must be a frame rate from {FPS_RANGE[0]:g} to {FPS_RANGE[1]:g}, "
                          f"got {value!r}")
    return fps


def check_resampled_size(clip, fps: float) -> None:
    """ConfigError, before anything is allocated, when `clip` resampled to `fps` would pass
    MAX_RESAMPLED_FRAME_JOINTS."""
    frames = clip.resampled_num_frames(fps)
    if frames * clip.num_joints > MAX_RESAMPLED_FRAME_JOINTS:
        raise ConfigError(f"retarget key 'fps': {fps:g} fps makes the source ({clip.duration:.1f} s, "
                          f"{clip.num_joints} joints) {frames:,} frames, {frames * clip.num_joints:,} frames x "
                          f"joints; at most {MAX_RESAMPLED_FRAME_JOINTS:,}: give a lower fps")
