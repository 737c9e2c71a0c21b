"""Joint maps: source joint names -> target body names, checked, mirrored and chosen per source."""

from __future__ import annotations

import torch

from ase_humanoid.errors import ConfigError


def resolve_joint_map(joint_map: dict[str, str], source_names, target_names, context: str = "joint_map"):
    """Indices (source [M], target [M]) of a name mapping; ConfigError listing valid names.

    Each target body may be mapped once; the target root must be mapped (it carries the root).
    """
    source_names, target_names = list(source_names), list(target_names)
    bad_src = [s for s in joint_map if s not in source_names]
    if bad_src:
        raise ConfigError(f"{context}: source joint(s) {bad_src} not in the source skeleton; "
                          f"valid source joints: {', '.join(source_names)}")
    bad_tgt = [t for t in joint_map.values() if t not in target_names]
    if bad_tgt:
        raise ConfigError(f"{context}: target body(s) {bad_tgt} not in the target humanoid; "
                          f"valid target bodies: {', '.join(target_names)}")
    targets = list(joint_map.values())
    dup = sorted({t for t in targets if targets.count(t) > 1})
    if dup:
        raise ConfigError(f"{context}: target body(s) {dup} mapped more than once")
    if target_names[0] not in targets:
        raise ConfigError(f"{context}: the target root '{target_names[0]}' must be mapped (it carries the root motion)")
    src_idx = torch.tensor([source_names.index(s) for s in joint_map], dtype=torch.long)
    tgt_idx = torch.tensor([target_names.index(t) for t in joint_map.values()], dtype=torch.long)
    return src_idx, tgt_idx


def mirror_joint_map(joint_map: dict[str, str]) -> dict[str, str]:
    """Add the right side of a joint map given for the left side: an entry whose target starts
    with 'left_' gets a twin with 'Left' -> 'Right' (or a leading 'l' -> 'r') in the source name and
    'left_' -> 'right_' in the target; entries already present are kept."""
    full = dict(joint_map)
    for src, tgt in joint_map.items():
        if not tgt.startswith("left_"):
            continue
        if "Left" in src:
            twin = src.replace("Left", "Right")
        elif src.startswith("l"):
            twin = "r" + src[1:]
        else:
            continue
        full.setdefault(twin, "right_" + tgt[len("left_"):])
    return full


def choose_joint_map(settings: dict, source_names, where: str = "retarget config") -> dict[str, str]:
    """`joint_map` if given, else the first of `joint_maps` whose source joints all exist."""
    source_names = list(source_names)
    if settings.get("joint_map"):
        jm = settings["joint_map"]
        if not isinstance(jm, dict):
            raise ConfigError(f"{where}: 'joint_map' must map source joint names to target body names")
        return mirror_joint_map({str(k): str(v) for k, v in jm.items()})
    variants = settings.get("joint_maps") or {}
    if not variants:
        raise ConfigError(f"{where}: no 'joint_map' (and no preset with 'joint_maps'); "
                          f"source joints: {', '.join(source_names)}")
    for name, jm in variants.items():
        full = mirror_joint_map({str(k): str(v) for k, v in jm.items()})
        if all(s in source_names for s in full):
            return full
    raise ConfigError(f"{where}: none of the joint maps {list(variants)} fits the source skeleton; "
                      f"valid source joints: {', '.join(source_names)}")
