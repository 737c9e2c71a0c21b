"""Terrain: tile generation, height lookups, mesh files, MuJoCo heightfields on both backends,
envs on terrain (placement, terminations, height scan, curriculum), the terrain tool.

Physics checks drop a probe sphere (it rests at ground + radius on level ground) on the
heightfield at sample points of every tile kind; a box probe is not used on MuJoCo Warp, whose
box-heightfield collisions were wrong here (mujoco-warp 4.0: boxes jumped or sank; spheres and
capsules agree with native MuJoCo).
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
import torch
from project_scripts import load_script

from ase_humanoid.envs import make_env
from ase_humanoid.envs import terrain_placement as placement
from ase_humanoid.envs.terminations import fall_termination
from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.robots import load_robot
from ase_humanoid.sim import PropSpec, make_backend
from ase_humanoid.terrain import (
    TILE_KINDS,
    FlatGround,
    HeightMap,
    bilinear_height,
    build_terrain,
    height_scan,
    height_scan_offsets,
    terrain_config,
)
from ase_humanoid.terrain.mesh import heightfield_mesh, load_terrain_mesh, terrain_from_mesh_file
from ase_humanoid.terrain.tiles import slope_tile, stairs_tile

WALK = Path(__file__).resolve().parents[1] / "motions" / "amp_humanoid" / "amp_humanoid_walk.npy"
FAST = dict(num_threads=1, seed=0)
PROBE_RADIUS = 0.1
PROBE = PropSpec("probe", "sphere", (PROBE_RADIUS,), 500.0)
ALL_KINDS = dict(name="mixed", kinds=list(TILE_KINDS), kind_weights=[1.0] * len(TILE_KINDS), num_rows=2,
                 num_cols=len(TILE_KINDS), tile_size=6.0, border_size=2.0)


@pytest.fixture(scope="module")
def mixed():
    return build_terrain(ALL_KINDS)


@pytest.fixture(scope="module")
def robot():
    return load_robot("amp_humanoid")


# ---- generation ------------------------------------------------------------------------------

def test_grid_layout_kinds_levels_and_seed(mixed):
    scale = mixed.horizontal_scale
    assert mixed.heights.shape == (2 * 20 + 2 * 60 + 1, 2 * 20 + 8 * 60 + 1)
    assert mixed.heights.dtype == np.float32
    assert list(mixed.tile_kinds[0]) == list(TILE_KINDS)  # one column per kind at equal weights
    assert mixed.tile_difficulty[:, 0].tolist() == [0.0, 1.0]
    np.testing.assert_allclose(mixed.tile_origins[1, 3, :2], (1.5 * 6.0, 3.5 * 6.0))
    assert np.isfinite(mixed.heights).all()
    # the border is flat, and the same seed gives the same terrain, another seed another one
    assert not mixed.heights[: int(2.0 / scale)].any()
    np.testing.assert_array_equal(build_terrain(ALL_KINDS).heights, mixed.heights)
    assert not np.array_equal(build_terrain({**ALL_KINDS, "seed": 1}).heights, mixed.heights)
    assert build_terrain({"name": "flat"}) is None


def test_slopes_and_stairs_have_their_difficulty():
    n, scale, platform = 80, 0.1, 2.0
    top = slope_tile(n, scale, 1.0, 0.4, platform, up=False)
    assert top[n // 2, n // 2] == pytest.approx(0.4 * (4.0 - 1.0))  # centre platform, edges at 0
    assert top[0, n // 2] == 0.0 and slope_tile(n, scale, 1.0, 0.4, platform, up=True)[n // 2, n // 2] < -1.0
    # rise over run along the ramp = the slope
    assert (top[20, n // 2] - top[10, n // 2]) / (10 * scale) == pytest.approx(0.4)
    steps = stairs_tile(n, scale, 1.0, 0.2, 0.5, platform, up=True)
    assert set(np.round(np.unique(steps), 6)) == {round(-0.2 * k, 6) for k in range(7)}
    easy = stairs_tile(n, scale, 0.0, 0.2, 0.5, platform, up=False)
    assert easy.max() == pytest.approx(0.03 * 6)


def test_mixed_default_spacing_puts_stairs_and_rough_knots_on_samples():
    """cfg/terrain/mixed.yaml's spacing is chosen so that every stair step spans the same whole
    number of samples (equal treads; at 0.2 m the 0.5 m steps alternate 3 and 2 samples) and the
    rough tiles' knots are samples (their peaks kept, not cut between samples)."""
    from omegaconf import OmegaConf

    from ase_humanoid.paths import CFG_DIR
    from ase_humanoid.terrain.tiles import rough_tile

    cfg = terrain_config(OmegaConf.to_container(OmegaConf.load(CFG_DIR / "terrain" / "mixed.yaml")))
    scale, n = cfg.horizontal_scale, int(round(cfg.tile_size / cfg.horizontal_scale))
    per_step = cfg.step_width / scale
    assert per_step == pytest.approx(round(per_step))
    # from the tile's edge to its platform, along the middle row: runs of equal height
    line = stairs_tile(n, scale, 1.0, cfg.step_height_max, cfg.step_width, cfg.platform_size, up=False)[:, n // 2]
    ramp = line[: int(round((cfg.tile_size - cfg.platform_size) / 2 / scale))]
    _, run_lengths = np.unique(ramp, return_counts=True)
    assert set(run_lengths.tolist()) == {round(per_step)}
    knots_per_sample = scale / cfg.rough_wavelength
    assert 1 / knots_per_sample == pytest.approx(round(1 / knots_per_sample))
    a = cfg.rough_amplitude
    rough = rough_tile(n, scale, 1.0, np.random.default_rng(0), a, cfg.rough_wavelength)
    knots = np.random.default_rng(0).uniform(-a, a, size=(int(np.ceil(cfg.tile_size / cfg.rough_wavelength)) + 1,) * 2)
    step = round(1 / knots_per_sample)
    np.testing.assert_allclose(rough[::step, ::step], knots[: len(rough[::step]), : len(rough[::step])], atol=1e-12)


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="tile_sise"):
        terrain_config({"name": "rough", "tile_sise": 3})
    with pytest.raises(ConfigError, match="'name'.*bumpy"):
        terrain_config({"name": "bumpy"})
    with pytest.raises(ConfigError, match="kinds"):
        terrain_config({"name": "mixed", "kinds": ["lava"], "kind_weights": [1.0]})
    with pytest.raises(ConfigError, match="mesh_file"):
        terrain_config({"name": "mesh"})
    with pytest.raises(ConfigError, match="heightfield samples"):
        terrain_config({"name": "rough", "num_rows": 100, "num_cols": 100, "horizontal_scale": 0.02})
    with pytest.raises(ConfigError, match="bogus"):  # checked when the env config is made, before any build
        make_env("HumanoidAMP", num_envs=1, state_init="Default", terrain={"name": "rough", "bogus": 1}, **FAST)


