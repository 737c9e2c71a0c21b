"""A bad day, continued (issue 57): the tools, the terrain and the gymnasium env against a hostile
user. Every bad argument or file is one line `error: ...` naming it (exit 2) or a project error,
never a traceback, a silently dropped value or a file overwritten without asking."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from project_scripts import PROJECT_ROOT, load_script

import ase_humanoid  # noqa: F401  (registers the gymnasium ids)
from ase_humanoid.errors import ActionError, ConfigError, ModelError, run_command
from ase_humanoid.terrain import terrain_config
from ase_humanoid.terrain.mesh import load_terrain_mesh, terrain_from_mesh_file

WALK = PROJECT_ROOT / "motions" / "amp_humanoid" / "amp_humanoid_walk.npy"
TINY_TERRAIN = ["terrain=rough", "terrain.num_rows=1", "terrain.num_cols=1"]


def one_error_line(err: str, *names: str) -> str:
    """`err` (a tool's stderr) is one `error: ...` line naming each of `names`."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for name in names:
        assert name in lines[0], (name, err)
    return lines[0]


def ground_obj(path: Path, corner_z: str = "0.1", comment: bytes = b"") -> Path:
    """A 4 x 4 m ground patch of two triangles as OBJ text; `corner_z` is one vertex's height."""
    path.write_bytes(comment + f"v 0 0 0\nv 4 0 0\nv 4 4 {corner_z}\nv 0 4 0\nf 1 2 3\nf 1 3 4\n".encode())
    return path


# ------------------------------------------------ 1: a text mesh that is not UTF-8
def test_a_latin1_obj_terrain_loads(tmp_path):
    import tomllib

    path = ground_obj(tmp_path / "ground.obj", comment="# terrain relevé à Genève\n".encode("latin-1"))
    vertices, faces = load_terrain_mesh(path)
    assert vertices.shape == (4, 3) and faces.shape == (2, 3)
    terrain = terrain_from_mesh_file(path, terrain_config({"name": "mesh", "mesh_file": str(path)}))
    assert terrain.heights.max() == pytest.approx(0.1, abs=1e-6)
    # trimesh decodes such a file with charset-normalizer but does not require it: the project must
    dependencies = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("charset-normalizer") for d in dependencies)


# ------------------------------------------------ 2: tools/terrain.py outputs and counts
@pytest.fixture()
def terrain_tool():
    return load_script("tools/terrain.py")


def _bad_output(tmp_path: Path, case: str) -> tuple[list[str], str, str]:
    """(arguments, the path the error names, what it says) for a bad --export / --preview."""
    (tmp_path / "dir.obj").mkdir()
    return {
        "export missing folder": (["--export", f"{tmp_path}/nope/t.obj"], "nope/t.obj", "does not exist"),
        "export a folder": (["--export", f"{tmp_path}/dir.obj"], "dir.obj", "is a folder"),
        "export unknown suffix": (["--export", f"{tmp_path}/t.xyz"], "t.xyz", "unknown format '.xyz'"),
        "export /dev/full": (["--export", "/dev/full"], "/dev/full", "no format suffix"),
        "preview missing folder": (["--preview", f"{tmp_path}/nope/t.png"], "nope/t.png", "does not exist"),
        "preview unknown suffix": (["--preview", f"{tmp_path}/t.xyz"], "t.xyz", "unknown format '.xyz'"),
    }[case]


@pytest.mark.parametrize("case", ["export missing folder", "export a folder", "export unknown suffix",
                                  "export /dev/full", "preview missing folder", "preview unknown suffix"])
def test_terrain_tool_checks_its_outputs_before_building(terrain_tool, tmp_path, capsys, monkeypatch, case):
    args, name, message = _bad_output(tmp_path, case)
    monkeypatch.setattr("ase_humanoid.terrain.build_terrain", lambda *a: pytest.fail("built before the check"))
    assert terrain_tool.main([*TINY_TERRAIN, *args]) == 2
    one_error_line(capsys.readouterr().err, args[0], name, message)


