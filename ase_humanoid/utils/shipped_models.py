"""Models that ship with the project (`pretrained/`): weights-only files, their checksums and
model cards.

A shipped model is a run checkpoint cut down to what a policy needs: the run config and the
agent's networks and normalisers (no optimiser state, no AMP sample buffers, no env or RNG
state), so it is a few MB and loads like any checkpoint (`torch.load(weights_only=True)`).
`pretrained/SHA256SUMS` lists every file's SHA-256 (the `sha256sum` format); loading a file from
that folder checks it, so a damaged or replaced download is an error, not a silently different
policy. Each model has a card `<name>.md` whose metrics block (a fenced `json` block, read as
data) the tests reproduce.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ase_humanoid.errors import CheckpointError
from ase_humanoid.paths import PROJECT_ROOT

PRETRAINED_DIR = PROJECT_ROOT / "pretrained"
CHECKSUM_FILE = "SHA256SUMS"
WEIGHTS_FORMAT = "ase_humanoid/weights/1"

# Agent entries a policy needs (networks, normalisers, sizes; an HRL agent's frozen LLC).
POLICY_AGENT_ENTRIES = ("algo", "config", "dims", "model", "obs_norm", "value_norm", "reward_norm",
                        "amp_obs_dim", "amp_norm", "llc")

# The shipped ASE low-level controller per robot: what hierarchical tasks use when no
# llc_checkpoint is given. The sword-and-shield humanoid's is a walking controller (no
# sword-fighting clips ship: the sword and shield are carried through walks and a run).
SHIPPED_LLC = {"amp_humanoid": "ase_llc_amp_humanoid.pt", "sword_shield": "ase_llc_sword_shield_walk.pt"}
# Tasks that are mostly travel use the walking controller instead: the six-clip one's latents
# move at 0.2-0.4 m/s, too slow for Heading's 1.5 m/s or Location's metres.
SHIPPED_TASK_LLC = {"amp_humanoid": {"HumanoidHeading": "ase_llc_amp_humanoid_walk.pt",
                                     "HumanoidLocation": "ase_llc_amp_humanoid_walk.pt"}}


def weights_only_state(checkpoint: dict[str, Any], provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """The policy part of a run checkpoint `checkpoint` (`Runner.state_dict()`), plus where it
    came from (`provenance`: epoch, samples, command, ...)."""
    agent = checkpoint.get("agent")
    if not isinstance(agent, dict) or "model" not in agent:
        raise CheckpointError("the checkpoint holds no agent networks to ship")
    return {
        "format": WEIGHTS_FORMAT,
        "config": checkpoint.get("config"),
        "epoch": checkpoint.get("epoch"),
        "global_step": checkpoint.get("global_step"),
        "agent": {key: agent[key] for key in POLICY_AGENT_ENTRIES if key in agent},
        "provenance": dict(provenance or {}),
    }


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_checksums(folder: Path) -> dict[str, str]:
    """{file name: sha256 hex} from `folder/SHA256SUMS` (`<hex>  <name>` lines); {} if absent."""
    path = folder / CHECKSUM_FILE
    if not path.is_file():
        return {}
    sums = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        match = re.fullmatch(r"([0-9a-f]{64}) [ *]?(\S+)", line.strip())
        if match is None:
            raise CheckpointError(f"{path}, line {number}: not '<sha256>  <file>': {line[:80]!r}")
        sums[match.group(2)] = match.group(1)
    return sums


def write_checksums(folder: Path, sums: dict[str, str]) -> None:
    from ase_humanoid.utils.atomic_file import write_text_atomic

    write_text_atomic(folder / CHECKSUM_FILE, "".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items())))


def verify_shipped(path: Path) -> None:
    """CheckpointError unless `path`, a file in a folder with a SHA256SUMS, matches its listed
    checksum (a file in such a folder but not listed is refused too)."""
    path = Path(path)
    listing = path.parent / CHECKSUM_FILE
    shipped_folder = path.parent.resolve() == PRETRAINED_DIR.resolve()
    if shipped_folder or listing.exists() or listing.is_symlink():
        # In pretrained/ the list must be there: deleting, emptying or replacing it must not
        # turn the check off for every shipped model.
        if not listing.is_file():
            what = "is missing" if not (listing.exists() or listing.is_symlink()) else "is not a file"
            raise CheckpointError(f"'{path}': its checksum list {listing} {what}; restore it with git checkout")
        try:
            sums = read_checksums(path.parent)
        except OSError as exc:
            raise CheckpointError(f"'{path}': its checksum list {listing} cannot be read: {exc}") from exc
        if not sums:
            raise CheckpointError(f"'{path}': its checksum list {listing} lists nothing; restore it with git checkout")
    else:
        return
    expected = sums.get(path.name)
    if expected is None:
        raise CheckpointError(f"'{path}' is not listed in {path.parent / CHECKSUM_FILE}; a shipped model "
                              "must be listed there (tools/ship_model.py writes both)")
    actual = sha256_of(path)
    if actual != expected:
        raise CheckpointError(f"'{path}' does not match its checksum in {path.parent / CHECKSUM_FILE} "
                              f"(sha256 {actual[:16]}..., listed {expected[:16]}...): the file is damaged "
                              "or was replaced; restore it with git checkout")


def shipped_llc_path(robot_name: str, task_name: str | None = None) -> Path | None:
    """The shipped ASE controller for task `task_name` on `robot_name`, or None if none ships."""
    name = SHIPPED_TASK_LLC.get(robot_name, {}).get(task_name) or SHIPPED_LLC.get(robot_name)
    if name is None or not (PRETRAINED_DIR / name).is_file():
        return None
    return PRETRAINED_DIR / name


def card_metrics(card_path: Path) -> dict[str, Any]:
    """The first fenced ```json block of a model card, parsed as JSON (plain data only)."""
    text = Path(card_path).read_text()
    match = re.search(r"```json\n(.*?)\n```", text, flags=re.DOTALL)
    if match is None:
        raise CheckpointError(f"model card '{card_path}' has no ```json metrics block")
    try:
        return json.loads(match.group(1))
    except json.JSONDecodeError as err:
        raise CheckpointError(f"model card '{card_path}': metrics block is not JSON: {err}") from err
