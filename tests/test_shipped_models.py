"""Shipping a model (tools/ship_model.py): a weights-only file, its checksum, its card; loading
checks the checksum; hierarchical tasks default to the shipped controller."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from ase_humanoid.app import run
from ase_humanoid.errors import CheckpointError
from ase_humanoid.paths import PROJECT_ROOT
from ase_humanoid.utils import shipped_models
from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint
from ase_humanoid.utils.shipped_models import card_metrics, read_checksums, sha256_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import redraw_style_layer  # noqa: E402
import ship_model  # noqa: E402

TRAIN = ["num_envs=4", "device=cpu", "sim=mujoco", "num_threads=1", "save_every=0", "max_epochs=1",
         "quality_every=0", "final_skill_report=0", "train.params.actor_units=[32,32]", "train.params.critic_units=[32,32]",
         "train.params.horizon_length=4", "train.params.mini_epochs=1"]
TINY_ASE = ["task=HumanoidASE", "task.env.fall_pool_size=4", "task.env.fall_steps=5",
            "train.params.amp_obs_demo_buffer_size=64", "train.params.amp_replay_buffer_size=64",
            "train.params.amp_batch_size=16", "train.params.amp_minibatch_size=16",
            "train.params.disc_units=[32,32]", "train.params.style_units=[16]"]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A tiny ASE run shipped as `tiny_llc` into its own pretrained folder."""
    root = tmp_path_factory.mktemp("ship")
    run([*TINY_ASE, f"run_dir={root / 'run'}", *TRAIN])
    metrics = root / "metrics.json"
    metrics.write_text(json.dumps({"fall_rate": 0.5}))
    out = root / "pretrained"
    assert ship_model.main([str(root / "run" / "latest.pt"), "--name", "tiny_llc", "--metrics", str(metrics),
                            "--hours", "0.01", "--command", "python train.py task=HumanoidASE",
                            "--check", json.dumps({"latents": 2}), "--out", str(out)]) == 0
    return out


def test_shipped_file_holds_weights_only_and_a_card(shipped):
    path = shipped / "tiny_llc.pt"
    state = torch.load(path, weights_only=True)
    assert state["format"] == shipped_models.WEIGHTS_FORMAT
    assert set(state["agent"]) <= set(shipped_models.POLICY_AGENT_ENTRIES)
    assert {"model", "obs_norm", "amp_norm"} <= set(state["agent"])
    assert "optimizer" not in state["agent"] and "replay_buffer" not in state["agent"] and "env" not in state
    full = torch.load(path.parents[1] / "run" / "latest.pt", weights_only=True)
    assert path.stat().st_size < (path.parents[1] / "run" / "latest.pt").stat().st_size
    assert state["global_step"] == full["global_step"]
    assert read_checksums(shipped) == {"tiny_llc.pt": sha256_of(path)}
    card = card_metrics(shipped / "tiny_llc.md")
    assert card == {"metrics": {"fall_rate": 0.5}, "check": {"latents": 2}}
    text = (shipped / "tiny_llc.md").read_text()
    assert "mocap.cs.cmu.edu" in text and "python train.py task=HumanoidASE" in text
    # shipping again under the same name needs --replace
    assert ship_model.main([str(path.parents[1] / "run" / "latest.pt"), "--name", "tiny_llc", "--metrics",
                            str(path.parents[1] / "metrics.json"), "--hours", "1", "--command", "x",
                            "--out", str(shipped)]) == 2  # a user error: exit 2, as every tool


def test_shipped_model_evaluates_and_drives_a_task(shipped, tmp_path, capsys):
    run(["task=HumanoidASE", "test=true", f"checkpoint={shipped / 'tiny_llc.pt'}", "test_episodes=2", *TRAIN])
    assert "episode/count=" in capsys.readouterr().out
    run(["task=HumanoidHeading", f"run_dir={tmp_path / 'heading'}", f"llc_checkpoint={shipped / 'tiny_llc.pt'}",
         *TRAIN])
    assert (tmp_path / "heading" / "latest.pt").is_file()
    # the trained task policy against random latents on the LLC it carries, the same episodes
    import task_policy

    result = task_policy.main([str(tmp_path / "heading" / "latest.pt"), "--episodes", "2", "--envs", "2",
                               "task.env.max_episode_length=20", "num_threads=1"])
    assert result["task"] == "HumanoidHeading"
    for policy in ("trained", "random"):
        assert result[policy]["episode/count"] >= 2 and result[policy]["task/direction_error"] >= 0.0
    assert result["random"]["policy"] == "random latents"
    with pytest.raises(CheckpointError, match="not a hierarchical task policy"):
        task_policy.main([str(shipped / "tiny_llc.pt"), "--episodes", "1", "--envs", "1"])