@pytest.mark.parametrize("option, name", [("--export", "full.obj"), ("--preview", "full.png")])
def test_terrain_tool_on_a_full_disk_says_so(terrain_tool, tmp_path, capsys, option, name):
    (tmp_path / name).symlink_to("/dev/full")  # every write: ENOSPC
    assert terrain_tool.main([*TINY_TERRAIN, option, str(tmp_path / name)]) == 2
    one_error_line(capsys.readouterr().err, option, name, "No space left on device")


@pytest.mark.parametrize("key, value, valid", [
    ("seed", -1, "from 0 to 2147483647"), ("seed", 2**31, "from 0 to 2147483647"),
    ("num_obstacles", -1, "from 0 to 1000"), ("num_obstacles", 10**8, "from 0 to 1000"),
    ("num_rows", 0, "from 1 to 1000"), ("num_cols", 10**6, "from 1 to 1000"),
    ("max_mesh_faces", 0, "from 1 to 50000000"), ("max_mesh_faces", 10**12, "from 1 to 50000000"),
])
def test_terrain_integer_counts_are_bounded(key, value, valid):
    with pytest.raises(ConfigError, match=rf"terrain config key '{key}': must be an integer {valid}, got {value}"):
        terrain_config({"name": "rough", key: value})


def test_terrain_tool_negative_seed_is_one_error(terrain_tool, tmp_path, capsys):
    assert terrain_tool.main([*TINY_TERRAIN, "terrain.seed=-1", "--export", str(tmp_path / "t.obj")]) == 2
    one_error_line(capsys.readouterr().err, "'seed'", "from 0 to 2147483647")
    assert not (tmp_path / "t.obj").exists()


# ------------------------------------------------ 3: benchmarks/ase_skills.py arguments
@pytest.mark.parametrize("args, message", [
    (["--seconds", "nan"], "--seconds nan"), (["--seconds", "inf"], "--seconds inf"),
    (["--seconds", "1e9"], "--seconds 1e+09"), (["--seconds", "0"], "--seconds 0"),
    (["--getup-seconds", "nan"], "--getup-seconds nan"),
    (["--video-tiles", "0"], "--video-tiles 0"), (["--video-tiles", "-1"], "--video-tiles -1"),
    (["--latents", "0"], "--latents 0"), (["--latents", "10000000"], "--latents: 10,000,000 latents"),
    (["--getup-episodes", "-1"], "--getup-episodes -1"),
])
def test_ase_skills_refuses_bad_arguments_before_reading_the_checkpoint(tmp_path, capsys, args, message):
    # a missing checkpoint: were the arguments checked after it, the error would be about it
    module = load_script("benchmarks/ase_skills.py")
    with pytest.raises(SystemExit) as exit_info:
        run_command(lambda: module.main([str(tmp_path / "none.pt"), *args]))
    assert exit_info.value.code == 2
    line = one_error_line(capsys.readouterr().err, message)
    if args[0] == "--latents" and args[1] != "0":
        assert "give at most" in line  # the memory bound train.py puts on num_envs


# ------------------------------------------------ 4: absurd geometry in a terrain mesh
@pytest.mark.parametrize("corner_z, scale", [("nan", 1.0), ("inf", 1.0), ("1e30", 1.0), ("100", 1000.0)])
def test_a_mesh_vertex_that_is_not_finite_or_absurdly_far_is_refused(tmp_path, corner_z, scale):
    path = ground_obj(tmp_path / "far.obj", corner_z)
    z = re.escape(f"{float(corner_z):g}")  # as the file holds it, before the scale
    with pytest.raises(ModelError, match=rf"far\.obj: vertex 3 \(counting from 1\) is \(4, 4, {z}\).*"
                                         r"finite and within \+-10000 m"):
        load_terrain_mesh(path, scale=scale)


