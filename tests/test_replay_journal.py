"""The AMP replay journal: latest.pt refers to run_dir/replay/ instead of holding the replay
samples. Exact round trips through appends, wrap-around and new generations; records written
after the checkpoint (a kill) are ignored and cut off; damaged or hostile files are clear errors;
a run resumes from the journal exactly, and a kill between the journal write and latest.pt
loses nothing."""

import struct

import pytest
import torch

from ase_humanoid.agents.buffers import ReplayBuffer
from ase_humanoid.agents.replay_journal import HEADER, MAGIC, SNAPSHOT, BufferJournal, restore_buffer
from ase_humanoid.builders import build_agent, build_env
from ase_humanoid.config import compose_config
from ase_humanoid.errors import CheckpointError
from ase_humanoid.runner import Runner
from ase_humanoid.utils.checkpoint import load_checkpoint

CAPACITY, DIM = 300, 5


def offer(buffer: ReplayBuffer, gen: torch.Generator, n: int = 64) -> None:
    buffer.insert(torch.randn(n, DIM, generator=gen), gen)


def fresh(folder, seed: int) -> tuple[torch.Generator, ReplayBuffer, BufferJournal]:
    """(a seeded generator, an empty buffer, a journal writing to `folder`)."""
    return torch.Generator().manual_seed(seed), ReplayBuffer(CAPACITY, DIM, 0.25, "cpu"), BufferJournal(folder)


def restored(folder, ref) -> ReplayBuffer:
    buffer = ReplayBuffer(CAPACITY, DIM, 0.25, "cpu")
    restore_buffer(buffer, folder, ref)
    return buffer


def assert_same(a: ReplayBuffer, b: ReplayBuffer) -> None:
    assert (a.head, a.count, a.total_stored) == (b.head, b.count, b.total_stored)
    assert torch.equal(a.samples, b.samples)


def test_every_checkpoint_restores_the_buffer_bit_for_bit(tmp_path):
    gen, buffer, journal = fresh(tmp_path, seed=0)
    files = set()
    for _ in range(80):  # fills, wraps around the ring many times, starts new generations
        offer(buffer, gen)
        ref = journal.sync(buffer)
        journal.commit()
        assert_same(restored(tmp_path, ref), buffer)
        present = [p.name for p in tmp_path.glob("replay_*.journal")]
        assert present == [ref["file"]]  # older generations go once latest.pt refers to the new one
        files.add(ref["file"])
        # A generation never holds more than a snapshot plus one buffer's worth of appends.
        assert ref["length"] <= 2 * (CAPACITY * DIM * 4 + HEADER.size * 40)
    assert len(files) >= 3


def test_nothing_new_writes_nothing(tmp_path):
    gen, buffer, journal = fresh(tmp_path, seed=1)
    offer(buffer, gen)
    first = journal.sync(buffer)
    assert journal.sync(buffer) == first


def test_records_after_the_checkpoint_are_ignored_then_cut_off(tmp_path):
    gen, buffer, journal = fresh(tmp_path, seed=2)
    for _ in range(6):
        offer(buffer, gen)
    checkpoint_ref = journal.sync(buffer)
    at_checkpoint = restored(tmp_path, checkpoint_ref)
    offer(buffer, gen)
    journal.sync(buffer)  # written, then the process dies before latest.pt refers to it
    path = tmp_path / checkpoint_ref["file"]
    assert path.stat().st_size > checkpoint_ref["length"]
    assert_same(restored(tmp_path, checkpoint_ref), at_checkpoint)

    # The resumed run continues the same file from the checkpoint's length.
    resumed = restored(tmp_path, checkpoint_ref)
    journal = BufferJournal(tmp_path)
    journal.adopt(checkpoint_ref)
    offer(resumed, torch.Generator().manual_seed(9))
    ref = journal.sync(resumed)
    assert ref["file"] == checkpoint_ref["file"] and path.stat().st_size == ref["length"]
    assert_same(restored(tmp_path, ref), resumed)