def test_task_policy_measures_a_sword_shield_policy_without_being_told_the_robot(tmp_path):
    # a Strike policy on the shipped sword-and-shield controller: the random-latent baseline
    # must build the sword-and-shield env its LLC needs from the checkpoint alone
    import task_policy

    run(["task=HumanoidStrike", "robot=sword_shield", f"run_dir={tmp_path / 'strike'}", *TRAIN])
    result = task_policy.main([str(tmp_path / "strike" / "latest.pt"), "--episodes", "2", "--envs", "2",
                               "task.env.max_episode_length=20", "num_threads=1"])
    assert result["task"] == "HumanoidStrike"
    for policy in ("trained", "random"):
        assert result[policy]["episode/count"] >= 2 and 0.0 <= result[policy]["task/success_rate"] <= 1.0


def test_a_run_takes_task_and_robot_from_its_checkpoint_unless_given(tmp_path, capsys):
    # a task on the sword-and-shield controller named only by llc_checkpoint trains on that
    # robot; test=true and resume=true on its run need neither task= nor robot= (each once
    # stopped at the LLC check asking for robot=sword_shield, or ran the default task); an
    # explicit key is kept, so a wrong robot is the loaders' error
    llc = Path(__file__).resolve().parents[1] / "pretrained" / "ase_llc_sword_shield_walk.pt"
    run_dir = tmp_path / "heading"
    run(["task=HumanoidHeading", f"llc_checkpoint={llc}", f"run_dir={run_dir}", *TRAIN])
    assert f"robot=sword_shield: as {llc} was trained" in capsys.readouterr().err
    assert load_checkpoint(run_dir / "latest.pt")["config"]["robot"]["name"] == "sword_shield"
    # a key only Heading has is valid without task=: the checkpoint's task is composed in first
    run(["test=true", f"checkpoint={run_dir}", "test_episodes=1", "num_envs=1", "num_threads=1",
         "task.env.max_episode_length=10", "task.env.target_speed_min=1.0", "task.env.target_speed_max=1.2"])
    assert f"task=HumanoidHeading robot=sword_shield: as {run_dir} was trained" in capsys.readouterr().err
    unnamed = [arg for arg in TRAIN if arg.split("=")[0] not in ("num_envs", "max_epochs")]
    run(["resume=true", f"run_dir={run_dir}", *unnamed, "max_epochs=2"])
    assert "task=HumanoidHeading robot=sword_shield num_envs=4" in capsys.readouterr().err
    assert load_checkpoint(run_dir / "latest.pt")["epoch"] == 2
    with pytest.raises(CheckpointError, match="trained on robot 'sword_shield'.*uses robot 'amp_humanoid'"):
        run(["task=HumanoidHeading", "test=true", f"checkpoint={run_dir}", "robot=amp_humanoid",
             "test_episodes=1", "num_envs=1", "num_threads=1"])


def test_damaged_or_unlisted_shipped_file_is_refused(shipped, tmp_path):
    folder = tmp_path / "copy"
    folder.mkdir()
    data = (shipped / "tiny_llc.pt").read_bytes()
    (folder / "tiny_llc.pt").write_bytes(data)
    (folder / "SHA256SUMS").write_text((shipped / "SHA256SUMS").read_text())
    assert "agent" in load_checkpoint(folder / "tiny_llc.pt")
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 0xFF
    (folder / "tiny_llc.pt").write_bytes(bytes(damaged))
    with pytest.raises(CheckpointError, match="does not match its checksum"):
        load_checkpoint(folder / "tiny_llc.pt")
    (folder / "other.pt").write_bytes(data)
    with pytest.raises(CheckpointError, match="not listed in"):
        load_checkpoint(folder / "other.pt")
    (folder / "SHA256SUMS").write_text("not a checksum line\n")
    with pytest.raises(CheckpointError, match="line 1"):
        load_checkpoint(folder / "other.pt")