# ------------------------------------------------ 5: the gymnasium vector env
def test_gym_actions_must_be_real_numbers():
    env = gymnasium.make_vec("ase_humanoid/HumanoidAMP-v0", num_envs=1, num_threads=1, seed=0)
    env.reset(seed=0)
    shape = env.action_space.shape
    bad = [np.zeros(shape, np.complex64) + 0.5j, torch.zeros(shape, dtype=torch.complex64),
           np.full(shape, "0.1"), np.zeros(shape, dtype=object), torch.zeros(shape, dtype=torch.bool)]
    for actions in bad:
        with pytest.raises(ActionError, match=r"actions must be real numbers .* got dtype"):
            env.step(actions)
    for actions in (np.zeros(shape, np.float64), torch.zeros(shape), np.zeros(shape, np.int64),
                    np.zeros(shape).tolist()):
        env.step(actions)
    env.close()


def test_gym_phases_keyword_takes_a_list_of_dicts():
    from ase_humanoid.gym_entry import hydra_value

    phases = [{"from_epoch": 5, "fall_init_prob": 0.3}, {"from_epoch": 9, "getup_reward": True}]
    env = gymnasium.make_vec("ase_humanoid/HumanoidASE-v0", num_envs=1, num_threads=1, seed=0,
                             fall_pool_size=4, fall_steps=5, phases=phases)
    assert env.env.cfg.phases == phases
    assert [(start, cfg.fall_init_prob) for start, cfg in env.env.cfg.phase_configs()] == [(5, 0.3), (9, 0.3)]
    env.close()
    with pytest.raises(ConfigError, match=r"dict key 'a b' cannot be passed"):
        hydra_value({"a b": 1})


# ------------------------------------------------ 6: tools/ship_model.py
@pytest.fixture()
def checkpoint(tmp_path) -> Path:
    """A checkpoint with the entries shipping reads (no training: a tiny network)."""
    from ase_humanoid.utils.checkpoint import save_checkpoint

    path = tmp_path / "run" / "latest.pt"
    save_checkpoint({"agent": {"algo": "ASEAgent", "config": {"actor_units": [8]}, "model": {"w": torch.zeros(2)}},
                     "config": {"task": {"name": "HumanoidASE"}, "robot": {"name": "amp_humanoid"}},
                     "epoch": 1, "global_step": 8}, path)
    return path


def _ship(checkpoint: Path, *extra: str, name: str = "tiny", metrics: str = '{"fall_rate": 0.5}',
          hours: str = "1") -> int:
    """ship_model's exit status for `checkpoint` shipped into `shipped/` beside its run folder."""
    metrics_file = checkpoint.parents[1] / "metrics.json"
    metrics_file.write_text(metrics)
    return load_script("tools/ship_model.py").main([
        str(checkpoint), f"--name={name}", "--metrics", str(metrics_file), "--hours", hours,
        "--command", "python train.py", "--out", str(checkpoint.parents[1] / "shipped"), *extra])


def _shipped(checkpoint: Path) -> list[str]:
    out = checkpoint.parents[1] / "shipped"
    return sorted(p.name for p in out.iterdir()) if out.is_dir() else []


@pytest.mark.parametrize("metrics, token", [('{"fall_rate": NaN}', "NaN"), ('{"a": [Infinity]}', "Infinity"),
                                            ('{"a": -Infinity}', "-Infinity"), ('{"a": 1e999}', "1e999")])
def test_ship_refuses_non_finite_metrics(checkpoint, capsys, metrics, token):
    assert _ship(checkpoint, metrics=metrics) == 2
    one_error_line(capsys.readouterr().err, "--metrics", "metrics.json", f"{token} is not a finite number")
    assert _shipped(checkpoint) == []


@pytest.mark.parametrize("hours", ["nan", "inf", "-1", "0", "1e9", "two"])
def test_ship_refuses_bad_hours(checkpoint, capsys, hours):
    assert _ship(checkpoint, hours=hours) == 2
    one_error_line(capsys.readouterr().err, f"--hours '{hours}'")
    assert _shipped(checkpoint) == []


