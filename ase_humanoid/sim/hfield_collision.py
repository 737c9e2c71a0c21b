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

Loading a shared library runs its code, so only one this project built for this user is loaded:
the cache folder must be the user's own and writable by nobody else (it is created owner-only;
another is refused with a warning), each build records the library's SHA-256 beside it, and a
cached file is loaded only when it is the user's, not writable by others, and matches its
recorded hash. Anything else (a planted or truncated file, a missing hash) is rebuilt first.
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
    try:
        if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
            raise FastPathUnavailable(f"{DISABLE_ENV}={os.environ[DISABLE_ENV]}")
        library = build_library()
        try:
            fast = ctypes.CDLL(str(library))
            fast.ase_convex_hfield, fast.ase_set_mujoco_collider  # noqa: B018 (both symbols, or refuse)
        except (OSError, AttributeError) as exc:
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


def cache_folder() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "ase_humanoid")


def library_path() -> Path:
    """Where this MuJoCo's build of the fast path is cached (its name holds the MuJoCo version
    and a hash of the source and headers' folder)."""
    include = Path(mujoco.__file__).parent / "include"
    key = hashlib.sha256(SOURCE.read_bytes() + mujoco.__version__.encode() + str(include).encode()).hexdigest()[:16]
    return cache_folder() / f"hfield_collision-{mujoco.__version__}-{key}.so"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _digest_path(library: Path) -> Path:
    return library.with_name(library.name + ".sha256")


def _check_private(path: Path, what: str) -> None:
    """FastPathUnavailable unless `path` belongs to this user and nobody else may write it."""
    info = path.stat()
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise FastPathUnavailable(f"{what} {path} belongs to another user")
    if info.st_mode & 0o022:
        raise FastPathUnavailable(f"{what} {path} is writable by others (chmod go-w it, or set {CACHE_ENV})")


def _verified(library: Path) -> bool:
    """Whether the cached `library` is this user's own, unchanged build."""
    digest = _digest_path(library)
    try:
        if not (library.is_file() and digest.is_file()):
            return False
        _check_private(library, "cached library")
        return digest.read_text().strip() == _digest(library)
    except (OSError, FastPathUnavailable):
        return False


def build_library() -> Path:
    """The compiled fast path for this MuJoCo: the cached build when it verifies, else built now
    (with its hash recorded); FastPathUnavailable when it cannot be built or the cache folder is
    not private."""
    if sys.platform == "win32":
        raise FastPathUnavailable("not built on Windows")
    include = Path(mujoco.__file__).parent / "include"
    if not (include / "mujoco" / "mjdata.h").is_file():
        raise FastPathUnavailable(f"no MuJoCo headers in {include}")
    cache, target = cache_folder(), library_path()
    try:
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        _check_private(cache, "cache folder")
    except OSError as exc:
        raise FastPathUnavailable(f"cache folder {cache}: {exc}") from exc
    if _verified(target):
        return target
    compiler = os.environ.get("CC") or "cc"
    try:
        fd, tmp = tempfile.mkstemp(prefix=".hfield_collision.", suffix=".so", dir=cache)
        os.close(fd)
    except OSError as exc:
        raise FastPathUnavailable(f"cache folder {cache}: {exc}") from exc
    try:
        result = subprocess.run([compiler, "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", tmp, "-lm"],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise FastPathUnavailable(f"{compiler} failed: {result.stderr.strip()[-300:]}")
        os.chmod(tmp, 0o700)
        digest = _digest(Path(tmp))
        os.replace(tmp, target)  # atomic: processes building at once each put a complete file
        fd, tmp_digest = tempfile.mkstemp(prefix=".hfield_collision.", suffix=".sha256", dir=cache)
        with os.fdopen(fd, "w") as out:
            out.write(digest + "\n")
        os.replace(tmp_digest, _digest_path(target))
    except (OSError, subprocess.SubprocessError) as exc:
        raise FastPathUnavailable(f"no C compiler ({compiler}: {exc})") from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
    if not _verified(target):  # another process replaced it meanwhile with something else
        raise FastPathUnavailable(f"{target} changed while it was built")
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
