"""Atomic checkpoint files that cannot run code when loaded.

Writing: temp file + fsync + rename, so a crash or kill mid-write never destroys the previous
checkpoint. Reading: `torch.load(weights_only=True)`, which unpickles only plain data (dicts,
lists, tuples, str, numbers, bool, None, tensors) and refuses any other Python global, so a
planted `.pt` holding e.g. a pickled `os.system` call is an error instead of an exploit. Saving
therefore converts numpy arrays and numpy scalars to tensors / Python numbers first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ase_humanoid.errors import CheckpointError
from ase_humanoid.utils.atomic_file import write_atomic
from ase_humanoid.utils.checks import input_file_problem
from ase_humanoid.utils.shipped_models import verify_shipped


def plain_data(value: Any) -> Any:
    """`value` with numpy arrays as tensors and numpy scalars as Python numbers (recursively),
    so that `torch.load(weights_only=True)` can read it back."""
    if isinstance(value, dict):
        return {key: plain_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        items = [plain_data(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value, copy=True))
    if isinstance(value, np.generic):
        return value.item()
    return value


def save_checkpoint(state: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write `state` (made plain, see `plain_data`) with torch.save to a temp file in the same
    folder, fsync, then rename.

    os.replace is atomic on POSIX and Windows, so readers see either the old file or the
    complete new one, never a truncated one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = plain_data(state)
    try:
        return write_atomic(path, lambda f: torch.save(state, f))
    except OSError as exc:
        raise CheckpointError(f"could not write '{path}': {exc.strerror or exc}") from exc
    except RuntimeError as exc:
        # torch's zip writer reports a short write (a full disk) as "unexpected pos N vs M"
        if "unexpected pos" not in str(exc) and "write" not in str(exc).lower():
            raise
        raise CheckpointError(f"could not write '{path}' (is the disk full?): {str(exc)[:160]}") from exc


def _legacy_numpy_globals() -> list:
    """The numpy globals that checkpoints written before weights-only loading used for numpy
    arrays (RNG state, simulator state). They rebuild arrays of plain numbers only (object
    arrays would need further globals, which stay refused)."""
    from numpy._core.multiarray import _reconstruct  # numpy >= 2

    return [_reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32)), type(np.dtype(np.float64)),
            type(np.dtype(np.float32)), type(np.dtype(np.int64))]


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint written by save_checkpoint; errors name the file and the problem.

    Only plain data is unpickled (weights_only=True): a file that asks for any other Python
    object (a function, a class) is refused with CheckpointError before anything of it runs.
    """
    path = checked_checkpoint_path(path)
    state = _load_plain_data(path, map_location=map_location)
    check_network_weights(state, path)
    return state


def load_checkpoint_config(path: str | os.PathLike) -> dict | None:
    """The run config a checkpoint stores (None if it has none), with load_checkpoint's checks
    but without reading its weights: the tensors are memory-mapped and never touched, so asking
    a 40 MB run checkpoint what it was trained with costs milliseconds."""
    path = checked_checkpoint_path(path)
    # mmap needs torch's zip format; a legacy pickle stream is read whole, as load_checkpoint does
    with open(path, "rb") as f:
        zip_format = f.read(4) == _TORCH_FILE_HEADERS[0]
    state = _load_plain_data(path, map_location="cpu", mmap=zip_format)
    return state.get("config")


def checked_checkpoint_path(path: str | os.PathLike) -> Path:
    """The file a checkpoint argument names (a run folder's latest.pt), checked to be a readable,
    non-empty torch file (and a shipped model's checksum); CheckpointError names it otherwise."""
    path = Path(path)
    if path.is_dir():
        if not (path / "latest.pt").exists():  # not "<folder>/latest.pt does not exist": say what was given
            raise CheckpointError(f"checkpoint '{path}' is a folder with no latest.pt in it; give a checkpoint "
                                  "file (latest.pt, epoch_N.pt) or a run folder")
        path = path / "latest.pt"
    problem = input_file_problem(path)
    if problem is not None:  # a FIFO would block torch.load, /dev/zero fill the memory
        raise CheckpointError(f"checkpoint '{path}' {problem}")
    if path.stat().st_size == 0:
        raise CheckpointError(f"checkpoint '{path}' is empty (0 bytes); it was never written, or was truncated")
    check_torch_file_header(path)
    verify_shipped(path)  # a file beside a SHA256SUMS (pretrained/) must match its checksum
    return path


