"""Poselib SkeletonMotion / SkeletonState .npy files (the clip format of the ASE and IsaacGymEnvs
releases), read and written without poselib and without trusting the pickle inside.

Layout of such a file: a .npy holding a 0-d object array whose item is an (Ordered)dict

    rotation                 {arr: [T, J, 4] xyzw (SkeletonState: [J, 4]), context: {dtype}}
    root_translation         {arr: [T, 3] (SkeletonState: [3]), context: {dtype}}
    global_velocity          {arr: [T, J, 3], ...}          SkeletonMotion only
    global_angular_velocity  {arr: [T, J, 3], ...}          SkeletonMotion only
    skeleton_tree            {node_names: list[str], parent_indices: {arr: [J] int64, ...},
                              local_translation: {arr: [J, 3], ...}}
    is_local                 bool: rotations local to the parent (else world rotations)
    fps                      SkeletonMotion only: int, float or 0-d array
    __name__                 'SkeletonMotion' or 'SkeletonState'

Reading goes through `RestrictedUnpickler`, which rebuilds only numpy arrays/dtypes/scalars,
OrderedDict and plain builtin containers; any other class referenced by the pickle is refused
with MotionFileError before anything is called. Writing produces the same structure, naming
numpy's pickle helpers by their pre-2.0 module path (numpy.core.multiarray), so poselib on old
numpy reads the files too; numpy 2 still resolves that path.
"""

from __future__ import annotations

import io
import math
import os
import pickle
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
from numpy.lib import format as npy_format

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.files import read_motion_bytes
from ase_humanoid.motion.clip import PLAUSIBLE_FPS_RANGE, MotionClip
from ase_humanoid.motion.skeleton import Skeleton
from ase_humanoid.utils import rotations as rot
from ase_humanoid.utils.checks import output_file_problem

MOTION = "SkeletonMotion"
STATE = "SkeletonState"
# fps given to the single-frame clip a SkeletonState becomes (the file has none; a one-frame
# clip's duration is 0 whatever it is).
STATE_FPS = 30.0

_numpy_multiarray = getattr(np, "_core", None) or np.core  # numpy 2 / numpy 1
_numpy_multiarray = _numpy_multiarray.multiarray

# Builtins whose call output is bounded by the pickle's own size. bytes / bytearray / range are
# left out: `bytearray(10**9)` in a 161-byte file would allocate a gigabyte (and list(range(...))
# likewise); poselib files use none of them (their array data comes as str via _codecs.encode).
_ALLOWED_BUILTINS = {
    "list", "dict", "tuple", "set", "frozenset", "int", "float", "complex", "bool", "str",
}
def _checked_array_state(state) -> tuple:
    """ndarray.__setstate__'s argument, checked: numpy trusts it (an object array whose element
    list is shorter than its shape crashes the interpreter) and would allocate its shape first."""
    if not isinstance(state, tuple) or len(state) not in (4, 5):
        raise pickle.UnpicklingError("array state is not a (version, shape, dtype, fortran, data) tuple")
    shape, dtype, _, data = state[-4:]
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise pickle.UnpicklingError(f"array shape {shape!r} is not a tuple of sizes")
    if not isinstance(dtype, np.dtype):
        raise pickle.UnpicklingError("array dtype is not a numpy dtype")
    count = math.prod(shape)
    if dtype == np.dtype(object):
        if not isinstance(data, list) or len(data) != count:
            raise pickle.UnpicklingError(f"object array of shape {shape} does not hold {count} elements")
        return state[:-1] + ([_finished(item) for item in data],)
    if dtype.hasobject:
        raise pickle.UnpicklingError(f"array dtype {dtype} mixes objects into records")
    if not isinstance(data, (bytes, str)) or len(data) != count * dtype.itemsize:
        raise pickle.UnpicklingError(f"array data of {len(data) if isinstance(data, (bytes, str)) else '?'} bytes "
                                     f"does not fill shape {shape} of {dtype}")
    return state


class _PendingArray:
    """What `_reconstruct` gives the unpickler instead of an empty array: the real array is made
    in __setstate__ from checked state, and `_finished` swaps it in afterwards."""

    __slots__ = ("array",)

    def __init__(self):
        self.array = None

    def __setstate__(self, state):
        array = _numpy_multiarray._reconstruct(np.ndarray, (0,), b"b")
        array.__setstate__(_checked_array_state(state))
        self.array = array


