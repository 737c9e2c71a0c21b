"""The update's timing details as in the ASE release (issue 21, items 3-5): value normaliser
clamp, when the observation normalisers learn, how the discriminator's demo and replay samples
are drawn. Tiny agents on random tensors; each test fails on the code before these options."""

from __future__ import annotations

import math

import pytest
import torch

from ase_humanoid.agents import AMPAgent, AMPConfig, PPOAgent, PPOConfig, from_dict
from ase_humanoid.config import compose_config
from ase_humanoid.errors import ConfigError

OBS, ACT, AMP, ENVS, HORIZON = 5, 3, 6, 8, 4
BATCH = ENVS * HORIZON  # 32 samples per epoch


pytestmark = pytest.mark.usefixtures("single_torch_thread")


def small(config_class, **overrides):
    values = dict(actor_units=[16], critic_units=[16], horizon_length=HORIZON, minibatch_size=16,
                  mini_epochs=2, learning_rate=1e-3, seed=5)
    if issubclass(config_class, AMPConfig):
        values.update(disc_units=[16], amp_obs_demo_buffer_size=64, amp_replay_buffer_size=48,
                      amp_batch_size=16, amp_minibatch_size=16)
    values.update(overrides)
    return config_class(**values)


def unique_demo_fetcher():
    """Demo rows that are all different: the first column counts up."""
    counter = [0]

    def fetch(n: int) -> torch.Tensor:
        rows = torch.randn(n, AMP)
        rows[:, 0] = torch.arange(counter[0], counter[0] + n, dtype=torch.float32)
        counter[0] += n
        return rows

    return fetch


def fill_rollout(agent, gen: torch.Generator) -> None:
    obs = torch.randn(ENVS, OBS, generator=gen)
    for _ in range(HORIZON):
        out = agent.act(obs)
        next_obs = torch.randn(ENVS, OBS, generator=gen)
        info = {"amp_obs": torch.randn(ENVS, AMP, generator=gen)} if isinstance(agent, AMPAgent) else {}
        no = torch.zeros(ENVS, dtype=torch.bool)
        agent.record_transition(obs, out["actions"], torch.rand(ENVS, generator=gen), no, no, next_obs, info)
        obs = next_obs


def set_stats(norm, mean: float, var: float, count: float = 1e12) -> None:
    norm.mean.fill_(mean)
    norm.var.fill_(var)
    norm.count.fill_(count)


def rows(x: torch.Tensor) -> list[tuple[float, ...]]:
    return [tuple(r) for r in x.tolist()]


# ----------------------------------------------------------------------------- item 3: value clamp


def test_critic_output_is_clamped_to_5_normalised_units_before_denormalising():
    agent = PPOAgent(OBS, ACT, ENVS, small(PPOConfig))
    set_stats(agent.value_norm, mean=2.0, var=9.0)
    agent._critic_value = lambda obs_n, cond: torch.full((obs_n.shape[0],), 100.0)
    obs = torch.randn(ENVS, OBS)
    top = 2.0 + 5.0 * math.sqrt(9.0 + agent.value_norm.eps)
    torch.testing.assert_close(agent.value(obs), torch.full((ENVS,), top))
    torch.testing.assert_close(agent.act(obs)["value"], torch.full((ENVS,), top))


def test_value_targets_are_clamped_to_5_normalised_units():
    agent = PPOAgent(OBS, ACT, ENVS, small(PPOConfig))
    fill_rollout(agent, torch.Generator().manual_seed(0))
    set_stats(agent.value_norm, mean=2.0, var=9.0)  # 1e12 samples: this batch barely moves them
    returns = torch.zeros(HORIZON, ENVS)
    returns[0], returns[1] = 1000.0, -1000.0
    batch = agent._training_batch(torch.zeros(HORIZON, ENVS), returns)
    assert batch["returns"].max().item() == 5.0 and batch["returns"].min().item() == -5.0
    assert batch["returns"][2 * ENVS:].abs().max().item() < 1.0  # the others as before


def test_value_norm_clip_null_turns_the_clamp_off():
    agent = PPOAgent(OBS, ACT, ENVS, small(PPOConfig, value_norm_clip=None))
    set_stats(agent.value_norm, mean=2.0, var=9.0)
    agent._critic_value = lambda obs_n, cond: torch.full((obs_n.shape[0],), 100.0)
    expected = 2.0 + 100.0 * math.sqrt(9.0 + agent.value_norm.eps)
    torch.testing.assert_close(agent.value(torch.randn(2, OBS)), torch.full((2,), expected))