def test_a_torn_append_is_ignored_and_overwritten(tmp_path):
    gen, buffer, journal = fresh(tmp_path, seed=6)
    for _ in range(2):
        offer(buffer, gen)
    checkpoint_ref = journal.sync(buffer)
    path = tmp_path / checkpoint_ref["file"]
    with open(path, "ab") as f:  # a kill or a full disk in the middle of the next append
        f.write(MAGIC + b"\x01\x00\x00")
    resumed = restored(tmp_path, checkpoint_ref)
    journal = BufferJournal(tmp_path)
    journal.adopt(checkpoint_ref)
    offer(resumed, gen)
    assert_same(restored(tmp_path, journal.sync(resumed)), resumed)


def test_kill_while_starting_a_new_generation_keeps_the_old_one(tmp_path):
    gen, buffer, journal = fresh(tmp_path, seed=3)
    offer(buffer, gen)
    checkpoint_ref = journal.sync(buffer)
    journal.commit()
    at_checkpoint = restored(tmp_path, checkpoint_ref)
    buffer.store(torch.randn(CAPACITY, DIM, generator=gen))  # a whole buffer of new rows: snapshot
    assert journal.sync(buffer)["file"] != checkpoint_ref["file"]  # no commit: the kill comes here
    assert_same(restored(tmp_path, checkpoint_ref), at_checkpoint)

    journal = BufferJournal(tmp_path)
    journal.adopt(checkpoint_ref)
    offer(at_checkpoint, gen)
    ref = journal.sync(at_checkpoint)
    assert journal.commit() and [p.name for p in tmp_path.glob("replay_*.journal")] == [ref["file"]]
    assert_same(restored(tmp_path, ref), at_checkpoint)


@pytest.fixture
def journal_ref(tmp_path):
    gen, buffer, journal = fresh(tmp_path, seed=4)
    for _ in range(3):
        offer(buffer, gen)
        ref = journal.sync(buffer)
    return ref


def test_a_missing_journal_names_the_file_and_the_way_out(tmp_path, journal_ref):
    (tmp_path / journal_ref["file"]).unlink()
    with pytest.raises(CheckpointError, match="replay_1.journal.*does not exist.*checkpoint_amp_buffers=false"):
        restored(tmp_path, journal_ref)


def test_a_flipped_byte_is_a_checksum_error(tmp_path, journal_ref):
    path = tmp_path / journal_ref["file"]
    data = bytearray(path.read_bytes())
    data[-7] ^= 0x10  # inside the last record's samples
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupt.*checksum"):
        restored(tmp_path, journal_ref)


def test_a_truncated_journal_is_named(tmp_path, journal_ref):
    path = tmp_path / journal_ref["file"]
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match=f"{path.name}.*holds .* bytes, the checkpoint refers to"):
        restored(tmp_path, journal_ref)


@pytest.mark.parametrize("bad_file", ["../../etc/passwd", "replay_1.journal/..", "latest.pt", 7])
def test_a_reference_outside_the_replay_folder_is_refused(tmp_path, journal_ref, bad_file):
    with pytest.raises(CheckpointError, match="does not name a replay_<n>.journal file"):
        restored(tmp_path, {**journal_ref, "file": bad_file})


def test_hostile_record_sizes_are_refused_before_allocating(tmp_path):
    # A record claiming 10^12 rows must fail on the header, not try to allocate terabytes.
    header = HEADER.pack(MAGIC, SNAPSHOT, DIM, 10**12, 0, 10**12, 10**12, 0)
    (tmp_path / "replay_1.journal").write_bytes(header + b"\0" * 64)
    ref = {"file": "replay_1.journal", "length": HEADER.size + 64, "head": 0, "count": 0, "total_stored": 0}
    with pytest.raises(CheckpointError, match="1000000000000 rows, the buffer holds 300"):
        restored(tmp_path, ref)
    (tmp_path / "replay_1.journal").write_bytes(b"PK\x03\x04" + b"\0" * 200)
    with pytest.raises(CheckpointError, match="not a replay journal record"):
        restored(tmp_path, {**ref, "length": 200})


def test_a_journal_of_another_observation_size_is_refused(tmp_path, journal_ref):
    with pytest.raises(CheckpointError, match=f"samples of {DIM} floats, the buffer holds {DIM + 1}"):
        restore_buffer(ReplayBuffer(CAPACITY, DIM + 1, 0.25, "cpu"), tmp_path, journal_ref)