def test_hydra_group_defaults_to_flat_and_selects_terrain():
    from ase_humanoid.builders import _terrain_env_options
    from ase_humanoid.config import compose_config

    flat = compose_config(["task=HumanoidAMP"])
    assert flat.terrain.name == "flat" and _terrain_env_options(flat) == {}
    cfg = compose_config(["task=HumanoidAMP", "terrain=mixed", "terrain.num_rows=3", "task.env.height_scan=true"])
    options = _terrain_env_options(cfg)["terrain"]
    assert options["name"] == "mixed" and options["num_rows"] == 3 and cfg.task.env.height_scan is True
    terrain_config(options)  # every key of the YAML is a TerrainConfig key
    with pytest.raises(ConfigError, match="valid choices: flat, mesh, mixed, rough"):
        compose_config(["terrain=bumpy"])


# ---- height lookups --------------------------------------------------------------------------

def test_height_at_is_exact_at_samples_and_on_planes(mixed):
    ground = HeightMap(mixed)
    xs, ys = mixed.sample_positions()
    gen = torch.Generator().manual_seed(0)
    i = torch.randint(0, len(xs), (500,), generator=gen)
    j = torch.randint(0, len(ys), (500,), generator=gen)
    xy = torch.stack([torch.as_tensor(xs)[i], torch.as_tensor(ys)[j]], dim=-1).float()
    heights = ground.height_at(xy)
    assert heights.shape == (500,) and heights.device == ground.device
    # grid_sample's float32 normalised coordinates: within 0.1 mm where a step edge meets a sample
    torch.testing.assert_close(heights, torch.as_tensor(mixed.heights)[i, j], atol=1e-4, rtol=0)
    # a plane h = 0.3 x - 0.2 y is reproduced between samples; outside, the edge height holds
    plane = torch.tensor([[0.3 * x - 0.2 * y for y in range(5)] for x in range(6)])
    points = torch.tensor([[0.25, 0.5], [3.7, 2.2], [4.99, 0.01], [9.0, 1.0]])
    got = bilinear_height(plane, (0.0, 0.0), 1.0, points)
    torch.testing.assert_close(got, torch.tensor([0.075 - 0.1, 1.11 - 0.44, 1.497 - 0.002, 1.5 - 0.2]))
    assert bilinear_height(plane, (0.0, 0.0), 1.0, torch.zeros(3, 7, 2)).shape == (3, 7)
    assert FlatGround().height_at(torch.ones(4, 2)).eq(0).all()


