"""The heightfield collision fast path (ase_humanoid/sim/hfield_collision.{py,c}): native MuJoCo
worlds on terrain step to bitwise the same states with it as with MuJoCo's own routine, and
without a compiler (or when switched off) MuJoCo's routine stays, with a warning."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from ase_humanoid.envs import make_env
from ase_humanoid.sim import hfield_collision
from ase_humanoid.terrain import TILE_KINDS

WALK = Path(__file__).resolve().parents[1] / "motions" / "amp_humanoid" / "amp_humanoid_walk.npy"
TERRAIN = dict(name="mixed", kinds=list(TILE_KINDS), kind_weights=[1.0] * len(TILE_KINDS), num_rows=2,
               num_cols=len(TILE_KINDS), tile_size=4.0, border_size=1.0, horizontal_scale=0.25, difficulty_min=0.5)
STEPS, SUBSTEPS = 40, 4
needs_compiler = pytest.mark.skipif(shutil.which(os.environ.get("CC") or "cc") is None,
                                    reason="no C compiler (cc or $CC): the fast path is not built here")


def heightfield_row():
    """MuJoCo's collision functions for heightfield : convex geom pairs, by table index."""
    table = hfield_collision._collision_table()
    return {index: table[index] for index in hfield_collision.heightfield_slots().values()}