@pytest.mark.parametrize("key, value", [("normalizer_update", "always"), ("disc_sampling", "never"),
                                        ("value_norm_clip", 0.0), ("value_norm_clip", -5.0)])
def test_bad_update_options_name_the_key(key, value):
    with pytest.raises(ConfigError, match=f"key '{key}': "):
        from_dict(AMPConfig, {key: value})


# ----------------------------------------------------------------------------- item 4: normaliser timing


def normalize_calls(norm) -> list[float]:
    """Wrap `norm.normalize` to record the sample count its statistics hold at each call."""
    counts: list[float] = []
    plain = norm.normalize

    def recording(x):
        counts.append(norm.count.item())
        return plain(x)

    norm.normalize = recording
    return counts


def test_per_minibatch_obs_statistics_learn_from_each_training_minibatch_before_it_is_normalised():
    agent = PPOAgent(OBS, ACT, ENVS, small(PPOConfig, normalizer_update="per_minibatch"))
    fill_rollout(agent, torch.Generator().manual_seed(1))
    obs = agent.rollout.flat("obs").double()
    counts = normalize_calls(agent.obs_norm)
    agent.update()
    steps = agent.config.mini_epochs * BATCH // agent.config.minibatch_size  # 4 minibatch steps
    # first the rollout's last next values, with the statistics the rollout acted with (count 0),
    # then one call per minibatch after that minibatch joined the statistics
    assert counts == [0.0] + [16.0 * (k + 1) for k in range(steps)]
    # every sample joined once per mini-epoch: the statistics are those of the rollout
    assert agent.obs_norm.count.item() == agent.config.mini_epochs * BATCH
    torch.testing.assert_close(agent.obs_norm.mean, obs.mean(0))
    torch.testing.assert_close(agent.obs_norm.var, obs.var(0, unbiased=False))


def test_per_epoch_obs_statistics_learn_once_after_the_update():
    agent = PPOAgent(OBS, ACT, ENVS, small(PPOConfig, normalizer_update="per_epoch"))
    fill_rollout(agent, torch.Generator().manual_seed(1))
    counts = normalize_calls(agent.obs_norm)
    agent.update()
    # every normalisation of the update (once per update on the fast path, once per minibatch
    # on the reference one) uses the statistics from before it
    assert counts and set(counts) == {0.0}
    assert agent.obs_norm.count.item() == BATCH


def test_per_minibatch_amp_statistics_take_agent_replay_demo_and_rewards_use_the_old_ones():
    agent = AMPAgent(OBS, ACT, AMP, ENVS, unique_demo_fetcher(),
                     small(AMPConfig, normalizer_update="per_minibatch"))
    gen = torch.Generator().manual_seed(2)
    fill_rollout(agent, gen)
    agent.update()  # the replay buffer now holds this epoch's agent samples
    fill_rollout(agent, gen)
    agent._refill_demo = lambda n: None  # keep the demo buffer as it is, to compare rewards below
    expected_reward = agent.calc_style_reward(agent.rollout.flat("amp_obs")).mean().item()
    count_before = agent.amp_norm.count.item()
    updates: list[torch.Tensor] = []
    plain = agent.amp_norm.update
    agent.amp_norm.update = lambda x: (updates.append(x.clone()), plain(x))
    agent_rows = set(rows(agent.rollout.flat("amp_obs")))
    replay_rows = set(rows(agent.replay_buffer.samples[:len(agent.replay_buffer)]))
    demo_rows = set(rows(agent.demo_buffer.samples[:len(agent.demo_buffer)]))
    stats = agent.update()

    assert stats["disc_reward_mean"] == pytest.approx(expected_reward, rel=1e-6)
    steps = agent.config.mini_epochs * BATCH // agent.config.minibatch_size
    assert len(updates) == 3 * steps  # agent, replay, demo per discriminator step
    for k, x in enumerate(updates):
        source = (agent_rows, replay_rows, demo_rows)[k % 3]
        assert x.shape == (16, AMP) and set(rows(x)) <= source
    assert agent.amp_norm.count.item() == count_before + 3 * steps * 16