def test_height_at_is_the_bilinear_formula(mixed):
    """The lookup (one grid_sample) gives the heights of the textbook formula to 0.1 mm (float32
    rounding of the normalised coordinates on this 441-sample grid: at most about 0.05 mm), inside
    the grid and clamped outside it, for float32 and float64 points, in the points' dtype."""
    heights = torch.as_tensor(mixed.heights)
    nx, ny = heights.shape
    origin, scale = mixed.origin, mixed.horizontal_scale
    gen = torch.Generator().manual_seed(1)
    for dtype in (torch.float32, torch.float64):
        xy = torch.rand(7, 50, 2, generator=gen, dtype=dtype) * torch.tensor([nx, ny], dtype=dtype) * scale * 1.2
        xy = xy + torch.tensor(origin, dtype=dtype) - 0.1 * nx * scale
        gx = ((xy[..., 0] - origin[0]) / scale).clamp(0.0, nx - 1)
        gy = ((xy[..., 1] - origin[1]) / scale).clamp(0.0, ny - 1)
        ix, iy = gx.floor().clamp(max=nx - 2), gy.floor().clamp(max=ny - 2)
        wx, wy = gx - ix, gy - iy
        ix, iy = ix.long(), iy.long()
        low = heights[ix, iy] + (heights[ix + 1, iy] - heights[ix, iy]) * wx
        high = heights[ix, iy + 1] + (heights[ix + 1, iy + 1] - heights[ix, iy + 1]) * wx
        expected = low + (high - low) * wy
        got = HeightMap(mixed).height_at(xy)
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=0)


