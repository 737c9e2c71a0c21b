"""Native MuJoCo's convex-heightfield collisions with a cheaper first test (hfield_collision.c).

On a heightfield every body geom below the field's highest point goes through MuJoCo's full
convex-heightfield routine each physics step, even far above the ground under it: on the mixed
tile grid (stairs rising 1.2 m) that is most of a physics step's extra cost against a plane for
an upright humanoid (3.9 against 2.0 us of collision per step). The C function first compares the
geom's bounding sphere with the highest sample under it and calls MuJoCo's routine only when the
geom may reach the ground, so the contacts, and every state, are exactly MuJoCo's.

`install_heightfield_fast_path()` compiles the C file against the installed MuJoCo's headers
(once per MuJoCo version and source, cached in `$ASE_HUMANOID_CACHE` or ~/.cache/ase_humanoid,
with the C compiler in `$CC` or `cc`) and puts the function into MuJoCo's public collision table
(`mjCOLLISIONFUNC`, mujoco.h) for heightfield pairs, for the whole process. Without a compiler, on
Windows, or with `ASE_HUMANOID_STOCK_HFIELD=1`, MuJoCo's own routine stays (a warning says why):
the same physics, slower on terrain. MuJoCo Warp and flat ground (a plane) are not affected.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import mujoco

SOURCE = Path(__file__).with_name("hfield_collision.c")
DISABLE_ENV = "ASE_HUMANOID_STOCK_HFIELD"
CACHE_ENV = "ASE_HUMANOID_CACHE"
CONVEX_TYPES = ("SPHERE", "CAPSULE", "ELLIPSOID", "CYLINDER", "BOX", "MESH")

_installed: dict = {}  # "lib": the loaded fast path, "originals": {table index: MuJoCo's function}
_tried = [False]


class FastPathUnavailable(RuntimeError):
    """Why the fast path cannot be built or installed here."""


def install_heightfield_fast_path() -> bool:
    """Put the fast first test into MuJoCo's collision table (once per process); True when it is
    in place, False (with a warning, once) when MuJoCo's own routine stays."""
    if _installed:
        return True
    if _tried[0]:
        return False
    _tried[0] = True
    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return False
    try:
        library = build_library()
        try:
            fast = ctypes.CDLL(str(library))
        except OSError as exc:  # e.g. a damaged cache file: removing it makes the next run rebuild it
            raise FastPathUnavailable(f"cannot load {library}: {exc}") from exc
        _patch_table(fast)
    except FastPathUnavailable as exc:
        warnings.warn(f"heightfield collisions: MuJoCo's own routine runs ({exc}); the physics is the "
                      "same, terrain steps are slower", RuntimeWarning, stacklevel=2)
        return False
    return True


def uninstall_heightfield_fast_path() -> None:
    """Give MuJoCo's collision table its own functions back (the next install builds nothing new)."""
    if _installed:
        table = _collision_table()
        for index, original in _installed["originals"].items():
            table[index] = original
        _installed.clear()
    _tried[0] = False


def is_installed() -> bool:
    return bool(_installed)


def build_library() -> Path:
    """The compiled fast path for this MuJoCo (built now if not cached); FastPathUnavailable when
    it cannot be built."""
    if sys.platform == "win32":
        raise FastPathUnavailable("not built on Windows")
    include = Path(mujoco.__file__).parent / "include"
    if not (include / "mujoco" / "mjdata.h").is_file():
        raise FastPathUnavailable(f"no MuJoCo headers in {include}")
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + mujoco.__version__.encode() + str(include).encode()).hexdigest()[:16]
    cache = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ase_humanoid")
    target = cache / f"hfield_collision-{mujoco.__version__}-{key}.so"
    if target.is_file():
        return target
    compiler = os.environ.get("CC") or "cc"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".hfield_collision.", suffix=".so", dir=cache)
        os.close(fd)
    except OSError as exc:
        raise FastPathUnavailable(f"cache folder {cache}: {exc}") from exc
    try:
        result = subprocess.run([compiler, "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", tmp, "-lm"],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise FastPathUnavailable(f"{compiler} failed: {result.stderr.strip()[-300:]}")
        os.replace(tmp, target)  # atomic: processes building at once each put a complete file
    except (OSError, subprocess.SubprocessError) as exc:
        raise FastPathUnavailable(f"no C compiler ({compiler}: {exc})") from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
    return target


def _mujoco_library() -> ctypes.CDLL:
    """The MuJoCo library the `mujoco` module runs (loading it again returns the same one)."""
    folder = Path(mujoco.__file__).parent
    candidates = sorted(folder.glob("libmujoco.so*")) + sorted(folder.glob("libmujoco*.dylib"))
    if not candidates:
        raise FastPathUnavailable(f"no MuJoCo library found in {folder}")
    try:
        return ctypes.CDLL(str(candidates[0]))
    except OSError as exc:
        raise FastPathUnavailable(f"cannot load {candidates[0]}: {exc}") from exc


def _collision_table():
    n = int(mujoco.mjtGeom.mjNGEOMTYPES)
    try:
        return (ctypes.c_void_p * (n * n)).in_dll(_mujoco_library(), "mjCOLLISIONFUNC")
    except ValueError as exc:
        raise FastPathUnavailable(f"MuJoCo has no collision table: {exc}") from exc


def heightfield_slots() -> dict[int, int]:
    """Convex geom type -> index of its heightfield pair in the flattened collision table."""
    row = int(mujoco.mjtGeom.mjGEOM_HFIELD) * int(mujoco.mjtGeom.mjNGEOMTYPES)
    types = (int(getattr(mujoco.mjtGeom, f"mjGEOM_{name}")) for name in CONVEX_TYPES)
    return {geom_type: row + geom_type for geom_type in types}


def _patch_table(fast: ctypes.CDLL) -> None:
    table = _collision_table()
    ours = ctypes.cast(fast.ase_convex_hfield, ctypes.c_void_p).value
    originals = {}
    for geom_type, index in heightfield_slots().items():
        if not table[index]:
            raise FastPathUnavailable(f"MuJoCo has no heightfield collider for {mujoco.mjtGeom(geom_type).name}")
        originals[index] = table[index]
        fast.ase_set_mujoco_collider(ctypes.c_int(geom_type), ctypes.c_void_p(table[index]))
    for index in originals:
        table[index] = ours
    _installed.update(lib=fast, originals=originals)