def test_hierarchical_task_uses_the_shipped_controller_by_default(shipped, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(shipped_models, "PRETRAINED_DIR", shipped)
    monkeypatch.setitem(shipped_models.SHIPPED_LLC, "amp_humanoid", "tiny_llc.pt")
    monkeypatch.setitem(shipped_models.SHIPPED_TASK_LLC, "amp_humanoid", {})
    run_dir = tmp_path / "location"
    run(["task=HumanoidLocation", f"run_dir={run_dir}", *TRAIN])
    assert "using the shipped controller" in capsys.readouterr().out
    assert f"llc_checkpoint: {shipped / 'tiny_llc.pt'}" in (run_dir / "config.yaml").read_text()


def test_travel_tasks_default_to_the_walking_controller():
    walk, six_clips = "ase_llc_amp_humanoid_walk.pt", "ase_llc_amp_humanoid.pt"
    for task in ("HumanoidHeading", "HumanoidLocation"):
        assert shipped_models.shipped_llc_path("amp_humanoid", task) == shipped_models.PRETRAINED_DIR / walk
    for task in ("HumanoidReach", "HumanoidStrike", None):
        assert shipped_models.shipped_llc_path("amp_humanoid", task) == shipped_models.PRETRAINED_DIR / six_clips
    sword_walk = shipped_models.PRETRAINED_DIR / "ase_llc_sword_shield_walk.pt"
    for task in ("HumanoidHeading", "HumanoidStrike", None):  # one controller for every task
        assert shipped_models.shipped_llc_path("sword_shield", task) == sword_walk


def test_random_high_level_policy_baseline(shipped, capsys):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import hrl_random_policy

    result = hrl_random_policy.main(["--task", "HumanoidLocation", "--episodes", "2", "--envs", "2", "--json",
                                     f"llc_checkpoint={shipped / 'tiny_llc.pt'}", "num_threads=1",
                                     "task.env.max_episode_length=30"])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(result))  # stdout: the JSON alone
    assert result["policy"] == "random latents" and result["episode/count"] >= 2
    assert 0.0 <= result["task/success_rate"] <= 1.0 and result["task/final_distance"] > 0.0
    policy = hrl_random_policy.RandomLatentPolicy(64, seed=0, device="cpu")
    actions = policy.act(torch.zeros(500, 3))["actions"]
    assert actions.shape == (500, 64) and actions.min() >= -1.0 and actions.max() <= 1.0
    assert abs(float(actions.mean())) < 0.05  # uniform around 0: no preferred skill


def test_card_counts_a_high_level_policy_in_decisions_and_control_steps():
    assert ship_model.sample_count({"algo": "ASEAgent", "config": {}}, 4096) == "4,096 control steps"
    hrl = {"algo": "HRLAgent", "config": {"llc_steps": 5}}
    assert ship_model.sample_count(hrl, 4096) == "4,096 high-level samples (20,480 control steps)"


def test_redrawn_style_layer_changes_that_layer_only_and_training_starts_from_it(shipped, tmp_path):
    source = shipped.parent / "run" / "latest.pt"
    before = load_checkpoint(source)
    out = tmp_path / "redrawn.pt"
    assert redraw_style_layer.main([str(source), str(out), "--scale", "0.5", "--seed", "3"]) == 0
    after = load_checkpoint(out)
    key = redraw_style_layer.STYLE_OUT_WEIGHT
    old, new = before["agent"]["model"][key], after["agent"]["model"][key]
    assert new.shape == old.shape and not torch.equal(new, old)
    assert float(new.abs().max()) <= 0.5 and 0.2 < float(new.abs().mean()) < 0.3  # U(-0.5, 0.5): mean |w| 0.25
    others = [k for k in before["agent"]["model"] if k != key]
    assert others and all(torch.equal(before["agent"]["model"][k], after["agent"]["model"][k]) for k in others)
    assert torch.equal(load_checkpoint(source)["agent"]["model"][key], old)  # the source is left as it was
    again = tmp_path / "again.pt"  # the same seed draws the same layer
    assert redraw_style_layer.main([str(source), str(again), "--scale", "0.5", "--seed", "3"]) == 0
    assert torch.equal(load_checkpoint(again)["agent"]["model"][key], new)
    # a new run starts from it (its weights; fresh optimiser and buffers)
    run([*TINY_ASE, f"run_dir={tmp_path / 'from_redrawn'}", f"checkpoint={out}", "resume=false", *TRAIN])
    assert (tmp_path / "from_redrawn" / "latest.pt").is_file()