def test_height_scan_is_in_the_heading_frame():
    plane = torch.tensor([[0.5 * (x - 10) for _ in range(21)] for x in range(21)])  # h = 0.5 x (world)
    ground = SimpleNamespace(height_at=lambda xy: bilinear_height(plane, (-10.0, -10.0), 1.0, xy))  # a ground
    offsets = height_scan_offsets((3, 1), 1.0)  # behind, at, ahead of the root
    assert offsets.tolist() == [[-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]
    root = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    scan = height_scan(ground, root, torch.tensor([0.0, math.pi / 2]), offsets)
    torch.testing.assert_close(scan[0], torch.tensor([1.5, 1.0, 0.5]))  # facing uphill
    torch.testing.assert_close(scan[1], torch.tensor([1.0, 1.0, 1.0]), atol=1e-5, rtol=0)  # facing across


# ---- meshes ----------------------------------------------------------------------------------

def test_mesh_round_trip_through_a_file(tmp_path):
    small = build_terrain({**ALL_KINDS, "num_rows": 1, "num_cols": 2, "kinds": ["slope_down", "stairs_up"],
                           "kind_weights": [1, 1], "difficulty_max": 1.0, "border_size": 0.5})
    path = tmp_path / "ground.ply"
    heightfield_mesh(small).export(str(path))
    cfg = terrain_config({"name": "mesh", "mesh_file": str(path), "horizontal_scale": 0.1})
    loaded = terrain_from_mesh_file(path, cfg)
    assert loaded.heights.shape == small.heights.shape
    np.testing.assert_allclose(loaded.origin, small.origin, atol=1e-6)
    np.testing.assert_allclose(loaded.heights, small.heights, atol=1e-4)
    via_config = build_terrain({"name": "mesh", "mesh_file": str(path)})  # terrain=mesh terrain.mesh_file=...
    assert via_config.tile_kinds.tolist() == [["mesh"]] and via_config.heights.shape == small.heights.shape
    # a y-up export reads back the same with mesh_up_axis=y
    y_up = heightfield_mesh(small)
    y_up.vertices = y_up.vertices[:, [0, 2, 1]] * [1, 1, -1]
    y_path = tmp_path / "ground_y_up.obj"
    y_up.export(str(y_path))
    vertices, _ = load_terrain_mesh(y_path, up_axis="y")
    np.testing.assert_allclose(vertices[:, 2].max(), small.heights.max(), atol=1e-5)


def test_bad_mesh_files_are_clear_errors(tmp_path):
    def error_for(path, **kwargs):
        with pytest.raises(ModelError) as info:
            load_terrain_mesh(path, **kwargs)
        assert str(path) in str(info.value)
        return str(info.value)

    assert "not found" in error_for(tmp_path / "missing.obj")
    (tmp_path / "notes.txt").write_text("v 0 0 0\n")
    assert "unknown format" in error_for(tmp_path / "notes.txt")
    (tmp_path / "empty.obj").write_bytes(b"")
    assert "empty" in error_for(tmp_path / "empty.obj")
    (tmp_path / "points.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    assert "no triangles" in error_for(tmp_path / "points.obj")
    (tmp_path / "corrupt.glb").write_bytes(b"glTF\x02\x00\x00\x00garbage" * 8)
    assert "could not be read" in error_for(tmp_path / "corrupt.glb")
    # three triangles on one edge: no single surface
    (tmp_path / "fin.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 2 5\n")
    assert "non-manifold" in error_for(tmp_path / "fin.obj")
    grid = heightfield_mesh(build_terrain({**ALL_KINDS, "num_rows": 1, "num_cols": 1, "border_size": 0.0}))
    grid.export(str(tmp_path / "big.stl"))
    assert "more than" in error_for(tmp_path / "big.stl", max_faces=1000)


# ---- physics on both backends ----------------------------------------------------------------

def probe_points(terrain) -> torch.Tensor:
    """Sample points `[k, 2]` on level ground, where a sphere rests at ground + radius: the centre
    of every tile but the rough ones, and a point on an outer stair tread."""
    origins = torch.as_tensor(terrain.tile_origins[..., :2], dtype=torch.float32).reshape(-1, 2)
    kinds = terrain.tile_kinds.reshape(-1)
    level = [origins[k] for k in range(len(kinds)) if kinds[k] != "rough"]
    treads = [origins[k] + torch.tensor([0.0, -2.25]) for k in range(len(kinds)) if "stairs" in kinds[k]]
    return torch.stack(level + treads)


def drop_probes(backend: str, robot, terrain, points: torch.Tensor, steps: int = 20) -> torch.Tensor:
    """Rest height above the generator's ground `[k]` of a sphere dropped at each point."""
    ground = HeightMap(terrain)
    n = len(points)
    sim = make_backend(backend, robot, n, props=[PROBE], terrain=terrain, **({"num_threads": 1} if backend == "mujoco" else {}))
    try:
        ids = torch.arange(n)
        start = torch.cat([points, (ground.height_at(points) + PROBE_RADIUS + 0.05).unsqueeze(-1)], dim=-1)
        zeros = torch.zeros(n, 3)
        sim.set_prop_state("probe", ids, start, torch.tensor([[0.0, 0.0, 0.0, 1.0]]).repeat(n, 1), zeros, zeros)
        for _ in range(steps):
            sim.step(4)
        rest = sim.prop_state("probe").pos.cpu()
    finally:
        sim.close()
    torch.testing.assert_close(rest[:, :2], points, atol=2e-3, rtol=0)  # level ground: it stays put
    return rest[:, 2] - ground.height_at(points)


def test_heightfield_heights_match_the_generator_cpu(robot, mixed):
    clearance = drop_probes("mujoco", robot, mixed, probe_points(mixed))
    torch.testing.assert_close(clearance, torch.full_like(clearance, PROBE_RADIUS), atol=2e-3, rtol=0)


def test_heightfield_heights_match_the_generator_warp(robot):
    pytest.importorskip("mujoco_warp", reason="the 'gpu'/'test' extra (mujoco-warp) is not installed")
    terrain = build_terrain({**ALL_KINDS, "num_rows": 1, "num_cols": 2, "kinds": ["slope_down", "stairs_up"],
                             "kind_weights": [1, 1], "difficulty_min": 1.0})
    points = probe_points(terrain)[:2]  # slope top (1 m up) and stairs bottom (1.2 m down)
    with pytest.warns(UserWarning, match="box-heightfield"):
        clearance = drop_probes("mujoco_warp", robot, terrain, points)
    torch.testing.assert_close(clearance, torch.full_like(clearance, PROBE_RADIUS), atol=2e-3, rtol=0)


def test_heightfield_replaces_the_floor(robot, mixed):
    sim = make_backend("mujoco", robot, 1, terrain=mixed, num_threads=1)
    model = sim.mj_model
    sim.close()
    assert model.nhfield == 1 and mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "scene/floor") == -1
    assert tuple(model.hfield_nrow) == (mixed.heights.shape[1],) and tuple(model.hfield_ncol) == (mixed.heights.shape[0],)
    # every sample, rough ground included: MuJoCo's elevation = geom z + normalised data x size[2]
    geom = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "terrain")
    mujoco_heights = model.geom_pos[geom, 2] + model.hfield_data * model.hfield_size[0, 2]
    np.testing.assert_allclose(mujoco_heights.reshape(mixed.heights.shape[::-1]).T, mixed.heights, atol=1e-5)
    np.testing.assert_allclose(model.geom_pos[geom, :2] - model.hfield_size[0, :2], mixed.origin, atol=1e-9)


