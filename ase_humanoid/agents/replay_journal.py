"""An append-only journal that keeps a ring SampleBuffer (the AMP replay buffer) on disk between
checkpoints, so `latest.pt` holds a small reference instead of the samples.

Why: at profile=paper sizes the replay buffer is 200k x 1250 floats (954 MB) of simulated agent
observations. They cannot be recomputed, so an exact resume needs their bytes, yet once the buffer
is full only `amp_replay_keep_prob` (1 %) of each rollout enters it. Rewriting all of it into
every checkpoint cost ~1 GB of writes per epoch; the journal writes the rows stored since the
last checkpoint.

Files in `folder` (a run's `replay/`): `replay_<generation>.journal`, each a sequence of records,
a snapshot of the whole buffer first, then appends (the rows stored since). A checkpoint refers
to (file, length in bytes): loading reads that file up to that length, so records written after
the checkpoint (a kill between the journal write and `latest.pt`) are ignored, and cut off by the
next append. When a generation's appends would pass the buffer's capacity, the next sync starts a
new generation with a snapshot; files other than the current one are deleted only after
`latest.pt` refers to it (`commit`). Disk: at most about twice the buffer, three times while a
new snapshot is written.

Record layout (little-endian): a HEADER (magic, kind, dim, rows, then head/count/total_stored of
the buffer after applying the record, then a CRC-32 of header and payload) and `rows x dim`
float32 samples. Reading parses only these numbers and raw floats: nothing in a journal can run
code, and every size is checked against the buffer before memory is allocated.
"""

from __future__ import annotations

import os
import re
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import torch

from ase_humanoid.errors import CheckpointError
from ase_humanoid.utils.atomic_file import write_atomic

MAGIC = b"ASERPLJ1"
HEADER = struct.Struct("<8sB3xIQQQQI")  # magic, kind, dim, rows, head, count, total_stored, crc32
SNAPSHOT, APPEND = 0, 1
FILE_PATTERN = re.compile(r"replay_(\d{1,9})\.journal")


def journal_name(generation: int) -> str:
    return f"replay_{generation}.journal"


def _record(kind: int, rows: torch.Tensor, head: int, count: int, total_stored: int) -> tuple[bytes, np.ndarray]:
    """(header bytes, payload array) of one record; `rows` is `[n, dim]`."""
    payload = np.ascontiguousarray(rows.detach().to("cpu", torch.float32).numpy(), dtype="<f4")
    fields = (MAGIC, kind, payload.shape[1], payload.shape[0], head, count, total_stored)
    return HEADER.pack(*fields, _crc(fields, payload)), payload


def _crc(fields: tuple, payload: np.ndarray) -> int:
    return zlib.crc32(_bytes(payload), zlib.crc32(HEADER.pack(*fields, 0)))


def _bytes(payload: np.ndarray) -> np.ndarray:
    """The payload as a flat uint8 view (file I/O and zlib take any shape, zero rows included)."""
    return payload.view(np.uint8).reshape(-1)


class BufferJournal:
    """Writes a SampleBuffer's changes to `folder` at each checkpoint (see the module docstring).

    Use: `ref = journal.sync(buffer)` before writing the checkpoint that stores `ref`, then
    `journal.commit()` once that checkpoint is on disk. After a resume from a checkpoint in the
    same folder, `adopt(ref)` continues its generation.
    """

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self.generation: int | None = None
        self.length = 0  # bytes of the current file that belong to synced records
        self.rows_since_snapshot = 0
        self.synced_total = 0  # buffer.total_stored at the last sync

    @property
    def path(self) -> Path | None:
        return None if self.generation is None else self.folder / journal_name(self.generation)

    def reference(self, buffer) -> dict:
        """What a checkpoint stores: the file, its length and the buffer state it leads to."""
        return {"file": self.path.name, "length": self.length, "rows_since_snapshot": self.rows_since_snapshot,
                "head": buffer.head, "count": buffer.count, "total_stored": buffer.total_stored}

    def adopt(self, ref: dict) -> None:
        """Continue the generation a resumed checkpoint refers to (its buffer was restored from it)."""
        self.generation = int(FILE_PATTERN.fullmatch(ref["file"]).group(1))
        self.length = int(ref["length"])
        self.rows_since_snapshot = int(ref["rows_since_snapshot"])
        self.synced_total = int(ref["total_stored"])

    def sync(self, buffer) -> dict:
        """Write what `buffer` stored since the last sync; returns the reference for the checkpoint."""
        self.folder.mkdir(parents=True, exist_ok=True)
        new_rows = buffer.total_stored - self.synced_total
        if (self.generation is None or new_rows < 0 or new_rows >= buffer.capacity
                or self.rows_since_snapshot + new_rows > buffer.capacity):
            self._write_snapshot(buffer)
        elif new_rows > 0:
            self._append(buffer, new_rows)
        self.synced_total = buffer.total_stored
        return self.reference(buffer)

    def commit(self) -> list[Path]:
        """Delete journal files other than the current one; call after the checkpoint that refers
        to the current one is on disk. Returns the deleted paths."""
        stale = [path for generation, path in self._files().items() if generation != self.generation]
        for path in stale:
            path.unlink(missing_ok=True)
        return stale

    def _files(self) -> dict[int, Path]:
        """The journal files in the folder, by generation."""
        return {int(m.group(1)): path for path in self.folder.glob("replay_*.journal")
                if (m := FILE_PATTERN.fullmatch(path.name))}

    def _write_snapshot(self, buffer) -> None:
        # A new number, above any file present: never replace a file a checkpoint may refer to.
        self.generation = max([*self._files(), self.generation or 0]) + 1
        header, payload = _record(SNAPSHOT, buffer.samples[: buffer.count], buffer.head, buffer.count,
                                  buffer.total_stored)

        def write(f):
            f.write(header)
            f.write(_bytes(payload))
        write_atomic(self.path, write)
        self.length = len(header) + payload.nbytes
        self.rows_since_snapshot = 0

    def _append(self, buffer, new_rows: int) -> None:
        slots = (buffer.head - new_rows + torch.arange(new_rows, device=buffer.samples.device)) % buffer.capacity
        header, payload = _record(APPEND, buffer.samples[slots], buffer.head, buffer.count, buffer.total_stored)
        with open(self.path, "r+b") as f:
            f.truncate(self.length)  # drop records no checkpoint refers to (written before a kill)
            f.seek(self.length)
            f.write(header)
            f.write(_bytes(payload))
            f.flush()
            os.fsync(f.fileno())
        self.length += len(header) + payload.nbytes
        self.rows_since_snapshot += new_rows


