"""Policy export: AMP, ASE (latent input) and HRL (high and low level) checkpoints to ONNX,
torch.export and TorchScript, with the observation normaliser folded in; the exported models must reproduce the
PyTorch agents' deterministic actions on 100 observations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from project_scripts import load_script
from torch.nn import functional as F

from ase_humanoid.agents.amp import AMPAgent
from ase_humanoid.agents.ase import ASEAgent
from ase_humanoid.agents.config import AMPConfig, ASEConfig
from ase_humanoid.agents.hrl import HRLAgent, HRLConfig, LowLevelController
from ase_humanoid.errors import CheckpointError, ConfigError
from ase_humanoid.policy_export import export_checkpoint
from ase_humanoid.robots.description import load_robot
from ase_humanoid.utils.checkpoint import save_checkpoint

OBS, ACT, AMP_OBS, TASK_OBS = 223, 28, 250, 5
TINY = dict(actor_units=[32, 32], critic_units=[32, 32], disc_units=[32, 16], amp_obs_demo_buffer_size=64,
            amp_replay_buffer_size=64, amp_batch_size=32, horizon_length=2, minibatch_size=8, seed=0)


def observations(n: int = 100, dim: int = OBS, seed: int = 1) -> torch.Tensor:
    return torch.randn(n, dim, generator=torch.Generator().manual_seed(seed)) * 2.0 + 0.5


def trained_normalizer(agent, dim: int) -> None:
    """Give the agent's observation normaliser statistics far from the identity."""
    agent.obs_norm.update(observations(400, dim, seed=7) * 3.0 - 1.0)


def demo(n: int) -> torch.Tensor:
    return torch.randn(n, AMP_OBS)


def run_checkpoint(tmp_path: Path, agent, name: str) -> Path:
    """The agent in a run checkpoint as the runner writes it (agent state + resolved config)."""
    path = tmp_path / f"{name}.pt"
    save_checkpoint({"agent": agent.state_dict(), "config": {"robot": {"name": "amp_humanoid"},
                                                              "task": {"name": "HumanoidAMP",
                                                                       "env": {"control_substeps": 4}}}}, path)
    return path


def onnx_outputs(path: Path, **inputs: torch.Tensor) -> list:
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {k: v.numpy() for k, v in inputs.items()})


def amp_agent() -> AMPAgent:
    agent = AMPAgent(OBS, ACT, AMP_OBS, 4, demo, AMPConfig(**TINY))
    trained_normalizer(agent, OBS)
    return agent


def ase_agent() -> ASEAgent:
    agent = ASEAgent(OBS, ACT, AMP_OBS, 4, demo, ASEConfig(**TINY, style_units=[16]))
    trained_normalizer(agent, OBS)
    return agent


def hrl_agent() -> tuple[HRLAgent, LowLevelController]:
    """A small HRL agent on a low-level controller, both normalisers far from the identity."""
    torch.manual_seed(0)
    ase_cfg = ASEConfig(actor_units=[32, 32], critic_units=[32, 32], disc_units=[32, 32], style_units=[16])
    llc = LowLevelController(ase_cfg, OBS, ACT, AMP_OBS, "amp_humanoid")
    llc.obs_norm.update(observations(400, OBS, seed=9))
    agent = HRLAgent(OBS + TASK_OBS, 4, llc, HRLConfig(actor_units=[32], critic_units=[32], horizon_length=2,
                                                      minibatch_size=8, seed=0))
    trained_normalizer(agent, OBS + TASK_OBS)
    return agent, llc


def load_tool():
    return load_script("tools/export_policy.py")


