"""Every model shipped in pretrained/: listed in SHA256SUMS with a matching checksum, weights
only, a model card, and a short run that reproduces the card's `check` numbers (a skill report
for a controller, `test=true` episodes for a task policy)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from ase_humanoid.config import compose_config
from ase_humanoid.errors import ConfigError
from ase_humanoid.evaluate import load_policy, shipped_policies
from ase_humanoid.utils.shipped_models import (
    POLICY_AGENT_ENTRIES,
    PRETRAINED_DIR,
    SHIPPED_LLC,
    SHIPPED_TASK_LLC,
    WEIGHTS_FORMAT,
    card_metrics,
    read_checksums,
    sha256_of,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

MODELS = sorted(PRETRAINED_DIR.glob("*.pt"))


def test_a_controller_ships_and_every_file_is_listed():
    assert (PRETRAINED_DIR / SHIPPED_LLC["amp_humanoid"]).is_file()
    for by_task in SHIPPED_TASK_LLC.values():  # a task's own default must ship too
        assert all((PRETRAINED_DIR / name).is_file() for name in by_task.values())
    listed = read_checksums(PRETRAINED_DIR)
    assert sorted(listed) == [m.name for m in MODELS]


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_shipped_model_is_weights_only_and_matches_its_checksum(model):
    assert sha256_of(model) == read_checksums(PRETRAINED_DIR)[model.name]
    assert model.stat().st_size < 20e6  # a few MB: no optimiser state, no sample buffers
    state = torch.load(model, weights_only=True)
    assert state["format"] == WEIGHTS_FORMAT
    assert set(state["agent"]) <= set(POLICY_AGENT_ENTRIES)
    card = card_metrics(model.with_suffix(".md"))
    assert card["metrics"] and card["check"]["kind"] in ("skills", "task")


def _check_run(model: Path, check: dict) -> dict:
    """The card's short run on `model`: its skill report (benchmarks/ase_skills.py) for a
    controller, its test=true statistics (benchmarks/task_policy.py) for a task policy."""
    if check["kind"] == "task":
        import task_policy

        return task_policy.main([str(model), "--episodes", str(check["episodes"]), "--envs", str(check["envs"]),
                                 "--seed", str(check["seed"]), "--no-random", *check.get("overrides", [])])["trained"]
    import ase_skills

    args = [str(model), "--latents", str(check["latents"]), "--seconds", str(check["seconds"]),
            "--seed", str(check["seed"]), "--getup-episodes", str(check["getup_episodes"]), "--json"]
    report = ase_skills.main(args)
    return {"fall_rate": report["fall_rate"], "key_body_error_cm": report["key_body_error_cm"],
            "enc_z": report["enc_z"], "getup_success_rate": report["getup"]["success_rate"],
            "clip_coverage": report["clip_coverage"], "root_speed": report["root_speed"]["mean"]}


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_shipped_model_reproduces_its_card(model):
    check = card_metrics(model.with_suffix(".md"))["check"]
    measured = _check_run(model, check)
    for key, (expected, tolerance) in check["expect"].items():
        assert abs(measured[key] - expected) <= tolerance, (key, measured[key], expected, tolerance)


def test_shipped_models_are_found_by_their_task_and_named_when_test_lacks_a_checkpoint():
    for model in MODELS:
        task = torch.load(model, weights_only=True)["config"]["task"]["name"]
        assert model in shipped_policies(task)
    assert shipped_policies("HumanoidNoSuchTask") == []
    with pytest.raises(ConfigError, match=r"needs checkpoint=.*; shipped for HumanoidReach: pretrained/reach_amp_humanoid\.pt$"):
        load_policy(compose_config(["task=HumanoidReach", "test=true"]))


def test_shipped_policies_leaves_out_damaged_files(tmp_path):
    (tmp_path / "mine.pt").write_bytes((PRETRAINED_DIR / "reach_amp_humanoid.pt").read_bytes())
    (tmp_path / "broken.pt").write_bytes(b"\xff\xfe not a torch file")
    (tmp_path / "empty.pt").write_bytes(b"")
    assert shipped_policies("HumanoidReach", tmp_path) == [tmp_path / "mine.pt"]
