"""Tests of the PPO / AMP / ASE learning algorithms on small networks and torch-only fake tasks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ase_humanoid.agents import AMPAgent, AMPConfig, ASEAgent, ASEConfig, PPOAgent, PPOConfig, from_dict
from ase_humanoid.agents.amp import discriminator_loss, input_gradient_penalty, style_reward
from ase_humanoid.agents.ase import diversity_loss, encoder_loss, encoder_reward
from ase_humanoid.agents.buffers import ReplayBuffer
from ase_humanoid.agents.networks import Discriminator
from ase_humanoid.agents.normalizer import RunningMeanStd
from ase_humanoid.agents.ppo_losses import bounds_loss, compute_gae
from ase_humanoid.errors import CheckpointError, ConfigError

OBS, ACT, AMP, ENVS = 5, 3, 6, 8


pytestmark = pytest.mark.usefixtures("single_torch_thread")


def small_ase_config(**overrides) -> ASEConfig:
    values = dict(actor_units=[32, 32], critic_units=[32], disc_units=[32, 16], style_units=[16],
                  latent_dim=4, horizon_length=4, minibatch_size=16, mini_epochs=2,
                  amp_obs_demo_buffer_size=64, amp_replay_buffer_size=48, amp_batch_size=16,
                  amp_minibatch_size=16, learning_rate=1e-3, seed=3)
    values.update(overrides)
    return ASEConfig(**values)


def demo_fetcher(seed: int = 0, mean: float = 1.0, dim: int = AMP):
    gen = torch.Generator().manual_seed(seed)

    def fetch(n: int) -> torch.Tensor:
        return torch.randn(n, dim, generator=gen) * 0.5 + mean

    fetch.generator = gen
    return fetch


# ----------------------------------------------------------------------------- formulas


def test_gradient_penalty_matches_hand_derivative_of_known_network():
    # logit(x) = w2 . relu(W1 x + b1) + b2, so d logit / dx = W1^T (w2 * [W1 x + b1 > 0])
    disc = Discriminator(in_dim=2, units=[3], activation="relu", logit_init_scale=1.0)
    w1 = torch.tensor([[1.0, -2.0], [0.5, 0.5], [-1.0, 3.0]])
    b1 = torch.tensor([0.1, -0.2, 0.3])
    w2 = torch.tensor([[2.0, -1.0, 0.5]])
    with torch.no_grad():
        disc.trunk[0].weight.copy_(w1)
        disc.trunk[0].bias.copy_(b1)
        disc.logit_head.weight.copy_(w2)
        disc.logit_head.bias.fill_(0.7)
    x = torch.tensor([[1.0, 0.5], [-1.0, 2.0], [0.3, -0.4]], requires_grad=True)
    penalty = input_gradient_penalty(disc.logit(x), x)

    expected = []
    for row in x.detach().tolist():
        pre = [sum(w1[j, k].item() * row[k] for k in range(2)) + b1[j].item() for j in range(3)]
        grad = [sum(w1[j, k].item() * w2[0, j].item() * (pre[j] > 0) for j in range(3))
                for k in range(2)]
        expected.append(grad[0] ** 2 + grad[1] ** 2)
    assert penalty.item() == pytest.approx(sum(expected) / 3, rel=1e-6)

    # and against autograd's Jacobian of each row on its own
    jac = torch.stack([torch.autograd.functional.jacobian(lambda v: disc.logit(v.unsqueeze(0))[0], row)
                       for row in x.detach()])
    assert penalty.item() == pytest.approx(jac.square().sum(-1).mean().item(), rel=1e-6)
    # the penalty is differentiable (it is part of the discriminator loss)
    penalty.backward()
    assert disc.trunk[0].weight.grad is not None


def test_style_reward_formula_and_clamp():
    logits = torch.tensor([0.0, -3.0, 2.0, 30.0])
    reward = style_reward(logits, scale=2.0)
    expected = [-math.log(max(1 - 1 / (1 + math.exp(-v)), 1e-4)) * 2 for v in logits.tolist()]
    assert reward.tolist() == pytest.approx(expected, rel=1e-5)
    assert reward[0].item() == pytest.approx(2 * math.log(2), rel=1e-6)
    assert reward[3].item() == pytest.approx(-2 * math.log(1e-4), rel=1e-6)  # clamped


def test_discriminator_bce_values():
    agent = torch.tensor([0.0, 0.0])
    demo = torch.tensor([0.0])
    assert discriminator_loss(agent, demo).item() == pytest.approx(math.log(2), rel=1e-6)
    loss = discriminator_loss(torch.tensor([-2.0]), torch.tensor([3.0]))
    expected = 0.5 * (math.log(1 + math.exp(-2.0)) + math.log(1 + math.exp(-3.0)))
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_diversity_loss_hand_computed():
    mu = torch.tensor([[0.5, -0.2], [1.5, 0.0]])
    mu_other = torch.tensor([[0.1, 0.3], [-2.0, 0.0]])
    z = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    z_other = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
    # row 0: a_diff = (0.4^2 + 0.5^2) / 2 = 0.205, z_diff = (1 - 0) / 2 = 0.5
    # row 1: actions clipped to [-1, 1]: a_diff = 2^2 / 2 = 2, z_diff = (1 - 1) / 2 = 0
    row0 = (1.0 - 0.205 / (0.5 + 1e-5)) ** 2
    row1 = (1.0 - 2.0 / 1e-5) ** 2
    loss = diversity_loss(mu, mu_other, z, z_other, target=1.0).mean()
    assert loss.item() == pytest.approx((row0 + row1) / 2, rel=1e-5)


def test_encoder_reward_and_loss_hand_computed():
    enc = torch.tensor([[0.6, 0.8], [0.6, 0.8], [0.0, 1.0]])
    z = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    assert encoder_reward(enc, z, scale=1.0).tolist() == pytest.approx([0.6, 0.0, 1.0])
    assert encoder_reward(enc, z, scale=2.0).tolist() == pytest.approx([1.2, 0.0, 2.0])
    assert encoder_loss(enc, z).item() == pytest.approx(-(0.6 - 0.6 + 1.0) / 3)


def test_bounds_loss():
    mu = torch.tensor([[0.5, 1.5, -3.0], [1.0, -1.0, 0.0]])
    assert bounds_loss(mu, 1.0).tolist() == pytest.approx([0.25 + 4.0, 0.0])


def test_gae_with_truncation_and_termination_hand_computed():
    gamma, lam = 0.9, 0.8
    # env 0: truncated at t=1 (bootstraps from V(final obs) = 10), env 1: terminated at t=2
    rewards = torch.tensor([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    values = torch.tensor([[0.5, 0.2], [0.6, 0.3], [0.7, 0.4]])
    next_values = torch.tensor([[0.6, 0.3], [10.0, 0.4], [0.8, 5.0]])
    terminated = torch.tensor([[False, False], [False, False], [False, True]])
    dones = torch.tensor([[False, False], [True, False], [False, True]])
    adv, ret = compute_gae(rewards, values, next_values, terminated, dones, gamma, lam)
    # env 0: deltas 1.04, 10.4, 3.02; A2 = 3.02, A1 = 10.4 (episode ends), A0 = 1.04 + 0.72 * 10.4
    # env 1: deltas 1.07, 1.06, 0.6 (no bootstrap); A1 = 1.06 + 0.72 * 0.6, A0 = 1.07 + 0.72 * A1
    a1_env1 = 1.06 + 0.72 * 0.6
    expected = torch.tensor([[1.04 + 0.72 * 10.4, 1.07 + 0.72 * a1_env1],
                             [10.4, a1_env1],
                             [3.02, 0.6]])
    torch.testing.assert_close(adv, expected)
    torch.testing.assert_close(ret, expected + values)


# ----------------------------------------------------------------------------- buffers, normaliser


def test_replay_buffer_keeps_new_samples_with_probability_once_full():
    gen = torch.Generator().manual_seed(0)
    buf = ReplayBuffer(capacity=2000, dim=1, keep_prob=0.01, device=torch.device("cpu"))
    assert buf.insert(torch.zeros(1500, 1), gen) == 1500  # not full: everything is stored
    assert buf.insert(torch.zeros(500, 1), gen) == 500
    assert buf.is_full
    offered = 60_000
    stored = sum(buf.insert(torch.ones(1000, 1), gen) for _ in range(offered // 1000))
    assert (buf.samples == 1).sum().item() == stored
    std = math.sqrt(offered * 0.01 * 0.99)
    assert abs(stored - 0.01 * offered) < 5 * std
    assert len(buf) == 2000


def test_normalizer_matches_numpy_over_batches():
    rng = np.random.default_rng(0)
    # 2500 rows: a batch over several of update's float64 blocks (BLOCK_ROWS); 0 rows: no change
    batches = [rng.normal(3.0, 2.0, size=(n, 4)) * np.array([1, 10, 0.1, 1]) for n in (5, 17, 1, 2500, 0, 40)]
    assert RunningMeanStd.BLOCK_ROWS < 2500
    norm = RunningMeanStd(4)
    for b in batches:
        norm.update(torch.as_tensor(b, dtype=torch.float32))
    allx = np.concatenate([b.astype(np.float32) for b in batches]).astype(np.float64)
    np.testing.assert_allclose(norm.mean.numpy(), allx.mean(0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(norm.var.numpy(), allx.var(0), rtol=1e-10)
    assert norm.count.item() == len(allx)
    x = torch.as_tensor(allx[:3], dtype=torch.float32)
    torch.testing.assert_close(norm.denormalize(norm.normalize(x)), x)
    clipped = RunningMeanStd(4, clip=5.0)
    clipped.update(torch.zeros(10, 4))
    assert clipped.normalize(torch.ones(1, 4)).max().item() == 5.0


# ----------------------------------------------------------------------------- ASE latents


def rollout_step(agent, obs, terminated=None, truncated=None, final_obs=None, gen=None):
    gen = gen or torch.Generator().manual_seed(1)
    n = agent.num_envs
    out = agent.act(obs)
    next_obs = torch.randn(n, agent.obs_dim, generator=gen)
    info = {"amp_obs": torch.randn(n, agent.amp_obs_dim, generator=gen)} if hasattr(agent, "amp_obs_dim") else {}
    agent.record_transition(obs, out["actions"], torch.rand(n, generator=gen),
                            torch.zeros(n, dtype=torch.bool) if terminated is None else terminated,
                            torch.zeros(n, dtype=torch.bool) if truncated is None else truncated,
                            next_obs, info, final_obs=final_obs)
    return out, next_obs


def test_latents_unit_norm_and_schedule():
    agent = ASEAgent(OBS, ACT, AMP, 64, demo_fetcher(), small_ase_config(horizon_length=200, minibatch_size=64))
    torch.testing.assert_close(agent.latents.norm(dim=-1), torch.ones(64))
    steps = agent._sample_latent_steps(20_000)
    assert steps.min().item() == 1 and steps.max().item() == 149  # randint[1, 150)
    assert 1 <= agent.latent_steps_left.min() and agent.latent_steps_left.max() < 150

    obs = torch.randn(64, OBS)
    for _ in range(5):
        before = agent.latents.clone()
        left = agent.latent_steps_left.clone()
        done = torch.zeros(64, dtype=torch.bool)
        done[:3] = True
        out, obs = rollout_step(agent, obs, truncated=done)
        torch.testing.assert_close(out["latents"], before)  # act used the current latents
        expire = (left == 1) | done
        changed = (agent.latents != before).any(-1)
        assert torch.equal(changed, expire)
        assert torch.equal(agent.latent_steps_left[~expire], left[~expire] - 1)
        assert (agent.latent_steps_left[expire] >= 1).all()
        torch.testing.assert_close(agent.latents.norm(dim=-1), torch.ones(64))

    # explicit reset by the runner
    before = agent.latents.clone()
    agent.reset_envs(torch.tensor([10, 11]))
    changed = (agent.latents != before).any(-1)
    assert changed[10] and changed[11] and changed.sum() == 2


def test_set_latents_holds_through_resets():
    agent = ASEAgent(OBS, ACT, AMP, ENVS, demo_fetcher(), small_ase_config(horizon_length=200, minibatch_size=8))
    z = torch.tensor([3.0, 0.0, 4.0, 0.0])
    agent.set_latents(z)
    obs = torch.randn(ENVS, OBS)
    for _ in range(160):
        out, obs = rollout_step(agent, obs, terminated=torch.ones(ENVS, dtype=torch.bool))
    torch.testing.assert_close(agent.latents, torch.tensor([[0.6, 0.0, 0.8, 0.0]]).expand(ENVS, 4))
    agent.release_latents()
    assert not torch.allclose(agent.latents[0], agent.latents[1])


def test_agent_encoder_and_style_reward_methods():
    agent = ASEAgent(OBS, ACT, AMP, ENVS, demo_fetcher(), small_ase_config())
    amp = torch.randn(10, AMP)
    z = agent.sample_latents(10)
    enc = agent.encode(amp)
    torch.testing.assert_close(enc.norm(dim=-1), torch.ones(10))
    torch.testing.assert_close(agent.calc_encoder_reward(amp, z), (enc * z).sum(-1).clamp_min(0))
    torch.testing.assert_close(agent.calc_style_reward(amp), style_reward(agent.disc_logits(amp), 2.0))
    obs = torch.randn(ENVS, OBS)
    agent.set_latents(z[:ENVS])
    torch.testing.assert_close(agent.action_mean(obs, z[:ENVS]), agent.act(obs, deterministic=True)["actions"])


# ----------------------------------------------------------------------------- PPO details


def test_truncated_envs_bootstrap_from_final_obs():
    cfg = PPOConfig(actor_units=[16], critic_units=[16], horizon_length=2, minibatch_size=4, seed=0)
    agent = PPOAgent(OBS, ACT, 2, cfg)
    obs = torch.randn(2, OBS)
    final = torch.randn(2, OBS) * 3
    truncated = torch.tensor([True, False])
    out, next_obs = rollout_step(agent, obs, truncated=truncated, final_obs=final)
    stored = agent.rollout.data["next_values"][0]

    def value_of_final(k: int) -> float:
        # the agent evaluates the rows it needs as a batch of their own: a one-row batch here
        # (against a two-row one the BLAS may round the last bit differently)
        return agent.value(final[k:k + 1])[0].item()

    assert stored[0].item() == pytest.approx(value_of_final(0))  # an ended env: at once
    assert agent.rollout.data["dones"][0].tolist() == [True, False]
    assert agent.rollout.data["terminated"][0].tolist() == [False, False]
    # info["final_obs"] is the default source of the final observation
    agent.act(next_obs)
    agent.record_transition(next_obs, torch.zeros(2, ACT), torch.zeros(2), torch.zeros(2, dtype=torch.bool),
                            truncated, torch.zeros(2, OBS), {"final_obs": final})
    # env 1 went on, but from another observation than its final one: evaluated on the final one
    assert stored[1].item() == pytest.approx(value_of_final(1))
    assert agent.rollout.data["next_values"][1][0].item() == pytest.approx(value_of_final(0))


@pytest.mark.parametrize("algo", ["ppo", "ase"])
@pytest.mark.parametrize("defer", [True, False], ids=["deferred", "own_pass"])
def test_next_values_are_the_critic_on_each_steps_final_obs_and_conditioning(algo, defer):
    """Continuing envs take their next value from the next step's act() (deferred, the CPU way;
    an accelerator gives each step a pass of its own); whatever mix of ends, resets and latent
    changes, each stored next value is V(final obs of step t, conditioning of t)."""
    n = 16
    if algo == "ppo":
        agent = PPOAgent(OBS, ACT, n, PPOConfig(actor_units=[16], critic_units=[16], horizon_length=6,
                                                minibatch_size=16, seed=0))
    else:  # latents held 1-2 steps: many change while the env goes on
        agent = ASEAgent(OBS, ACT, AMP, n, demo_fetcher(), small_ase_config(
            horizon_length=6, minibatch_size=16, latent_steps_min=1, latent_steps_max=3))
    assert agent.defer_next_values  # on the CPU
    agent.defer_next_values = defer
    gen = torch.Generator().manual_seed(3)
    obs = torch.randn(n, OBS, generator=gen)
    expected = []
    for _ in range(6):
        out = agent.act(obs)
        cond = {k: out[k].clone() for k in agent._conditioning()}
        final = torch.randn(n, OBS, generator=gen)
        terminated = torch.rand(n, generator=gen) < 0.15
        truncated = (torch.rand(n, generator=gen) < 0.15) & ~terminated
        ended = terminated | truncated
        next_obs = torch.where(ended.unsqueeze(-1), torch.randn(n, OBS, generator=gen), final)  # resets
        info = {"final_obs": final}
        if algo == "ase":
            info["amp_obs"] = torch.randn(n, AMP, generator=gen)
        agent.record_transition(obs, out["actions"], torch.zeros(n), terminated, truncated, next_obs, info)
        expected.append(agent.value(final, cond))
        obs = next_obs
    agent._settle_next_values()  # what update() does first
    torch.testing.assert_close(agent.rollout.data["next_values"], torch.stack(expected))
    assert agent._pending_next_values is None


def test_eps_greedy_envs_use_mean_action():
    cfg = small_ase_config(enable_eps_greedy=True, minibatch_size=8)
    agent = ASEAgent(OBS, ACT, AMP, ENVS, demo_fetcher(), cfg)
    probs = agent._rand_action_probs
    assert probs[0].item() == 1.0 and probs[-1].item() == 0.0
    assert probs[3].item() == pytest.approx(1 - math.exp(10 * (3 / 7 - 1)))
    out = agent.act(torch.randn(ENVS, OBS))
    torch.testing.assert_close(out["actions"][-1], out["mu"][-1])
    assert not torch.allclose(out["actions"][0], out["mu"][0])
    off = ASEAgent(OBS, ACT, AMP, ENVS, demo_fetcher(), small_ase_config(enable_eps_greedy=False, minibatch_size=8))
    assert (off._rand_action_probs == 1).all()


def test_eps_greedy_mean_actions_stay_out_of_policy_losses():
    """As in the ASE release: samples where eps-greedy acted with the mean are left out of the
    advantage statistics and the actor, bounds and diversity losses; the critic keeps them."""
    # per_epoch: with per_minibatch statistics each _loss call would also move the observation
    # normaliser (by the altered observations), which is not what this test is about
    cfg = small_ase_config(enable_eps_greedy=True, minibatch_size=32, normalizer_update="per_epoch")
    agent = ASEAgent(OBS, ACT, AMP, ENVS, demo_fetcher(), cfg)
    gen = torch.Generator().manual_seed(1)
    for _ in range(cfg.horizon_length):
        obs = torch.randn(ENVS, OBS, generator=gen)
        out = agent.act(obs)
        info = {"amp_obs": torch.randn(ENVS, AMP, generator=gen)}
        agent.record_transition(obs, out["actions"], torch.rand(ENVS, generator=gen),
                                torch.zeros(ENVS, dtype=torch.bool), torch.zeros(ENVS, dtype=torch.bool), obs, info)
    sampled = agent.rollout.data["sampled"]  # [T, N]
    assert sampled[:, 0].all() and not sampled[:, -1].any()  # env 0 always samples, env N-1 never
    raw = torch.randn(cfg.horizon_length, ENVS, generator=gen) * 3.0 + 1.0
    batch = agent._training_batch(raw, torch.zeros_like(raw))
    mask = batch["sampled"]
    assert 0 < int(mask.sum()) < mask.numel()
    assert batch["advantages"][mask].mean().item() == pytest.approx(0.0, abs=1e-5)
    assert batch["advantages"][mask].std().item() == pytest.approx(1.0, rel=1e-4)

    def losses(mb):
        rng_state = agent.rng.get_state()  # the diversity loss draws other latents
        _, stats = agent._loss(mb)
        agent.rng.set_state(rng_state)
        return stats

    base = losses(batch)
    changed = dict(batch)
    changed["advantages"] = torch.where(mask, batch["advantages"], torch.full_like(batch["advantages"], 1e6))
    # per_epoch: the batch carries the observations normalised once per update ("obs_n")
    obs_key = "obs_n" if "obs_n" in batch else "obs"
    changed[obs_key] = torch.where(mask.unsqueeze(-1), batch[obs_key], batch[obs_key] + 50.0)
    after = losses(changed)
    for key in ("actor_loss", "bounds_loss", "diversity_loss", "clip_frac"):
        assert after[key] == pytest.approx(base[key], rel=1e-6, abs=1e-9), key
    assert after["critic_loss"] != pytest.approx(base["critic_loss"], rel=1e-3)  # the critic sees every sample


def test_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="learning_rat"):
        from_dict(PPOConfig, {"learning_rat": 1e-3})
    with pytest.raises(ConfigError, match="horizon_length"):
        from_dict(PPOConfig, {"horizon_length": "32"})
    with pytest.raises(ConfigError, match="minibatch_size"):
        PPOAgent(OBS, ACT, 3, PPOConfig(actor_units=[8], critic_units=[8], minibatch_size=5, horizon_length=4))
    cfg = from_dict(ASEConfig, {"learning_rate": 1, "actor_units": [8, 8]})
    assert cfg.learning_rate == 1.0 and cfg.actor_units == [8, 8] and cfg.latent_dim == 64
    with pytest.raises(ConfigError, match="amp_obs_dim"):
        AMPAgent(OBS, ACT, AMP, ENVS, demo_fetcher(dim=AMP + 1), AMPConfig(actor_units=[8], critic_units=[8],
                 disc_units=[8], amp_obs_demo_buffer_size=8, amp_batch_size=8, minibatch_size=8))


def test_release_defaults():
    ppo, amp, ase = PPOConfig(), AMPConfig(), ASEConfig()
    assert (ppo.init_log_std, ppo.learning_rate, ppo.horizon_length, ppo.mini_epochs) == (-2.9, 2e-5, 32, 6)
    assert (ppo.gamma, ppo.gae_lambda, ppo.e_clip, ppo.critic_coef, ppo.bounds_loss_coef) == (0.99, 0.95, 0.2, 5, 10)
    assert amp.actor_units == [1024, 512] and amp.disc_units == [1024, 512]
    assert (amp.disc_coef, amp.disc_logit_reg, amp.disc_grad_penalty, amp.disc_weight_decay) == (5, 0.01, 5, 1e-4)
    assert (amp.disc_reward_scale, amp.amp_replay_keep_prob, amp.amp_batch_size) == (2, 0.01, 512)
    assert (amp.task_reward_w, amp.disc_reward_w) == (0.0, 1.0)
    assert ase.actor_units == [1024, 1024, 512] and ase.disc_units == [1024, 1024, 512]
    assert (ase.latent_dim, ase.latent_steps_min, ase.latent_steps_max) == (64, 1, 150)
    assert (ase.enc_coef, ase.enc_reward_scale, ase.amp_diversity_bonus, ase.amp_diversity_tar) == (5, 1, 0.01, 1.0)
    assert (ase.disc_reward_w, ase.enc_reward_w, ase.task_reward_w) == (0.5, 0.5, 0.0)


# ----------------------------------------------------------------------------- checkpoints


def run_rollout(agent, gen):
    obs = torch.randn(agent.num_envs, agent.obs_dim, generator=gen)
    outs = []
    while not agent.ready_to_update:
        term = torch.rand(agent.num_envs, generator=gen) < 0.2
        trunc = torch.rand(agent.num_envs, generator=gen) < 0.2
        out, obs = rollout_step(agent, obs, terminated=term, truncated=trunc, gen=gen)
        outs.append(out["actions"])
    return torch.stack(outs), agent.update()


def test_save_load_round_trip_continues_exactly(tmp_path):
    cfg = small_ase_config(clip_value=True, truncate_grads=True)
    fetch = demo_fetcher(seed=5)
    agent = ASEAgent(OBS, ACT, AMP, ENVS, fetch, cfg)
    run_rollout(agent, torch.Generator().manual_seed(0))
    agent.save(tmp_path / "ckpt.pt")
    fetch_state = fetch.generator.get_state()
    actions_a, stats_a = run_rollout(agent, torch.Generator().manual_seed(1))

    fetch_b = demo_fetcher(seed=99)
    other = ASEAgent(OBS, ACT, AMP, ENVS, fetch_b, small_ase_config(clip_value=True, truncate_grads=True, seed=77))
    other.load(tmp_path / "ckpt.pt")
    fetch_b.generator.set_state(fetch_state)
    actions_b, stats_b = run_rollout(other, torch.Generator().manual_seed(1))

    assert torch.equal(actions_a, actions_b)
    assert stats_a == stats_b
    for (name, p), q in zip(agent.model.state_dict().items(), other.model.state_dict().values()):
        assert torch.equal(p, q), name
    assert torch.equal(agent.latents, other.latents)
    probe = torch.randn(ENVS, OBS)
    torch.testing.assert_close(agent.act(probe, deterministic=True)["actions"],
                               other.act(probe, deterministic=True)["actions"], rtol=0, atol=0)


def test_load_errors(tmp_path):
    agent = PPOAgent(OBS, ACT, 2, PPOConfig(actor_units=[8], critic_units=[8], minibatch_size=8, seed=0))
    with pytest.raises(CheckpointError, match="does not exist"):
        agent.load(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="junk.pt"):
        agent.load(tmp_path / "junk.pt")
    agent.save(tmp_path / "ok.pt")
    bigger = PPOAgent(OBS, ACT, 2, PPOConfig(actor_units=[16], critic_units=[8], minibatch_size=8, seed=0))
    with pytest.raises(CheckpointError, match="ok.pt"):
        bigger.load(tmp_path / "ok.pt")


# ----------------------------------------------------------------------------- learning


def test_ppo_learns_one_step_bandit():
    """reward = -||a - target||^2, every step ends the episode."""
    torch.manual_seed(0)
    n = 64
    target = torch.tensor([0.5, -0.3])
    cfg = PPOConfig(actor_units=[32], critic_units=[32], init_log_std=-1.0, learning_rate=3e-3,
                    horizon_length=4, minibatch_size=128, mini_epochs=4, seed=0)
    agent = PPOAgent(2, 2, n, cfg)
    gen = torch.Generator().manual_seed(0)

    def error(a):
        return (a - target).square().sum(-1).mean().item()

    probe = torch.randn(256, 2, generator=gen)
    initial = error(agent.act(probe, deterministic=True)["actions"])
    for _ in range(25):
        while not agent.ready_to_update:
            obs = torch.randn(n, 2, generator=gen)
            actions = agent.act(obs)["actions"]
            reward = -(actions - target).square().sum(-1)
            agent.record_transition(obs, actions, reward, torch.ones(n, dtype=torch.bool),
                                    torch.zeros(n, dtype=torch.bool), obs, {})
        agent.update()
    final = error(agent.act(probe, deterministic=True)["actions"])
    assert final < 0.02 and final < initial / 5, (initial, final)


def test_amp_discriminator_learns_to_separate_demo_from_agent():
    n, amp_dim = 32, 4
    cfg = AMPConfig(actor_units=[16], critic_units=[16], disc_units=[32, 32], horizon_length=4,
                    minibatch_size=64, mini_epochs=2, amp_obs_demo_buffer_size=512,
                    amp_replay_buffer_size=512, amp_batch_size=64, amp_minibatch_size=64,
                    learning_rate=1e-3, seed=0)
    agent = AMPAgent(3, 2, amp_dim, n, demo_fetcher(seed=1, mean=1.0, dim=amp_dim), cfg)
    gen = torch.Generator().manual_seed(2)

    def agent_amp(k):  # the "policy's" AMP observations: another Gaussian
        return torch.randn(k, amp_dim, generator=gen) * 0.5 - 0.5

    probe_demo = demo_fetcher(seed=3, mean=1.0, dim=amp_dim)(512)

    def accuracy():
        return 0.5 * ((agent.disc_logits(agent_amp(512)) < 0).float().mean()
                      + (agent.disc_logits(probe_demo) > 0).float().mean()).item()

    before = accuracy()
    history = []
    for _ in range(12):
        while not agent.ready_to_update:
            obs = torch.randn(n, 3, generator=gen)
            out = agent.act(obs)
            agent.record_transition(obs, out["actions"], torch.zeros(n), torch.zeros(n, dtype=torch.bool),
                                    torch.zeros(n, dtype=torch.bool), obs, {"amp_obs": agent_amp(n)})
        history.append(agent.update())
    after = accuracy()
    assert after > before and after > 0.9, (before, after)
    last = history[-1]
    assert last["disc_agent_acc"] > 0.8 and last["disc_demo_acc"] > 0.8
    # style reward is higher on demo-like observations
    assert agent.calc_style_reward(probe_demo).mean() > agent.calc_style_reward(agent_amp(512)).mean()


def test_ase_update_reports_all_losses():
    agent = ASEAgent(OBS, ACT, AMP, ENVS, demo_fetcher(),
                     small_ase_config(enc_grad_penalty=0.1, enc_weight_decay=1e-3, latent_uniformity_coef=0.1,
                                      normalize_reward=True))
    _, stats = run_rollout(agent, torch.Generator().manual_seed(0))
    for key in ("actor_loss", "critic_loss", "bounds_loss", "disc_loss", "disc_agent_acc", "disc_demo_acc",
                "disc_grad_penalty", "enc_loss", "enc_grad_penalty", "diversity_loss", "uniformity_loss",
                "disc_reward_mean", "enc_reward_mean", "task_reward_mean", "reward_mean"):
        assert key in stats and math.isfinite(stats[key]), key
    assert len(agent.replay_buffer) == 4 * ENVS


# ----------------------------------------------------------------------------- compact demo buffer


class KeyedDemoSource:
    """A demo source whose samples are a pure function of (motion id, time) keys, as the envs'."""

    def __init__(self, seed: int = 0, dim: int = AMP):
        self.generator = torch.Generator().manual_seed(seed)
        self.basis = torch.linspace(-1.0, 1.0, dim)

    def sample_amp_obs_demo_keys(self, n):
        ids = torch.randint(0, 3, (n,), generator=self.generator)
        return ids, torch.rand(n, generator=self.generator) * 2.0

    def amp_obs_demo_from_keys(self, ids, times):
        return torch.sin(ids.unsqueeze(-1) + times.unsqueeze(-1) * self.basis)

    def fetch(self, n):
        return self.amp_obs_demo_from_keys(*self.sample_amp_obs_demo_keys(n))