def _read_header(f, path: Path, offset: int, length: int, dim: int, capacity: int) -> tuple:
    """The header fields of the record at `offset`, checked against the buffer and `length`."""
    raw = f.read(HEADER.size)
    if len(raw) < HEADER.size or offset + HEADER.size > length:
        raise CheckpointError(f"replay journal '{path}': record at byte {offset} is cut short")
    fields = HEADER.unpack(raw)
    magic, kind, rec_dim, rows = fields[:4]
    problem = (
        "not a replay journal record" if magic != MAGIC
        else f"unknown record kind {kind}" if kind not in (SNAPSHOT, APPEND)
        else "does not start with a snapshot" if offset == 0 and kind != SNAPSHOT
        else f"samples of {rec_dim} floats, the buffer holds {dim}" if rec_dim != dim
        else f"{rows} rows, the buffer holds {capacity}" if rows > capacity
        else f"ends past the checkpoint's {length} bytes" if offset + HEADER.size + rows * dim * 4 > length
        else None)
    if problem:
        raise CheckpointError(f"replay journal '{path}': record at byte {offset}: {problem}")
    return fields


def restore_buffer(buffer, folder: str | os.PathLike, ref: dict, checkpoint: str | os.PathLike = "") -> None:
    """Fill `buffer` (empty, of the checkpoint's capacity and dim) from the journal `ref` names.

    Reads the file up to `ref["length"]` only and never writes: every rank of a distributed run
    may restore from rank 0's journal. Errors name the checkpoint, the file and the problem.
    """
    where = f"checkpoint '{checkpoint}'" if checkpoint else "checkpoint"
    name = ref.get("file") if isinstance(ref, dict) else None
    if not isinstance(name, str) or not FILE_PATTERN.fullmatch(name):
        raise CheckpointError(f"{where}: its replay journal reference {repr(ref)[:200]} does not name a "
                              "replay_<n>.journal file")
    path = Path(folder) / name
    length = ref.get("length")
    if not isinstance(length, int):
        raise CheckpointError(f"{where}: its replay journal length {length!r} is not a whole number")
    if not path.is_file():
        raise CheckpointError(
            f"{where} keeps its AMP replay buffer in '{path}', which does not exist. latest.pt needs the "
            f"run folder's replay/ beside it (copy the whole run folder), or resume with "
            f"train.params.checkpoint_amp_buffers=false to start with an empty replay buffer")
    size = path.stat().st_size
    if length < HEADER.size or size < length:
        raise CheckpointError(f"{where}: replay journal '{path}' holds {size} bytes, the checkpoint "
                              f"refers to {length} (truncated or replaced?)")
    dim, capacity = buffer.samples.shape[1], buffer.capacity
    offset = 0
    with open(path, "rb") as f:
        while offset < length:
            magic, kind, rec_dim, rows, head, count, total, crc = _read_header(f, path, offset, length, dim, capacity)
            # A snapshot is read straight into a CPU buffer: no second copy of up to ~1 GB.
            direct = kind == SNAPSHOT and buffer.samples.device.type == "cpu" and sys.byteorder == "little"
            payload = buffer.samples[:rows].numpy() if direct else np.empty((rows, dim), dtype="<f4")
            if f.readinto(_bytes(payload)) != payload.nbytes:
                raise CheckpointError(f"replay journal '{path}': record at byte {offset} is cut short")
            fields = (magic, kind, rec_dim, rows, head, count, total)
            if _crc(fields, payload) != crc:
                raise CheckpointError(f"replay journal '{path}': record at byte {offset} is corrupt "
                                      "(checksum mismatch)")
            rows_t = torch.from_numpy(payload)
            if kind == SNAPSHOT:
                if count != rows or head >= max(capacity, 1) or total < count:
                    raise CheckpointError(f"replay journal '{path}': snapshot at byte {offset} has "
                                          f"head {head}, count {count} for {rows} rows")
                if not direct:
                    buffer.samples[:rows] = rows_t.to(buffer.samples.device)
                buffer.head, buffer.count, buffer.total_stored = head, count, total
            else:
                buffer.store(rows_t.to(buffer.samples.device))
                if (buffer.head, buffer.count, buffer.total_stored) != (head, count, total):
                    raise CheckpointError(f"replay journal '{path}': record at byte {offset} does not "
                                          "continue the records before it")
            offset += HEADER.size + payload.nbytes
    expected = (ref.get("head"), ref.get("count"), ref.get("total_stored"))
    if (buffer.head, buffer.count, buffer.total_stored) != expected:
        raise CheckpointError(f"{where}: replay journal '{path}' leads to head/count/total "
                              f"{(buffer.head, buffer.count, buffer.total_stored)}, the checkpoint says {expected}")