def test_header_layout_is_fixed():
    # magic 8, kind 1 + 3 pad, dim 4, rows/head/count/total 4 x 8, crc 4: files stay readable.
    assert HEADER.size == 52 and struct.calcsize("<8sB3xIQQQQI") == 52


# ----------------------------------------------------------------------------- through a run

def small_amp(tmp_path, **keys):
    overrides = ["task=HumanoidAMP", "num_envs=4", "seed=5", "sim=mujoco", "device=cpu",
                 "train.params.amp_obs_demo_buffer_size=512", "train.params.amp_replay_buffer_size=200", "train.params.amp_replay_keep_prob=0.1",
                 "train.params.actor_units=[32]", "train.params.critic_units=[32]",
                 "train.params.disc_units=[32]", "train.params.mini_epochs=1",
                 *[f"{k}={v}" for k, v in keys.items()]]
    cfg = compose_config(overrides)
    env = build_env(cfg)
    return Runner(env, build_agent(cfg, env), tmp_path, config={}, max_epochs=0, save_every=0,
                  quality_every=0)


def train_to(runner: Runner, epochs: int) -> None:
    runner.max_epochs = epochs
    runner.learn()


def test_latest_pt_refers_to_the_journal_and_a_resume_continues_exactly(tmp_path):
    straight = small_amp(tmp_path / "straight")
    train_to(straight, 8)  # 4 envs x 32 steps: the 200-row buffer fills and keeps ~13 rows an epoch after

    killed = small_amp(tmp_path / "killed")
    train_to(killed, 5)
    state = load_checkpoint(tmp_path / "killed" / "latest.pt")["agent"]["replay_buffer"]
    assert "samples" not in state and state["journal"]["file"].startswith("replay_")
    # Epoch 6 trains and writes its rows to the journal; the process dies before latest.pt is replaced.
    killed.save = lambda force=False: killed.agent.state_dict()
    train_to(killed, 6)
    journal = tmp_path / "killed" / "replay" / state["journal"]["file"]
    assert journal.stat().st_size > state["journal"]["length"]  # rows no checkpoint refers to

    resumed = small_amp(tmp_path / "killed")
    resumed.resume(tmp_path / "killed")
    assert resumed.epoch == 5
    train_to(resumed, 8)
    a, b = straight.agent.replay_buffer, resumed.agent.replay_buffer
    assert (a.head, a.count, a.total_stored) == (b.head, b.count, b.total_stored) and a.is_full
    assert torch.equal(a.samples, b.samples)
    for (name, p), q in zip(straight.agent.model.state_dict().items(), resumed.agent.model.state_dict().values()):
        assert torch.equal(p, q), name


def test_amp_replay_journal_false_keeps_the_samples_in_latest_pt(tmp_path):
    runner = small_amp(tmp_path, **{"train.params.amp_replay_journal": "false"})
    train_to(runner, 1)
    state = load_checkpoint(tmp_path / "latest.pt")["agent"]["replay_buffer"]
    assert "journal" not in state and state["samples"].shape == (128, runner.agent.amp_obs_dim)
    assert not (tmp_path / "replay").exists()


def test_agent_load_of_a_journaled_state_says_how_to_load_it(tmp_path):
    runner = small_amp(tmp_path)
    train_to(runner, 1)
    state = load_checkpoint(tmp_path / "latest.pt")
    with pytest.raises(CheckpointError, match="replay journal.*train.py resume=true"):
        runner.agent.load_state_dict(state["agent"])


def test_latest_pt_without_its_replay_folder(tmp_path):
    runner = small_amp(tmp_path / "run")
    train_to(runner, 2)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "latest.pt").write_bytes((tmp_path / "run" / "latest.pt").read_bytes())
    with pytest.raises(CheckpointError, match=r"copy/replay/replay_1.journal', which does not exist.*copy the whole"):
        small_amp(tmp_path / "other").resume(copy / "latest.pt")

    # Asked to do without the buffers, the resume continues with an empty replay buffer.
    resumed = small_amp(tmp_path / "other", **{"train.params.checkpoint_amp_buffers": "false"})
    resumed.resume(copy / "latest.pt")
    assert resumed.epoch == 2 and len(resumed.agent.replay_buffer) == 0
    for (name, p), q in zip(runner.agent.model.state_dict().items(), resumed.agent.model.state_dict().values()):
        assert torch.equal(p, q), name