def test_character_dropped_on_a_slope_rests_on_it():
    slope = dict(ALL_KINDS, num_rows=1, num_cols=1, kinds=["slope_down"], kind_weights=[1.0], difficulty_min=0.5,
                 difficulty_max=0.5, tile_size=12.0)  # a pyramid of slope 0.2, its top 1 m up
    env = make_env("HumanoidAMP", num_envs=4, state_init="Default", terrain=slope, enable_early_termination=False, **FAST)
    # Spawn on the ramp 3 m from the centre (2 m down it), facing downhill, across (both ways), uphill.
    env.env_origins = env.env_origins + torch.tensor([[3.0, 0, 0], [0, 3.0, 0], [-3.0, 0, 0], [0, -3.0, 0]])
    env.reset()
    assert placement.body_heights_above_ground(env.sim.state.body_pos, env.ground).min() > 0.0
    for _ in range(120):  # 4 s holding the standing pose: it topples onto the ramp and comes to rest
        env.step(torch.zeros(4, env.num_actions))
    s = env.sim.state
    clearance = placement.body_heights_above_ground(s.body_pos, env.ground).min(dim=1).values  # [4]
    assert ((clearance > 0.0) & (clearance < 0.1)).all(), clearance  # lying on the surface, not in or above it
    assert s.body_lin_vel.norm(dim=-1).max() < 0.1  # at rest
    ground_under_root = env.ground.height_at(s.root_pos[:, :2])
    assert ((ground_under_root > 0.05) & (ground_under_root < 0.95)).all(), ground_under_root  # on the ramp
    env.close()


