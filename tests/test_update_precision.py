"""`update_precision`: the update's hidden layers in bfloat16 under autocast (issue 22, item 3),
its output heads in float32, and what `auto` picks. Small agents on random tensors, as in
test_update_equivalence.py; the learning curves are compared in docs/research-notes.md."""

from __future__ import annotations

import pytest
import torch
from test_update_equivalence import make, train

from ase_humanoid.agents import update_precision
from ase_humanoid.agents.networks import GaussianActor
from ase_humanoid.errors import ConfigError

pytestmark = pytest.mark.usefixtures("single_torch_thread")


def flat_params(agent) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in agent.model.parameters()])


@pytest.mark.parametrize("kind", ["amp", "ase"])
def test_bfloat16_update_learns_what_float32_learns_to_rounding(kind):
    """Same seed and data: the bfloat16 update moves the parameters as the float32 one does,
    up to bfloat16 rounding (not bit for bit: the hidden layers did run in bfloat16)."""
    start = flat_params(make(kind, update_precision="float32"))
    moved = {}
    for precision in ("float32", "bfloat16"):
        agent = make(kind, update_precision=precision)
        assert agent.update_dtype == (torch.bfloat16 if precision == "bfloat16" else None)
        stats = train(agent, reference=False)
        assert all(torch.isfinite(torch.tensor(list(s.values()))).all() for s in stats)
        moved[precision] = flat_params(agent) - start
    f32, bf16 = moved["float32"], moved["bfloat16"]
    assert not torch.equal(f32, bf16)
    cosine = torch.nn.functional.cosine_similarity(f32, bf16, dim=0).item()
    relative = ((bf16 - f32).norm() / f32.norm()).item()
    assert cosine > 0.98 and relative < 0.2, (cosine, relative)


def test_hidden_layers_round_to_bfloat16_and_the_head_does_not():
    actor = GaussianActor(5, 3, [16, 16], "relu", -2.9, False)
    hidden_dtypes = []
    actor.mlp[0].register_forward_hook(lambda module, inputs, output: hidden_dtypes.append(output.dtype))
    obs = torch.randn(4, 5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mu = actor(obs)
    assert hidden_dtypes == [torch.bfloat16] and mu.dtype == torch.float32
    assert actor(obs).dtype == torch.float32  # outside autocast nothing changes


def test_reference_update_stays_float32():
    agent = make("ppo", update_precision="bfloat16")
    agent.use_reference_update(True)
    assert agent.update_dtype is None
    agent.use_reference_update(False)
    assert agent.update_dtype == torch.bfloat16


def test_auto_picks_bfloat16_only_on_a_cpu_with_bfloat16_matrix_instructions(monkeypatch):
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    for kind in ("AMX", "AVX512-BF16"):
        monkeypatch.setattr(update_precision, "cpu_bfloat16_matmul", lambda kind=kind: kind)
        assert update_precision.update_autocast_dtype("auto", cpu) == torch.bfloat16
        assert update_precision.update_autocast_dtype("auto", cuda) is None
        assert update_precision.update_autocast_dtype("float32", cpu) is None
    monkeypatch.setattr(update_precision, "cpu_bfloat16_matmul", lambda: None)
    assert update_precision.update_autocast_dtype("auto", cpu) is None
    assert update_precision.update_autocast_dtype("bfloat16", cpu) == torch.bfloat16


def test_unknown_precision_names_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=r"update_precision.*float16.*float32.*bfloat16.*auto"):
        make("ppo", update_precision="float16")


def test_start_up_line_says_what_auto_chose(monkeypatch):
    from ase_humanoid.app import describe_update_precision

    assert describe_update_precision(make("ppo", update_precision="float32")) is None
    monkeypatch.setattr(update_precision, "cpu_bfloat16_matmul", lambda: "AVX512-BF16")
    assert describe_update_precision(make("ppo", update_precision="auto")) == \
        "update precision: bfloat16 (update_precision=auto: a CPU with AVX512-BF16)"
    monkeypatch.setattr(update_precision, "cpu_bfloat16_matmul", lambda: None)
    assert describe_update_precision(make("ppo", update_precision="auto")) == \
        "update precision: float32 (update_precision=auto: no bfloat16 matrix instructions on cpu)"
