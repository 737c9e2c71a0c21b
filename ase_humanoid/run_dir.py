"""The run folder's life: one training process at a time holds it (a lock), refuse to overwrite
another run, fail early on a folder that cannot be written, write config.yaml atomically, and on
resume put the logs back where the checkpoint stands (metrics.jsonl truncated, TensorBoard purged
after its step) and drop the temp files a kill during a checkpoint write leaves behind."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from ase_humanoid.errors import ConfigError
from ase_humanoid.utils.atomic_file import write_text_atomic

# Files whose presence means "a run lives here".
RUN_FILES = ("latest.pt", "metrics.jsonl", "config.yaml", "replay")  # replay/: the AMP replay journal
LOCK_FILE = ".lock"  # held (flock) by the training process using the folder; the file itself stays

# Temp files this project's atomic writes (utils/atomic_file.py: mkstemp, 8 random characters)
# and writability probe leave when killed, by folder: a user's own `.notes.tmp` is not one.
_RANDOM = r"[a-z0-9_]{8}"
STALE_TEMP_PATTERNS = {
    ".": re.compile(rf"\.(latest\.pt|epoch_\d+\.pt|config\.yaml|metrics\.jsonl)\.{_RANDOM}\.tmp"
                    rf"|\.write_check\.{_RANDOM}"),
    "replay": re.compile(rf"\.replay_\d+\.journal\.{_RANDOM}\.tmp"),
}


def existing_run_files(run_dir: Path) -> list[str]:
    """Names of RUN_FILES (and numbered snapshots) present in `run_dir`."""
    if not run_dir.is_dir():
        return []
    found = [name for name in RUN_FILES if (run_dir / name).exists()]
    return found + sorted(p.name for p in run_dir.glob("epoch_*.pt"))[:1]


def refuse_existing_run(run_dir: Path) -> None:
    """A new run must not replace another run's latest.pt or append to its metrics.jsonl. A run
    that never wrote a checkpoint (stopped, or its disk full, before the first one) has nothing
    to resume: its logs go and a new run starts there."""
    found = existing_run_files(run_dir)
    if found and not (run_dir / "latest.pt").exists() and not any(run_dir.glob("epoch_*.pt")):
        clear_unstarted_run(run_dir)
        return
    if found:
        raise ConfigError(f"run_dir '{run_dir}' already holds a run ({', '.join(found)}); continue it with "
                          "resume=true, or give a new run_dir (or delete the folder) to start over")


def clear_unstarted_run(run_dir: Path) -> None:
    """Remove the files of a run that wrote no checkpoint (RUN_PATH_KINDS only), saying so."""
    removed = []
    for name in RUN_PATH_KINDS:
        path = run_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.is_file() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(name)
    print(f"note: {run_dir} held a run that wrote no checkpoint ({', '.join(removed)}); starting afresh there",
          flush=True)


# What a run writes in its folder, by kind: a folder where a file goes (or the reverse) would fail
# only when first written, after an epoch of training.
RUN_PATH_KINDS = {"latest.pt": "file", "metrics.jsonl": "file", "config.yaml": "file", "tensorboard": "folder",
                  "replay": "folder"}


def check_run_paths(run_dir: Path) -> None:
    """ConfigError if `run_dir` is not a folder, or a path the run writes in it has the wrong kind."""
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"run_dir '{run_dir}' is a file, not a folder; give a folder path")
    for name, kind in RUN_PATH_KINDS.items():
        path = run_dir / name
        if not (path.exists() or path.is_symlink()):
            continue  # written fresh by the run
        if path.is_dir() if kind == "folder" else path.is_file():
            continue
        found = "a folder" if path.is_dir() else "a file" if path.is_file() else "neither a file nor a folder"
        raise ConfigError(f"run_dir '{run_dir}': '{name}' is {found}, but the run writes it as a {kind}; move it "
                          "away or give another run_dir")


def check_writable(run_dir: Path) -> None:
    """Create `run_dir` and write a probe file in it: an unwritable folder or a full disk is a
    ConfigError now, before the env and agent are built, not a traceback after."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=run_dir, prefix=".write_check.", delete=True) as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise ConfigError(f"run_dir '{run_dir}' is not writable: {exc.strerror or exc}") from exc


def _try_lock(fd: int) -> bool:
    """Take an exclusive lock on open file `fd` without waiting; False if another process holds
    it. The OS drops it when the process ends, a kill included, so it is never left stuck."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def hold_run_dir(run_dir: Path) -> Iterator[None]:
    """Hold `run_dir` for one training process while the block runs: a second run on the same
    folder (new or resumed) would delete the first one's replay journal and interleave
    metrics.jsonl, so it gets a ConfigError instead. Creates the folder (ConfigError if it
    cannot); the lock file is opened without being written, so holding changes nothing."""
    lock_path = run_dir / LOCK_FILE
    if run_dir.exists() and not run_dir.is_dir():  # mkdir would say only "File exists"
        raise ConfigError(f"run_dir '{run_dir}' is a file, not a folder; give a folder path")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError(f"run_dir '{run_dir}' is not writable: {exc.strerror or exc}") from exc
    try:
        if not _try_lock(fd):
            raise ConfigError(f"run_dir '{run_dir}' is in use by another training process (it holds "
                              f"'{lock_path}'); wait for that run to end or stop it, or give another run_dir")
        yield
    finally:
        os.close(fd)  # releases the lock


class RunFolderFootprint:
    """What a run adds to the file system before it trains, so that a refused run (a bad key, a
    bad motion file, a missing checkpoint: any error before the first epoch) leaves the current
    folder and the run root exactly as they were. Record before the folder is created; `undo`
    removes only what was not there then: the folders made for the run (parents included), its
    lock file and the paths of RUN_PATH_KINDS it created. A user's own files are never touched."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.made_folders = []  # the run folder and each missing parent, deepest first
        folder = run_dir
        while not (folder.exists() or folder.is_symlink()) and folder != folder.parent:
            self.made_folders.append(folder)
            folder = folder.parent
        existing = set(os.listdir(run_dir)) if run_dir.is_dir() else set()
        self.new_paths = [name for name in (LOCK_FILE, *RUN_PATH_KINDS) if name not in existing]

    def undo(self) -> None:
        for name in self.new_paths:
            path = self.run_dir / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            elif path.exists() or path.is_symlink():
                with contextlib.suppress(OSError):
                    path.unlink()
        for folder in self.made_folders:  # deepest first; a folder holding anything else stays
            with contextlib.suppress(OSError):
                folder.rmdir()


def remove_stale_temp_files(run_dir: Path) -> list[Path]:
    """Delete the temp files of STALE_TEMP_PATTERNS left by a kill during an atomic write (only
    those: other files in the folder are the user's); returns them."""
    stale = [path for folder, pattern in STALE_TEMP_PATTERNS.items() if (run_dir / folder).is_dir()
             for path in (run_dir / folder).iterdir() if pattern.fullmatch(path.name) and path.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def truncate_metrics(path: Path, epoch: int) -> int:
    """Keep the lines of metrics.jsonl up to and including `epoch` (a torn last line goes too);
    returns how many lines were dropped. Resuming from an older checkpoint then does not repeat
    epochs in the file."""
    if not path.is_file():
        return 0
    kept, dropped = [], 0
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            dropped += 1
            continue
        if isinstance(record, dict) and isinstance(record.get("epoch"), int) and record["epoch"] <= epoch:
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        write_text_atomic(path, "".join(line + "\n" for line in kept))
    return dropped