# ---- envs on terrain -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def terrain_env():
    env = make_env("HumanoidAMP", num_envs=16, motion_file=str(WALK), state_init="Random", terrain=ALL_KINDS,
                   height_scan=True, height_scan_size=[5, 3], reset_pool_size=64, **FAST)
    yield env
    env.close()


def deepest_contacts(env) -> list[float]:
    """Per world, the deepest penetration (m, >= 0) of any contact of its current state."""
    model = env.mj_model
    data = mujoco.MjData(model)
    deepest = []
    for i in range(env.num_envs):  # test only: one MuJoCo collision pass per world
        data.qpos[:] = env.render_state(i)
        mujoco.mj_forward(model, data)
        deepest.append(max([-data.contact[c].dist for c in range(data.ncon)], default=0.0))
    return deepest


def test_resets_never_start_inside_the_ground(terrain_env):
    """The walk clip's feet dip a few cm below z = 0 in places; on terrain no state may start
    deeper in the ground than the same state does on the plane (same seed: the same draws)."""
    env = terrain_env
    flat = make_env("HumanoidAMP", num_envs=16, motion_file=str(WALK), state_init="Random", reset_pool_size=64, **FAST)
    env.reseed(0)
    for _ in range(2):
        env.reset()
        flat.reset()
        tiles = {(float(x), float(y)) for x, y in env.env_origins[:, :2].tolist()}
        assert len(tiles) == 16  # spread over every tile
        torch.testing.assert_close(env.sim.state.root_pos[:, :2], env.env_origins[:, :2])
        torch.testing.assert_close(env.sim.state.dof_pos, flat.sim.state.dof_pos)  # the same draws
        on_terrain, on_plane = deepest_contacts(env), deepest_contacts(flat)
        for i, (depth, plane_depth) in enumerate(zip(on_terrain, on_plane)):
            assert depth <= plane_depth + 1e-3, f"env {i} ({env.terrain.tile_kinds.reshape(-1)[i]}) starts " \
                                                f"{depth:.3f} m in the ground, {plane_depth:.3f} m on the plane"
    flat.close()


def test_observations_measure_height_from_the_ground(terrain_env):
    env = terrain_env
    obs = env.reset()
    s = env.sim.state
    above = s.root_pos[:, 2] - env.ground.height_at(s.root_pos[:, :2])
    torch.testing.assert_close(obs[:, 0], above, atol=1e-5, rtol=0)
    assert env.num_obs == 223 + 15
    scan = obs[:, 223:238]
    torch.testing.assert_close(scan, env.height_scan_obs(), atol=1e-6, rtol=0)
    torch.testing.assert_close(scan[:, 7], above, atol=1e-5, rtol=0)  # the middle point is under the root
    obs, _, _, _, info = env.step(torch.zeros(env.num_envs, env.num_actions))
    s = env.sim.state
    torch.testing.assert_close(obs[:, 0], s.root_pos[:, 2] - env.ground.height_at(s.root_pos[:, :2]), atol=1e-5, rtol=0)
    assert info["amp_obs"][:, 0].sub(obs[:, 0]).abs().max() < 1e-5