@pytest.mark.parametrize("name", ["SHA256SUMS", "sha256sums", "NUL", "-x"])
def test_ship_refuses_reserved_names(checkpoint, capsys, name):
    assert _ship(checkpoint, name=name) == 2
    one_error_line(capsys.readouterr().err, f"--name '{name}'")
    assert _shipped(checkpoint) == []


def test_ship_never_overwrites_a_card_it_did_not_write(checkpoint, capsys):
    out = checkpoint.parents[1] / "shipped"
    out.mkdir()
    (out / "tiny.md").write_text("my notes")
    assert _ship(checkpoint) == 2
    one_error_line(capsys.readouterr().err, "tiny.md", "exists; pass --replace")
    assert _shipped(checkpoint) == ["tiny.md"] and (out / "tiny.md").read_text() == "my notes"
    assert _ship(checkpoint, "--replace") == 0
    assert _shipped(checkpoint) == ["SHA256SUMS", "tiny.md", "tiny.pt"]


def test_ship_writes_nothing_when_the_card_cannot_be_written(checkpoint, capsys, monkeypatch):
    out = checkpoint.parents[1] / "shipped"
    (out / "tiny.md").mkdir(parents=True)  # checked first: nothing is written
    assert _ship(checkpoint, "--replace") == 2
    one_error_line(capsys.readouterr().err, "tiny.md", "is not a file")
    assert _shipped(checkpoint) == ["tiny.md"]
    (out / "tiny.md").rmdir()

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("ase_humanoid.utils.atomic_file.write_text_atomic", full_disk)
    assert _ship(checkpoint) == 2
    one_error_line(capsys.readouterr().err, "No space left on device")
    assert _shipped(checkpoint) == []


def test_ship_is_all_or_nothing_when_a_later_write_fails(checkpoint, capsys, monkeypatch):
    assert _ship(checkpoint) == 0
    out = checkpoint.parents[1] / "shipped"
    before = {name: (out / name).read_bytes() for name in _shipped(checkpoint)}

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("ase_humanoid.utils.shipped_models.write_checksums", full_disk)
    assert _ship(checkpoint, "--replace", "--summary", "a new card") == 2  # card and weights written, list not
    one_error_line(capsys.readouterr().err, "No space left on device")
    assert {name: (out / name).read_bytes() for name in _shipped(checkpoint)} == before
    (out / "tiny.md").unlink()
    (out / "tiny.pt").unlink()
    (out / "SHA256SUMS").unlink()
    assert _ship(checkpoint) == 2  # a first shipping that fails leaves no file
    assert _shipped(checkpoint) == []


def test_a_failed_shipping_into_a_new_folder_leaves_no_folder(checkpoint, capsys, monkeypatch):
    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("ase_humanoid.utils.shipped_models.write_checksums", full_disk)
    metrics_file = checkpoint.parents[1] / "metrics.json"
    metrics_file.write_text('{"fall_rate": 0.5}')
    before = sorted(p.name for p in checkpoint.parents[1].iterdir())
    out = checkpoint.parents[1] / "new" / "models"
    assert load_script("tools/ship_model.py").main([
        str(checkpoint), "--name=tiny", "--metrics", str(metrics_file), "--hours", "1",
        "--command", "python train.py", "--out", str(out)]) == 2
    one_error_line(capsys.readouterr().err, "No space left on device")
    assert sorted(p.name for p in checkpoint.parents[1].iterdir()) == before  # neither new/ nor new/models


# ------------------------------------------------ 7: tools/curve_motion.py --out
def test_curve_motion_replaces_an_existing_out_only_when_asked(tmp_path, capsys):
    tool = load_script("tools/curve_motion.py")
    out = tmp_path / "mine.npy"
    out.write_bytes(b"a day's work")
    assert tool.main([str(WALK), "--yaw-rate", "0.5", "--out", str(out)]) == 2
    one_error_line(capsys.readouterr().err, "mine.npy", "exists; pass --replace")
    assert out.read_bytes() == b"a day's work"
    assert tool.main([str(WALK), "--yaw-rate", "0.5", "--out", str(out), "--replace"]) == 0
    assert out.read_bytes() != b"a day's work"