def _load_plain_data(path: Path, map_location, mmap: bool = False) -> dict[str, Any]:
    """torch.load with weights_only=True; CheckpointError names the file and why it failed."""
    try:
        with torch.serialization.safe_globals(_legacy_numpy_globals()):
            state = torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except Exception as exc:  # torch raises several types for truncated/corrupt/unsafe files
        text = str(exc)
        if "Unsupported global" in text or "Weights only load failed" in text:
            detail = next((line.strip() for line in text.splitlines() if "Unsupported global" in line), "")
            raise CheckpointError(
                f"checkpoint '{path}' holds Python objects other than plain data and tensors; refused "
                f"because loading it could run code ({detail or 'see torch.load weights_only'})") from None
        raise CheckpointError(f"checkpoint '{path}' is unreadable (truncated or corrupt?): {exc}") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"checkpoint '{path}' does not hold a dict of states")
    return state


# torch.save writes a zip archive; before torch 1.6 a pickle stream (protocol 2: b"\x80\x02").
_TORCH_FILE_HEADERS = (b"PK\x03\x04", b"\x80")


def check_torch_file_header(path: Path) -> None:
    """CheckpointError unless `path` starts as a torch.save file does: torch's own error for a
    text file is its first byte's code ("101" for "e"), which says nothing."""
    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(_TORCH_FILE_HEADERS):
        return
    text = head.decode("utf-8", errors="replace")
    is_text = all(c.isprintable() or c in "\r\n\t" for c in text)
    found = f"text {text!r}" if is_text else f"bytes {head[:8]!r}"
    raise CheckpointError(f"checkpoint '{path}' is not a torch checkpoint: it starts with {found}, not the zip "
                          "header torch.save writes; give a .pt file written by train.py (latest.pt, epoch_N.pt)")


# Entries that hold network state dicts (the agent's "model", an HRL checkpoint's embedded
# low-level controller "weights") and normalisers ("*_norm"): what a policy is computed from.
_WEIGHT_ENTRIES = ("model", "weights")
_NORMALISER_SUFFIX = "_norm"


def check_network_weights(state: dict[str, Any], path: str | os.PathLike) -> None:
    """CheckpointError naming the file and the tensor if a network or normaliser tensor is NaN,
    infinite or not floating point: such a policy acts without a word otherwise (NaN actions, or
    integer weights loaded as rounded floats). Optimiser state and sample buffers are not read."""
    for where, tensors in _weight_dicts(state, ""):
        for name, tensor in tensors.items():
            if not torch.is_tensor(tensor):
                continue
            if not tensor.is_floating_point():
                raise CheckpointError(f"checkpoint '{path}': tensor '{where}.{name}' has dtype {tensor.dtype}; "
                                      "network weights must be floating point")
            if not bool(torch.isfinite(tensor).all()):
                raise CheckpointError(f"checkpoint '{path}': tensor '{where}.{name}' holds NaN or inf "
                                      "(saved from a diverged run?); use an earlier checkpoint")


def _weight_dicts(state: dict, prefix: str):
    """(dotted key, dict) of every weight or normaliser entry nested in `state`."""
    for key, value in state.items():
        if not isinstance(value, dict):
            continue
        where = f"{prefix}{key}"
        if key in _WEIGHT_ENTRIES or (isinstance(key, str) and key.endswith(_NORMALISER_SUFFIX)):
            yield where, value
        else:
            yield from _weight_dicts(value, where + ".")


# Entries a run checkpoint (Runner.state_dict) needs for each use.
RESUME_ENTRIES = ("agent", "env", "epoch", "global_step", "rng", "config")
POLICY_ENTRIES = ("agent",)


def require_entries(state: dict[str, Any], path: str | os.PathLike, entries: tuple[str, ...], use: str) -> None:
    """CheckpointError naming the file and the missing entries unless `state` holds `entries`."""
    missing = [key for key in entries if key not in state]
    if missing:
        raise CheckpointError(f"checkpoint '{path}' has no {', '.join(repr(k) for k in missing)} "
                              f"entr{'y' if len(missing) == 1 else 'ies'} needed {use}; is it a checkpoint "
                              "written by train.py (run_dir/latest.pt or epoch_N.pt)?")
    if "agent" in entries and not isinstance(state["agent"], dict):
        raise CheckpointError(f"checkpoint '{path}': its 'agent' entry is not an agent state")