def test_shared_ground_lookups_equal_separate_ones(terrain_env):
    """A step looks the ground up once per simulator state (body 0 is the root) for the root
    height in the observations and the fall heights, and a reset once for placement and the
    root-height correction: the same heights, bitwise, as a lookup per use."""
    env = terrain_env
    env.reset()
    gen = torch.Generator().manual_seed(2)
    for _ in range(3):
        env.step(2.0 * torch.rand(env.num_envs, env.num_actions, generator=gen) - 1.0)
        s = env.sim.state
        shared = env.ground_under_bodies(s)
        assert env.ground_under_bodies(s) is shared  # looked up once per state
        assert torch.equal(shared, env.ground.height_at(s.body_pos[..., :2]))
        assert torch.equal(env._ground_under_root(s), env.ground.height_at(s.root_pos[:, :2]))
        separate = fall_termination(s.contact_forces, s.body_pos, env.termination_heights, env.non_contact_mask,
                                    env.episode_steps,
                                    body_heights=placement.body_heights_above_ground(s.body_pos, env.ground))
        assert torch.equal(env.compute_terminated(), separate)
    root_pos = torch.rand(9, 3, generator=gen) * 4.0
    body_pos = root_pos[:, None] + torch.rand(9, 15, 3, generator=gen) - 0.5
    origins = env.env_origins[:9]
    offsets, correction = placement.terrain_placement(root_pos, body_pos, origins, env.ground)
    shift = origins[:, :2] - root_pos[:, :2]
    lift = placement.highest_ground(env.ground, body_pos[..., :2] + shift[:, None],
                                    placement.FOOTPRINT_RADIUS).amax(dim=1)
    torch.testing.assert_close(offsets, torch.cat([shift, lift[:, None]], dim=-1), atol=0, rtol=0)
    torch.testing.assert_close(correction, lift - env.ground.height_at(origins[:, :2]), atol=1e-6, rtol=0)


def test_fall_heights_are_measured_from_the_ground():
    body_pos = torch.tensor([[[0.0, 0.0, 1.10], [0.0, 0.0, 1.05]]])  # both bodies over a 1 m step
    force = torch.ones(1, 2, 3)
    mask, steps = torch.tensor([True, True]), torch.tensor([5])
    heights = torch.full((2,), 0.15)
    assert fall_termination(force, body_pos, heights, mask, steps).tolist() == [False]  # from z = 0: fine
    above = body_pos[..., 2] - 1.0
    assert fall_termination(force, body_pos, heights, mask, steps, body_heights=above).tolist() == [True]


def test_curriculum_moves_levels_by_the_legged_gym_rule():
    levels = torch.tensor([0, 2, 3, 1, 0])
    fell = torch.tensor([False, True, False, False, True])
    root = torch.tensor([[3.0, 0, 0], [0, 0, 0], [3.0, 0, 0], [0.5, 0, 0], [0, 0, 0]])
    nxt = placement.next_terrain_levels(levels, fell, root, torch.zeros(5, 3), 1.0, 4, torch.Generator().manual_seed(0))
    assert nxt[[0, 1, 3, 4]].tolist() == [1, 1, 1, 0]  # up / down / stayed on the platform / not below 0
    assert 0 <= int(nxt[2]) < 4  # passed the last level: a random one


def test_flat_terrain_changes_nothing():
    a = make_env("HumanoidAMP", num_envs=3, motion_file=str(WALK), **FAST)
    b = make_env("HumanoidAMP", num_envs=3, motion_file=str(WALK), terrain={"name": "flat"}, **FAST)
    assert b.terrain is None and b.mj_model.nhfield == 0
    for env in (a, b):
        env.obs0 = env.reset()
    torch.testing.assert_close(a.obs0, b.obs0, atol=0, rtol=0)
    actions = torch.rand(3, a.num_actions, generator=torch.Generator().manual_seed(1)) * 2 - 1
    out_a, out_b = a.step(actions), b.step(actions)
    torch.testing.assert_close(out_a[0], out_b[0], atol=0, rtol=0)


# ---- the tool --------------------------------------------------------------------------------

def test_tool_exports_and_previews(tmp_path):
    tool = load_script("tools/terrain.py")
    obj, png = tmp_path / "t.obj", tmp_path / "t.png"
    assert tool.main(["terrain=mixed", "terrain.num_rows=2", "terrain.num_cols=3", "--export", str(obj),
                      "--preview", str(png)]) == 0
    assert obj.stat().st_size > 0 and png.read_bytes()[:4] == b"\x89PNG"
    assert tool.main(["terrain=flat", "--export", str(obj)]) == 2
    assert tool.main(["terrain=mixed", "terrain.tile_sise=3", "--export", str(obj)]) == 2