def test_amp_policy_onnx_from_the_command_line_matches_pytorch(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    agent = amp_agent()
    out = tmp_path / "amp.onnx"
    assert load_tool().main([str(run_checkpoint(tmp_path, agent, "amp")), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert float(printed.split("max |exported - torch| = ")[1].split()[0]) < 1e-4  # the tool's own check
    obs = observations()
    expected = agent.act(obs, deterministic=True)["actions"]
    actions, pd_targets = onnx_outputs(out, obs=obs)
    assert actions.shape == (100, ACT)
    assert torch.allclose(torch.from_numpy(actions), expected, atol=1e-5)
    # without the folded normaliser the actions would be far off: the test would notice
    assert not torch.allclose(agent.actor(obs), expected, atol=1e-2)
    robot = load_robot("amp_humanoid")
    assert torch.allclose(torch.from_numpy(pd_targets), robot.action_to_pd_target(expected), atol=1e-5)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["algo"] == "AMPAgent" and meta["robot"] == "amp_humanoid"
    assert meta["control_dt"] == pytest.approx(1 / 30)
    assert meta["models"] == [{"file": "amp.onnx", "name": "policy", "inputs": {"obs": OBS},
                               "outputs": {"actions": ACT, "pd_targets": ACT}}]


def test_ase_policy_takes_the_latent_as_input(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    agent = ase_agent()
    out = tmp_path / "ase.onnx"
    export_checkpoint(run_checkpoint(tmp_path, agent, "ase"), out)
    obs = observations()
    z = F.normalize(torch.randn(100, 64, generator=torch.Generator().manual_seed(3)), dim=-1)
    agent = ASEAgent(OBS, ACT, AMP_OBS, 100, demo, ASEConfig(**TINY, style_units=[16]))
    agent.load_policy_state_dict(torch.load(tmp_path / "ase.pt", weights_only=False)["agent"])
    agent.set_latents(z)
    expected = agent.act(obs, deterministic=True)["actions"]
    actions, _ = onnx_outputs(out, obs=obs, latent=z)
    assert torch.allclose(torch.from_numpy(actions), expected, atol=1e-5)
    # any non-zero latent is projected onto the sphere, as the agent's set_latents does
    scaled, _ = onnx_outputs(out, obs=obs, latent=3.0 * z)
    assert torch.allclose(torch.from_numpy(scaled), expected, atol=1e-5)


def test_hrl_exports_high_and_low_level(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    agent, llc = hrl_agent()
    paths = export_checkpoint(run_checkpoint(tmp_path, agent, "hrl"), tmp_path / "task.onnx")
    assert [p.name for p in paths] == ["task_high_level.onnx", "task_low_level.onnx"]
    obs = observations(dim=OBS + TASK_OBS)
    (latent,) = onnx_outputs(paths[0], obs=obs)
    expected_z = F.normalize(agent.act(obs, deterministic=True)["actions"], dim=-1)
    assert torch.allclose(torch.from_numpy(latent), expected_z, atol=1e-5)
    actions, _ = onnx_outputs(paths[1], obs=obs[:, :OBS], latent=expected_z)
    assert torch.allclose(torch.from_numpy(actions), llc.actions(obs[:, :OBS], expected_z), atol=1e-5)
    meta = json.loads((tmp_path / "task.json").read_text())
    assert meta["models"][0]["llc_steps"] == 5 and meta["models"][1]["inputs"] == {"obs": OBS, "latent": 64}


def test_exported_program_from_the_command_line_matches_pytorch(tmp_path, capsys):
    """torch.export (.pt2), for HRL's two files: any batch size, the agents' actions, checked by the tool."""
    agent, llc = hrl_agent()
    out = tmp_path / "task.pt2"
    assert load_tool().main([str(run_checkpoint(tmp_path, agent, "hrl")), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    errors = [float(part.split()[0]) for part in printed.split("max |exported - torch| = ")[1:]]
    assert len(errors) == 2 and max(errors) < 1e-5
    high = torch.export.load(str(tmp_path / "task_high_level.pt2")).module()
    low = torch.export.load(str(tmp_path / "task_low_level.pt2")).module()
    obs = observations(dim=OBS + TASK_OBS)
    latent = high(obs)  # one output: a tensor, as the module returns it
    expected_z = F.normalize(agent.act(obs, deterministic=True)["actions"], dim=-1)
    assert torch.allclose(latent, expected_z, atol=1e-5)
    actions, pd_targets = low(obs[:7, :OBS], expected_z[:7])  # another batch size than the export's
    assert torch.allclose(actions, llc.actions(obs[:7, :OBS], expected_z[:7]), atol=1e-5)
    assert pd_targets.shape == (7, ACT)


@pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:DeprecationWarning")  # expected: TorchScript
def test_torchscript_export_matches_pytorch(tmp_path):
    agent = amp_agent()
    out = tmp_path / "amp_script.pt"
    export_checkpoint(run_checkpoint(tmp_path, agent, "amp"), out)
    loaded = torch.jit.load(str(out))
    obs = observations()
    actions, _ = loaded(obs)
    assert torch.allclose(actions, agent.act(obs, deterministic=True)["actions"], atol=1e-6)


def test_export_errors_name_the_problem(tmp_path):
    path = run_checkpoint(tmp_path, amp_agent(), "amp")
    with pytest.raises(ConfigError, match=r"must end in one of \.onnx, \.pt2, \.pt"):
        export_checkpoint(path, tmp_path / "policy.tflite")
    save_checkpoint({"agent": {"algo": "Nothing"}}, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="holds no policy"):
        export_checkpoint(tmp_path / "bad.pt", tmp_path / "policy.onnx")


def test_command_line_tool_reports_errors(tmp_path, capsys):
    assert load_tool().main([str(tmp_path / "missing.pt"), "--out", str(tmp_path / "x.onnx")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_export_check_fails_beyond_its_tolerance(tmp_path, capsys, monkeypatch):
    """The tool's own check has a threshold: networks that differ from the exported file (a
    checkpoint replaced while the tool read it) end with exit status 1, not a printed number."""
    import ase_humanoid.policy_export as policy_export

    agent = amp_agent()
    checkpoint = run_checkpoint(tmp_path, agent, "amp")
    read, calls = policy_export.read_policy_state, []

    def changed_meanwhile(path):  # the export reads the first version, the check the second
        state, config = read(path)
        calls.append(path)
        if len(calls) > 1:
            state = dict(state, model={k: v + 0.5 if v.is_floating_point() else v for k, v in state["model"].items()})
        return state, config

    monkeypatch.setattr(policy_export, "read_policy_state", changed_meanwhile)
    assert load_tool().main([str(checkpoint), "--out", str(tmp_path / "amp.pt2")]) == 1
    assert "tolerance" in capsys.readouterr().err