def rollout(sim, start: dict, targets: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """States `[T, N, nstate]` and contact forces `[T, N, B, 3]` from `start` under PD targets `[T, N, D]`."""
    sim.load_state_dict(start)
    states, forces = [], []
    for step_targets in targets:
        sim.set_pd_targets(step_targets)
        sim.step(SUBSTEPS)
        states.append(sim.state_dict()["state"].numpy().copy())
        forces.append(sim.state.contact_forces.numpy().copy())
    return np.stack(states), np.stack(forces)


@needs_compiler
def test_fast_path_builds_against_the_installed_mujoco(monkeypatch, tmp_path):
    monkeypatch.setenv(hfield_collision.CACHE_ENV, str(tmp_path))
    library = hfield_collision.build_library()
    assert library.parent == tmp_path and library.name.startswith(f"hfield_collision-{mujoco.__version__}-")
    assert hfield_collision.build_library() == library  # cached: built once per MuJoCo version and source
    loaded = ctypes.CDLL(str(library))
    assert loaded.ase_convex_hfield and loaded.ase_set_mujoco_collider


@needs_compiler
def test_fast_path_steps_worlds_exactly_as_mujoco_does():
    env = make_env("HumanoidAMP", num_envs=8, sim="mujoco", num_threads=2, seed=0, motion_file=str(WALK),
                   terrain=TERRAIN)
    assert hfield_collision.is_installed(), "a native env on terrain installs the fast path"
    ours = ctypes.cast(hfield_collision._installed["lib"].ase_convex_hfield, ctypes.c_void_p).value
    assert set(heightfield_row().values()) == {ours}
    env.reset()
    sim = env.sim
    start = sim.state_dict()
    generator = torch.Generator().manual_seed(0)
    default = sim.state.dof_pos.clone()
    # wild PD targets: the humanoids fall, so hands, knees and torsos meet the ground too
    targets = default + 1.5 * (2 * torch.rand(STEPS, *default.shape, generator=generator) - 1)
    fast_states, fast_forces = rollout(sim, start, targets)
    hfield_collision.uninstall_heightfield_fast_path()
    try:
        assert set(heightfield_row().values()).isdisjoint({ours})
        stock_states, stock_forces = rollout(sim, start, targets)
    finally:
        assert hfield_collision.install_heightfield_fast_path()
    feet = [env.robot.body_names.index(name) for name in env.robot.contact_body_names]
    others = [b for b in range(env.robot.num_bodies) if b not in feet]
    assert np.abs(stock_forces[:, :, feet]).sum() > 0 and np.abs(stock_forces[:, :, others]).sum() > 0
    np.testing.assert_array_equal(fast_states, stock_states)
    np.testing.assert_array_equal(fast_forces, stock_forces)


@needs_compiler
def test_without_a_compiler_mujocos_routine_stays(monkeypatch, tmp_path):
    hfield_collision.uninstall_heightfield_fast_path()
    try:
        stock = heightfield_row()
        monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
        monkeypatch.setenv(hfield_collision.CACHE_ENV, str(tmp_path / "cache"))
        with pytest.warns(RuntimeWarning, match="MuJoCo's own routine runs.*no C compiler"):
            assert not hfield_collision.install_heightfield_fast_path()
        assert heightfield_row() == stock and not hfield_collision.is_installed()
        assert not list((tmp_path / "cache").glob("*.so"))  # no half-built library left behind
        hfield_collision.uninstall_heightfield_fast_path()
        monkeypatch.setenv(hfield_collision.DISABLE_ENV, "1")
        with pytest.warns(RuntimeWarning, match=f"{hfield_collision.DISABLE_ENV}=1"):
            assert not hfield_collision.install_heightfield_fast_path()  # switched off: no build
        assert heightfield_row() == stock
    finally:
        monkeypatch.undo()
        hfield_collision.uninstall_heightfield_fast_path()
        assert hfield_collision.install_heightfield_fast_path()


@needs_compiler
@pytest.mark.parametrize("damage", ["garbage", "truncated", "no_hash"])
def test_a_damaged_cached_library_is_rebuilt_before_it_is_loaded(monkeypatch, tmp_path, damage):
    """A cached file that is not the build its recorded hash names (garbage, cut short, which
    crashed the process with SIGBUS, or with no hash) is built again, never loaded as it is."""
    monkeypatch.setenv(hfield_collision.CACHE_ENV, str(tmp_path))
    library = hfield_collision.build_library()
    good = library.read_bytes()
    if damage == "garbage":
        library.write_bytes(b"not a shared library")
    elif damage == "truncated":
        library.write_bytes(good[: len(good) // 2])
    else:
        (tmp_path / (library.name + ".sha256")).unlink()
    hfield_collision.uninstall_heightfield_fast_path()
    try:
        assert hfield_collision.install_heightfield_fast_path()
        assert library.read_bytes() == good
    finally:
        monkeypatch.undo()
        hfield_collision.uninstall_heightfield_fast_path()
        assert hfield_collision.install_heightfield_fast_path()


PLANTED = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *f = fopen(MARKER, "w"); if (f) { fputs("ran", f); fclose(f); }
}
int ase_convex_hfield(void) { return 0; }
void ase_set_mujoco_collider(int t, void *f) { (void)t; (void)f; }
"""


@needs_compiler
@pytest.mark.parametrize("with_hash", [False, True])
def test_a_library_planted_in_the_cache_never_runs(monkeypatch, tmp_path, with_hash):
    """A shared object with a constructor placed under the cache's file name (with the expected
    symbols, and even with a hash file made to match it) must not run: a build of ours replaces
    it unless it is ours, and a cache folder others can write to is not used at all."""
    cache, marker = tmp_path / "cache", tmp_path / "marker"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv(hfield_collision.CACHE_ENV, str(cache))
    target = hfield_collision.library_path()
    source = tmp_path / "planted.c"
    source.write_text(PLANTED)
    compiler = os.environ.get("CC") or "cc"
    subprocess.run([compiler, "-shared", "-fPIC", f'-DMARKER="{marker}"', str(source), "-o", str(target)], check=True)
    if with_hash:  # a hash that matches: only the file modes and the owner's build protect then
        target.chmod(0o777)
        (cache / (target.name + ".sha256")).write_text(hashlib.sha256(target.read_bytes()).hexdigest())
    hfield_collision.uninstall_heightfield_fast_path()
    try:
        assert hfield_collision.install_heightfield_fast_path()
        assert not marker.exists()
        hfield_collision.uninstall_heightfield_fast_path()
        cache.chmod(0o777)  # a folder anyone may write into: refused, MuJoCo's routine stays
        with pytest.warns(RuntimeWarning, match="writable by others"):
            assert not hfield_collision.install_heightfield_fast_path()
        assert not marker.exists()
    finally:
        cache.chmod(0o700)
        monkeypatch.undo()
        hfield_collision.uninstall_heightfield_fast_path()
        assert hfield_collision.install_heightfield_fast_path()