def test_resume_refuses_another_terrain(tmp_path):
    from ase_humanoid.app import check_resume_config

    flat, rough = {"terrain": {"name": "flat"}}, {"terrain": {"name": "rough", "seed": 0}}
    check_resume_config({}, flat, tmp_path)  # a run saved before terrains existed stood on the plane
    check_resume_config(rough, {"terrain": {"name": "rough", "seed": 0}}, tmp_path)
    with pytest.raises(ConfigError, match=r"terrain.name='rough' \(the run has 'flat'\)"):
        check_resume_config({}, rough, tmp_path)
    with pytest.raises(ConfigError, match="task.env.height_scan="):
        check_resume_config(flat, {**flat, "task": {"env": {"height_scan": True}}}, tmp_path)


def test_task_targets_stand_on_the_ground():
    strike = make_env("HumanoidStrike", num_envs=4, robot="sword_shield", motion_file=None, state_init="Default",
                      terrain={**ALL_KINDS, "kinds": ["slope_down"], "kind_weights": [1.0], "num_cols": 2,
                               "difficulty_min": 1.0}, **FAST)
    strike.reset()
    target = strike.sim.prop_state("target").pos
    ground = placement.highest_ground(strike.ground, target[:, :2], 0.2)
    torch.testing.assert_close(target[:, 2] - ground, torch.full((4,), 0.9), atol=1e-5, rtol=0)
    strike.close()


def test_fall_rates_per_tile_kind_are_counted(terrain_env):
    env = terrain_env
    env.reset()
    env.terrain_metrics()  # clear
    for _ in range(20):
        env.step(torch.zeros(env.num_envs, env.num_actions))  # limp: most envs fall
    metrics = env.terrain_metrics()
    rates = {k: v for k, v in metrics.items() if k.startswith("terrain/fall_rate/")}
    assert rates and all(0.0 <= v <= 1.0 for v in rates.values())
    assert set(k.split("/")[-1] for k in rates) <= set(TILE_KINDS)
    assert max(rates.values()) > 0.0
    assert "terrain/level" in metrics and env.terrain_metrics().keys() == {"terrain/level"}  # cleared


def test_view_motion_plays_clips_over_the_terrain():
    """Kinematic playback on terrain: each clip starts at its tile's spawn point, its path keeps
    the clip's shape in xy, and every frame rests on the ground under it, as the same frame on the
    plane rests on z = 0 (its lowest body origin as high above the ground)."""
    terrain = {**ALL_KINDS, "kinds": ["slope_up", "rough"], "kind_weights": [1.0, 1.0], "num_cols": 2,
               "difficulty_min": 1.0}
    view = make_env("HumanoidViewMotion", num_envs=2, motion_file=str(WALK), terrain=terrain, **FAST)
    flat = make_env("HumanoidViewMotion", num_envs=2, motion_file=str(WALK), **FAST)
    view.reset()
    flat.reset()
    torch.testing.assert_close(view.sim.state.root_pos[:, :2], view.env_origins[:, :2])
    start_xy = view.sim.state.root_pos[:, :2].clone()
    flat_start_xy = flat.sim.state.root_pos[:, :2].clone()
    for _ in range(45):  # 1.5 s of the walk: the clip moves over a metre
        view.step()
        flat.step()
    s, f = view.sim.state, flat.sim.state
    torch.testing.assert_close(s.root_pos[:, :2] - start_xy, f.root_pos[:, :2] - flat_start_xy, atol=1e-4, rtol=0)
    assert (f.root_pos[:, :2] - flat_start_xy).norm(dim=-1).min() > 1.0
    clearance = placement.body_heights_above_ground(s.body_pos, view.ground).min(dim=1).values  # [2]
    flat_clearance = f.body_pos[..., 2].min(dim=1).values
    assert (clearance >= flat_clearance - 1e-4).all(), (clearance, flat_clearance)  # never in the ground
    assert (clearance < flat_clearance + 0.25).all(), (clearance, flat_clearance)  # nor floating above it
    ground = view.ground.height_at(s.root_pos[:, :2])
    assert ground.abs().max() > 0.05  # the clip really is off the plane's height
    view.close()
    flat.close()
