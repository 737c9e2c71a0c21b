"""The fast update (fused Adam, backward into the parameters only, the discriminator's rows
gathered alone) learns what the reference update learns (issue 22, item 3): from the same seed
and data, updates with either path leave parameters, optimiser state, normalisers and replay
buffer equal to float rounding. Small agents on random tensors, several updates each."""

from __future__ import annotations

import pytest
import torch

from ase_humanoid.agents import AMPAgent, AMPConfig, ASEAgent, ASEConfig, PPOAgent, PPOConfig

OBS, ACT, AMP, ENVS, HORIZON = 7, 3, 6, 8, 8
BATCH = ENVS * HORIZON  # 64 samples per epoch
TOL = 1e-5

pytestmark = pytest.mark.usefixtures("single_torch_thread")


def small(config_class, **overrides):
    """Two minibatches of 32, two mini-epochs; the discriminator takes 16 of each minibatch's rows
    (so the fast path's partial gathers matter)."""
    values = dict(actor_units=[32, 32], critic_units=[32, 32], horizon_length=HORIZON, minibatch_size=32,
                  mini_epochs=2, learning_rate=3e-3, seed=11)
    if issubclass(config_class, AMPConfig):
        values.update(disc_units=[32, 16], amp_obs_demo_buffer_size=128, amp_replay_buffer_size=96,
                      amp_batch_size=32, amp_minibatch_size=16)
    if issubclass(config_class, ASEConfig):
        values.update(style_units=[16], latent_dim=4)
    values.update(overrides)
    return config_class(**values)


def demo_fetcher():
    gen = torch.Generator().manual_seed(1)
    return lambda n: torch.randn(n, AMP, generator=gen) * 0.5 + 1.0


def make(kind: str, **overrides):
    if kind == "ppo":
        return PPOAgent(OBS, ACT, ENVS, small(PPOConfig, **overrides))
    if kind == "amp":
        return AMPAgent(OBS, ACT, AMP, ENVS, demo_fetcher(), small(AMPConfig, **overrides))
    if kind == "ase":
        return ASEAgent(OBS, ACT, AMP, ENVS, demo_fetcher(), small(ASEConfig, **overrides))
    raise ValueError(kind)


def fill_rollout(agent, gen: torch.Generator) -> None:
    """One rollout of random observations, rewards, AMP observations; some episodes end."""
    obs = torch.randn(ENVS, OBS, generator=gen)
    for _ in range(HORIZON):
        out = agent.act(obs)
        next_obs = torch.randn(ENVS, OBS, generator=gen)
        info = {"amp_obs": torch.randn(ENVS, AMP, generator=gen)}
        terminated = torch.rand(ENVS, generator=gen) < 0.1
        truncated = torch.rand(ENVS, generator=gen) < 0.1
        agent.record_transition(obs, out["actions"], torch.rand(ENVS, generator=gen), terminated, truncated,
                                next_obs, info)
        obs = next_obs


def train(agent, reference: bool, epochs: int = 3) -> list[dict[str, float]]:
    """`epochs` rollouts and updates on data from a fixed seed, with the chosen update path."""
    agent.use_reference_update(reference)
    gen = torch.Generator().manual_seed(7)
    stats = []
    for _ in range(epochs):
        fill_rollout(agent, gen)
        stats.append(agent.update())
    return stats


def assert_same_learning(fast, reference) -> None:
    for (name, p), q in zip(fast.model.named_parameters(), reference.model.parameters()):
        assert torch.allclose(p, q, atol=TOL, rtol=0), f"{name} differs by {(p - q).abs().max().item():.3g}"
    fast_state, ref_state = fast.optimizer.state_dict()["state"], reference.optimizer.state_dict()["state"]
    for key in ref_state:
        for field in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.allclose(fast_state[key][field], ref_state[key][field], atol=TOL, rtol=1e-4), (key, field)
    for norm in ("obs_norm", "value_norm"):
        assert torch.allclose(getattr(fast, norm).mean, getattr(reference, norm).mean, atol=TOL)
        assert torch.allclose(getattr(fast, norm).var, getattr(reference, norm).var, atol=TOL)


@pytest.mark.parametrize("kind, overrides", [
    ("ppo", {}),
    ("amp", {}),  # the release's timing: per-minibatch normalisers, per-epoch disc sampling
    ("amp", {"normalizer_update": "per_epoch", "disc_sampling": "per_minibatch"}),  # the CPU profile's
    ("ase", {}),
    ("ase", {"normalizer_update": "per_epoch", "disc_sampling": "per_minibatch", "enc_grad_penalty": 0.5}),
])
def test_fast_update_learns_what_the_reference_update_learns(kind, overrides):
    fast, reference = make(kind, **overrides), make(kind, **overrides)
    fast_stats = train(fast, reference=False)
    ref_stats = train(reference, reference=True)
    assert_same_learning(fast, reference)
    for fast_epoch, ref_epoch in zip(fast_stats, ref_stats):
        assert fast_epoch.keys() == ref_epoch.keys()
        for key, value in ref_epoch.items():
            assert fast_epoch[key] == pytest.approx(value, rel=1e-4, abs=1e-5), key
    if kind != "ppo":
        assert torch.equal(fast.replay_buffer.samples, reference.replay_buffer.samples)
        assert torch.allclose(fast.amp_norm.mean, reference.amp_norm.mean, atol=TOL)


def test_fast_update_is_the_default_and_uses_fused_adam_on_cpu():
    agent = make("amp")
    assert agent.reference_update is False
    assert all(group["fused"] for group in agent.optimizer.param_groups)
    agent.use_reference_update(True)
    assert all(group["fused"] is None for group in agent.optimizer.param_groups)


def test_backward_into_parameters_only_skips_the_demo_batch_gradient(monkeypatch):
    # The gradient penalty's demo batch requires grad; the reference backward also fills its
    # .grad (nothing reads it), the fast one leaves it out.
    from ase_humanoid.agents import amp as amp_module

    penalty_inputs = []
    original = amp_module.input_gradient_penalty

    def recording_penalty(outputs, inputs):
        penalty_inputs.append(inputs)
        return original(outputs, inputs)

    monkeypatch.setattr(amp_module, "input_gradient_penalty", recording_penalty)
    demo_grads = {}
    for reference in (True, False):
        penalty_inputs.clear()
        train(make("amp"), reference, epochs=1)
        demo_grads[reference] = [x.grad for x in penalty_inputs]
    assert len(demo_grads[True]) == 4 and all(g is not None for g in demo_grads[True])
    assert len(demo_grads[False]) == 4 and all(g is None for g in demo_grads[False])


def test_loading_a_checkpoint_keeps_the_agents_update_path(tmp_path):
    # The optimiser's param groups are saved with their "fused" flag; loading keeps the path
    # the agent was set to, not the one the checkpoint was written with.
    writer = make("amp")
    train(writer, reference=True, epochs=1)
    writer.save(tmp_path / "a.pt")
    reader = make("amp")
    reader.load(tmp_path / "a.pt")
    assert all(group["fused"] for group in reader.optimizer.param_groups)
    # and training from the checkpoint goes on the same on either path
    continued = {}
    for reference in (False, True):
        agent = make("amp")
        agent.load(tmp_path / "a.pt")
        train(agent, reference, epochs=1)
        continued[reference] = agent
    assert_same_learning(continued[False], continued[True])