def _pending_array(subtype, shape, dtype):
    if subtype is not np.ndarray:
        raise pickle.UnpicklingError(f"_reconstruct of {subtype!r}: only numpy.ndarray is allowed")
    return _PendingArray()


def _finished(value):
    """`value` with every _PendingArray replaced by its array (recursively through containers)."""
    if isinstance(value, _PendingArray):
        if value.array is None:
            raise pickle.UnpicklingError("an array was declared but never given its data")
        return value.array
    if isinstance(value, OrderedDict):
        return OrderedDict((k, _finished(v)) for k, v in value.items())
    if isinstance(value, dict):
        return {k: _finished(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_finished(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _encode_text(text, encoding="latin1"):
    """`_codecs.encode`, as protocol-2 pickles use it for bytes: str -> bytes only (same size)."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is allowed only for latin1 str -> bytes")
    return text.encode("latin1")


def _allowed_globals() -> dict[tuple[str, str], object]:
    allowed = {
        ("collections", "OrderedDict"): OrderedDict,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
        # protocol-2 pickles written by Python 3 store bytes via _codecs.encode(str, 'latin1')
        ("_codecs", "encode"): _encode_text,
    }
    for module in ("numpy.core.multiarray", "numpy._core.multiarray"):
        allowed[(module, "_reconstruct")] = _pending_array
        allowed[(module, "scalar")] = _numpy_multiarray.scalar
    for name in _ALLOWED_BUILTINS:
        allowed[("builtins", name)] = getattr(__import__("builtins"), name)
        allowed[("__builtin__", name)] = getattr(__import__("builtins"), name)
    return allowed


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves only the globals poselib files use; anything else is refused."""

    _allowed = _allowed_globals()

    def __init__(self, file, source: str):
        super().__init__(file)
        self._source = source

    def find_class(self, module: str, name: str):
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise MotionFileError(
                f"{self._source}: refusing to load: the pickle references {module}.{name}, which is not "
                "a numpy array, dtype, OrderedDict or builtin container (poselib files use nothing else)"
            ) from None

    def load(self):
        return _finished(super().load())

    def persistent_load(self, pid):
        raise MotionFileError(f"{self._source}: refusing to load: the pickle uses persistent ids")


# ------------------------------------------------------------------------------------ reading
def read_poselib_dict(path) -> dict:
    """The raw dict stored in a poselib .npy, unpickled with RestrictedUnpickler."""
    path = Path(path)
    raw = read_motion_bytes(path)
    stream = io.BytesIO(raw)
    try:
        version = npy_format.read_magic(stream)
        read_header = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
        shape, _, dtype = read_header(stream)
    except Exception as err:  # numpy raises ValueError / EOFError with its own wording
        raise MotionFileError(f"{path}: not a .npy file ({err})") from None
    if dtype != np.dtype(object):
        raise MotionFileError(
            f"{path}: holds a plain {dtype} array of shape {shape}, not a pickled poselib SkeletonMotion/SkeletonState dict"
        )
    try:
        stored = RestrictedUnpickler(stream, str(path)).load()
    except MotionFileError:
        raise
    except Exception as err:  # truncated or corrupt pickle stream
        raise MotionFileError(f"{path}: corrupt or truncated pickle data ({type(err).__name__}: {err})") from None
    content = stored.item() if isinstance(stored, np.ndarray) and stored.size == 1 else stored
    if not isinstance(content, dict):
        raise MotionFileError(f"{path}: expected a poselib dict inside the .npy, found {type(content).__name__}")
    return content


def load_poselib(path, dtype: torch.dtype | None = torch.float32) -> MotionClip:
    """Read a SkeletonMotion (clip) or SkeletonState (single-frame clip at STATE_FPS).

    dtype: floating dtype of the clip's tensors; None keeps the file's (float32 or float64).
    World rotations (is_local False) are converted to local ones. Stored velocities are kept;
    a SkeletonState gets zero velocities.
    """
    path = Path(path)
    content = read_poselib_dict(path)
    try:
        return _clip_from_dict(content, dtype)
    except MotionFileError as err:
        raise MotionFileError(f"{path}: {err}") from None


def _clip_from_dict(content: dict, dtype: torch.dtype | None) -> MotionClip:
    kind = content.get("__name__", MOTION if "fps" in content else STATE)
    if kind not in (MOTION, STATE):
        raise MotionFileError(f"__name__ is {kind!r}, expected {MOTION!r} or {STATE!r}")
    for key in ("rotation", "root_translation", "skeleton_tree", "is_local"):
        if key not in content:
            raise MotionFileError(f"missing key {key!r} (keys: {sorted(map(str, content))})")
    rotation = _tensor(content["rotation"], "rotation")
    dtype = dtype or (rotation.dtype if rotation.is_floating_point() else torch.float32)
    skeleton = _skeleton_from_tree(content["skeleton_tree"], dtype)
    rotation = rotation.to(dtype)
    root_translation = _tensor(content["root_translation"], "root_translation").to(dtype)
    num_joints = skeleton.num_joints
    if kind == STATE:
        _check_shape(rotation, (num_joints, 4), "rotation", f"[{num_joints}, 4]")
        _check_shape(root_translation, (3,), "root_translation", "[3]")
        rotation, root_translation = rotation.unsqueeze(0), root_translation.unsqueeze(0)
    else:
        _check_shape(rotation, (None, num_joints, 4), "rotation", f"[T, {num_joints}, 4]")
        _check_shape(root_translation, (rotation.shape[0], 3), "root_translation", f"[{rotation.shape[0]}, 3]")
    if not torch.isfinite(rotation).all():
        raise MotionFileError("rotation contains NaN or inf")
    if not _is_local_flag(content["is_local"]):
        rotation = _world_to_local(skeleton, rot.quat_normalize(rotation))

    if kind == STATE:
        return MotionClip(skeleton, rotation, root_translation, STATE_FPS)
    if "fps" not in content:
        raise MotionFileError("SkeletonMotion has no 'fps'")
    velocities = [None, None]
    for i, key in enumerate(("global_velocity", "global_angular_velocity")):
        if key in content:
            velocities[i] = _tensor(content[key], key).to(dtype)
    fps = content["fps"]
    fps = fps.item() if isinstance(fps, np.ndarray) and fps.size == 1 else fps
    _check_fps_range(fps)
    return MotionClip(skeleton, rotation, root_translation, fps, *velocities)


def _check_fps_range(fps) -> None:
    if isinstance(fps, (int, float, np.integer, np.floating)) and not isinstance(fps, bool):
        low, high = PLAUSIBLE_FPS_RANGE
        if not low <= float(fps) <= high:
            raise MotionFileError(f"fps is {float(fps):g}, expected {low:g} to {high:g}")
    # anything else is left to MotionClip, which names what a fps must be


def _is_local_flag(value) -> bool:
    """is_local as a real bool: bool("no") is True, so a string or number is an error, not a guess."""
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.bool_:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise MotionFileError(f"is_local is {value!r} ({type(value).__name__}), expected True or False")


def _skeleton_from_tree(tree, dtype: torch.dtype) -> Skeleton:
    if not isinstance(tree, dict):
        raise MotionFileError(f"skeleton_tree is a {type(tree).__name__}, expected a dict")
    for key in ("node_names", "parent_indices", "local_translation"):
        if key not in tree:
            raise MotionFileError(f"skeleton_tree lacks {key!r}")
    names = tree["node_names"]
    if isinstance(names, np.ndarray):
        names = names.tolist()
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise MotionFileError("skeleton_tree.node_names must be a list of strings")
    parents = _tensor(tree["parent_indices"], "skeleton_tree.parent_indices")
    if parents.is_floating_point() or parents.dtype == torch.bool:
        raise MotionFileError(f"skeleton_tree.parent_indices has dtype {parents.dtype}, expected integers")
    offsets = _tensor(tree["local_translation"], "skeleton_tree.local_translation").to(dtype)
    return Skeleton(names, parents, offsets)


def _tensor(entry, key: str) -> torch.Tensor:
    """A poselib tensor entry {arr, context} (or a bare array) -> torch tensor."""
    array = entry.get("arr") if isinstance(entry, dict) else entry
    if not isinstance(array, np.ndarray):
        raise MotionFileError(f"{key} is not a stored array (got {type(array).__name__})")
    if array.dtype.kind not in "fiu" or array.dtype.itemsize > 8:
        raise MotionFileError(f"{key} has unsupported dtype {array.dtype}")
    return torch.from_numpy(np.ascontiguousarray(array).copy())


def _check_shape(value: torch.Tensor, expected: tuple, key: str, described: str) -> None:
    """expected: sizes, None for any."""
    ok = value.dim() == len(expected) and all(e is None or s == e for s, e in zip(value.shape, expected))
    if not ok:
        raise MotionFileError(f"{key} has shape {tuple(value.shape)}, expected {described} (skeleton_tree has the joint count)")


def _world_to_local(skeleton: Skeleton, world_rotation: torch.Tensor) -> torch.Tensor:
    """world_rotation [T, J, 4] -> local rotations (root keeps its world rotation)."""
    parents = skeleton.parent_indices.clamp_min(0)
    local = rot.quat_mul(rot.quat_conjugate(world_rotation[:, parents]), world_rotation)
    local[:, 0] = world_rotation[:, 0]
    return local


# ------------------------------------------------------------------------------------ writing
class _LegacyNumpyPickler(pickle._Pickler):
    """Pickler naming numpy 2's `numpy._core.*` helpers by their numpy 1 path `numpy.core.*`."""

    def save_global(self, obj, name=None):
        module = getattr(obj, "__module__", None) or ""
        if module.startswith("numpy._core") and self.proto < 4:
            legacy = "numpy.core" + module[len("numpy._core"):]
            qualname = name or obj.__name__
            self.write(pickle.GLOBAL + f"{legacy}\n{qualname}\n".encode("utf-8"))
            self.memoize(obj)
            return
        super().save_global(obj, name)


def _entry(array: np.ndarray) -> dict:
    return {"arr": array, "context": {"dtype": str(array.dtype)}}


def poselib_dict(clip: MotionClip, kind: str = MOTION) -> OrderedDict:
    """The dict poselib's to_file stores for `clip` (kind 'SkeletonMotion' or 'SkeletonState':
    the latter keeps frame 0 only)."""
    if kind not in (MOTION, STATE):
        raise MotionFileError(f"kind must be {MOTION!r} or {STATE!r}, got {kind!r}")
    as_np = lambda t: t.detach().cpu().numpy().copy()  # noqa: E731
    skeleton = clip.skeleton
    tree = OrderedDict(
        node_names=list(skeleton.node_names),
        parent_indices=_entry(as_np(skeleton.parent_indices.to(torch.int64))),
        local_translation=_entry(as_np(skeleton.local_translation)),
    )
    content = OrderedDict()
    if kind == MOTION:
        content["rotation"] = _entry(as_np(clip.local_rotation))
        content["root_translation"] = _entry(as_np(clip.root_translation))
        content["global_velocity"] = _entry(as_np(clip.global_velocity))
        content["global_angular_velocity"] = _entry(as_np(clip.global_angular_velocity))
    else:
        content["rotation"] = _entry(as_np(clip.local_rotation[0]))
        content["root_translation"] = _entry(as_np(clip.root_translation[0]))
    content["skeleton_tree"] = tree
    content["is_local"] = True
    if kind == MOTION:
        content["fps"] = int(clip.fps) if float(clip.fps).is_integer() else float(clip.fps)
    content["__name__"] = kind
    return content


def check_output_path(path) -> Path:
    """Raise MotionFileError unless `path` can take a poselib file: a .npy name (anything else
    would hold a .npy under a misleading suffix) in an existing, writable folder. Tools call this
    before long work so a bad --out fails at once."""
    path = Path(path)
    if path.suffix.lower() != ".npy":
        raise MotionFileError(f"{path}: output must be a poselib .npy file, got suffix {path.suffix or '(none)'!r}")
    problem = output_file_problem(path)
    if problem is not None:
        raise MotionFileError(f"{path}: output {problem}")
    return path


def save_poselib(clip: MotionClip, path, kind: str = MOTION) -> Path:
    """Write `clip` as a poselib .npy (np.save layout, pickle protocol 3), atomically."""
    path = check_output_path(path)
    holder = np.empty((), dtype=object)
    holder[()] = poselib_dict(clip, kind)
    buffer = io.BytesIO()
    npy_format.write_array_header_1_0(buffer, npy_format.header_data_from_array_1_0(holder))
    _LegacyNumpyPickler(buffer, protocol=3).dump(holder)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_bytes(buffer.getvalue())
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)  # a failed write leaves no half-written <name>.tmp behind
        raise MotionFileError(f"{path}: cannot write motion file: {err}") from None
    return path