def test_demo_buffer_is_checkpointed_as_keys_and_recomputed_exactly(tmp_path):
    cfg = small_ase_config(amp_obs_demo_buffer_size=40, amp_batch_size=16)
    source = KeyedDemoSource(seed=1)
    agent = ASEAgent(OBS, ACT, AMP, ENVS, source.fetch, cfg, demo_keys=source)
    run_rollout(agent, torch.Generator().manual_seed(0))  # one update: the ring wraps (40 < 48 + 16)
    state = agent.state_dict()["demo_buffer"]
    assert "samples" not in state and state["motion_ids"].dtype == torch.long
    assert state["count"] == 40 and state["total_stored"] == 64

    # Without the keys the same samples come from the plain fetcher: identical training data.
    plain = ASEAgent(OBS, ACT, AMP, ENVS, KeyedDemoSource(seed=1).fetch, cfg)
    assert torch.equal(plain.demo_buffer.samples, ASEAgent(OBS, ACT, AMP, ENVS, KeyedDemoSource(seed=1).fetch,
                                                           cfg, demo_keys=KeyedDemoSource(seed=1)).demo_buffer.samples)

    agent.save(tmp_path / "ckpt.pt")
    other_source = KeyedDemoSource(seed=9)
    other = ASEAgent(OBS, ACT, AMP, ENVS, other_source.fetch, cfg, demo_keys=other_source)
    assert not torch.equal(other.demo_buffer.samples, agent.demo_buffer.samples)
    other.load(tmp_path / "ckpt.pt")
    assert torch.equal(other.demo_buffer.samples, agent.demo_buffer.samples)
    assert other.demo_buffer.head == agent.demo_buffer.head

    # A checkpoint that holds samples (no keys) still loads, and is saved with its samples again.
    keyless = ASEAgent(OBS, ACT, AMP, ENVS, demo_fetcher(seed=2), cfg)
    keyless.save(tmp_path / "samples.pt")
    other.load(tmp_path / "samples.pt")
    assert torch.equal(other.demo_buffer.samples, keyless.demo_buffer.samples)
    assert "samples" in other.state_dict()["demo_buffer"]