def test_per_epoch_amp_statistics_take_agent_and_demo_before_the_rewards():
    agent = AMPAgent(OBS, ACT, AMP, ENVS, unique_demo_fetcher(), small(AMPConfig, normalizer_update="per_epoch"))
    fill_rollout(agent, torch.Generator().manual_seed(2))
    agent.update()
    assert agent.amp_norm.count.item() == 2 * BATCH  # the rollout's and as many demo samples


# ----------------------------------------------------------------------------- item 5: discriminator samples


def disc_inputs(agent) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Record the (agent, replay, demo) AMP observations of every discriminator step."""
    seen = []
    plain = agent._disc_batch

    def recording(mb):
        out = plain(mb)
        seen.append(tuple(x.detach().clone() for x in out))
        return out

    agent._disc_batch = recording
    return seen


def two_epochs(disc_sampling: str):
    """What the second update of an AMP agent (raw AMP inputs to the discriminator) fed the
    discriminator, per mini-epoch: [(replay rows, demo rows)] of 32 rows each, and the rows its
    replay buffer held then (the first epoch's 32 agent samples)."""
    agent = AMPAgent(OBS, ACT, AMP, ENVS, unique_demo_fetcher(),
                     small(AMPConfig, disc_sampling=disc_sampling, normalize_amp_input=False))
    gen = torch.Generator().manual_seed(3)
    fill_rollout(agent, gen)
    agent.update()
    fill_rollout(agent, gen)
    replay_all = rows(agent.replay_buffer.samples[:len(agent.replay_buffer)])
    seen = disc_inputs(agent)
    agent.update()
    per_step = len(seen) // agent.config.mini_epochs  # 2 discriminator steps per mini-epoch
    epochs = [seen[k:k + per_step] for k in range(0, len(seen), per_step)]
    return replay_all, [(rows(torch.cat([s[1] for s in e])), rows(torch.cat([s[2] for s in e]))) for e in epochs]


def test_per_epoch_disc_samples_are_one_set_without_replacement_split_across_minibatches():
    replay_all, mini_epochs = two_epochs("per_epoch")
    assert len(replay_all) == BATCH  # the epoch's set is all of them
    replay_all = set(replay_all)
    demo_sets = []
    for replay, demo in mini_epochs:
        assert len(replay) == len(set(replay)) == BATCH and set(replay) == replay_all
        assert len(demo) == len(set(demo)) == BATCH  # 32 different rows of the 64 in the buffer
        demo_sets.append(set(demo))
    assert demo_sets[0] == demo_sets[1]  # the same epoch set in every mini-epoch


def test_per_minibatch_disc_samples_are_drawn_with_replacement():
    _, mini_epochs = two_epochs("per_minibatch")
    replay, demo = mini_epochs[0]
    assert len(set(replay)) < BATCH  # 32 draws from 32 rows repeat some


def test_indices_without_replacement_cover_every_row_before_repeating():
    from ase_humanoid.agents.buffers import indices_without_replacement

    gen = torch.Generator().manual_seed(0)
    idx = indices_without_replacement(10, 25, gen, torch.device("cpu"))
    assert idx.shape == (25,)
    for start in (0, 10):
        assert sorted(idx[start:start + 10].tolist()) == list(range(10))
    assert len(set(idx[20:].tolist())) == 5


# ----------------------------------------------------------------------------- profiles


@pytest.mark.parametrize("task", ["HumanoidASE", "HumanoidAMP", "HumanoidHeading"])
def test_paper_profile_uses_the_release_timing_and_cpu_its_measured_one(task):
    paper = compose_config(["sim=mujoco", "profile=paper", f"task={task}"]).train.params
    assert paper.normalizer_update == "per_minibatch" and paper.value_norm_clip == 5.0
    assert paper.get("disc_sampling", "per_epoch") == "per_epoch"
    # the CPU profile keeps the timing its learning curves were measured with (cfg/profiles/cpu.yaml)
    cpu = compose_config(["sim=mujoco", "profile=cpu", f"task={task}"]).train.params
    assert cpu.normalizer_update == "per_epoch" and cpu.value_norm_clip == 5.0
    assert cpu.get("disc_sampling", "per_minibatch") == "per_minibatch"