def test_redraw_refuses_an_existing_output_and_a_checkpoint_without_a_style_layer(shipped, tmp_path, capsys):
    source = shipped.parent / "run" / "latest.pt"
    taken = tmp_path / "taken.pt"
    taken.write_bytes(b"keep me")
    assert redraw_style_layer.main([str(source), str(taken)]) == 2
    assert "exists" in capsys.readouterr().err and taken.read_bytes() == b"keep me"
    amp = save_checkpoint({"agent": {"algo": "AMPAgent", "model": {"actor.mu.weight": torch.zeros(2, 2)}}},
                          tmp_path / "amp.pt")
    assert redraw_style_layer.main([str(amp), str(tmp_path / "out.pt")]) == 2
    err = capsys.readouterr().err
    assert "amp.pt" in err and "not an ASE controller checkpoint (AMPAgent)" in err
    assert not (tmp_path / "out.pt").exists()


def test_a_run_from_trained_weights_acts_with_the_configured_action_std(shipped, tmp_path, capsys):
    """The fixed action std is a setting: `init_log_std` wins over the checkpoint's copy of it
    (until 2026-12-06 the checkpoint's silently won, so fine-tunes ran with the old std)."""
    source = shipped.parent / "run" / "latest.pt"
    assert torch.allclose(load_checkpoint(source)["agent"]["model"]["actor.body.log_std"], torch.tensor(-2.9))
    run_dir = tmp_path / "wider"
    run([*TINY_ASE, f"run_dir={run_dir}", f"checkpoint={source}", "resume=false",
         "train.params.init_log_std=-2.3", *TRAIN])
    assert "action std 0.1 (train.params.init_log_std=-2.3) instead of the checkpoint's 0.055" in capsys.readouterr().out
    log_std = load_checkpoint(run_dir / "latest.pt")["agent"]["model"]["actor.body.log_std"]
    assert torch.allclose(log_std, torch.tensor(-2.3))
    # left at the profile's value, the run keeps the std it had (nothing printed)
    run([*TINY_ASE, f"run_dir={tmp_path / 'same'}", f"checkpoint={source}", "resume=false", *TRAIN])
    assert "action std" not in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["deleted", "emptied", "a_folder"])
def test_shipped_models_are_refused_without_their_checksum_list(tmp_path, monkeypatch, damage):
    """In pretrained/ the checksum list cannot be switched off: with it deleted, emptied or
    replaced by a folder, a shipped model (even an intact one) is refused, naming the list."""
    import shutil

    from ase_humanoid.utils import shipped_models
    from ase_humanoid.utils.checkpoint import load_checkpoint

    folder = tmp_path / "pretrained"
    folder.mkdir()
    name = "heading_amp_humanoid.pt"
    shutil.copy(PROJECT_ROOT / "pretrained" / name, folder / name)
    sums = shipped_models.read_checksums(PROJECT_ROOT / "pretrained")
    shipped_models.write_checksums(folder, {name: sums[name]})
    monkeypatch.setattr(shipped_models, "PRETRAINED_DIR", folder)
    load_checkpoint(folder / name)  # intact and listed: loads
    listing = folder / shipped_models.CHECKSUM_FILE
    listing.unlink()
    if damage == "emptied":
        listing.write_text("")
    elif damage == "a_folder":
        listing.mkdir()
    with pytest.raises(CheckpointError, match="checksum list"):
        load_checkpoint(folder / name)


def test_a_task_policy_on_another_controller_is_named(capsys):
    """test=true with a task policy and an llc_checkpoint other than the one it was trained on
    evaluates on the given one, but says so; its own controller gives no warning."""
    common = ["test=true", "checkpoint=pretrained/heading_amp_humanoid.pt", "test_episodes=1", "num_envs=1",
              "num_threads=1", "task.env.max_episode_length=5"]
    run([*common, "llc_checkpoint=pretrained/ase_llc_amp_humanoid.pt"])
    assert "was trained on the controller pretrained/ase_llc_amp_humanoid_walk.pt" in capsys.readouterr().err
    run([*common, "llc_checkpoint=pretrained/ase_llc_amp_humanoid_walk.pt"])
    assert "was trained on the controller" not in capsys.readouterr().err
    # a task policy given as the controller: the controller it carries is used, its own here
    run([*common, "llc_checkpoint=pretrained/heading_amp_humanoid.pt"])
    err = capsys.readouterr().err
    assert "using the controller it carries" in err and "was trained on the controller" not in err
