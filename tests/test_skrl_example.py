"""examples/skrl_amp.py: skrl's own AMP agent trains on HumanoidAMP through skrl's stock
gymnasium wrapper (no adapter): two updates on a handful of envs. Skipped without skrl."""

from __future__ import annotations

import pytest
import torch
from project_scripts import load_script

pytest.importorskip("skrl")


def load_example():
    return load_script("examples/skrl_amp.py")


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")  # skrl's wrapper re-wraps tensors
def test_skrl_amp_trains_two_updates_through_the_stock_wrapper(tmp_path):
    from skrl.envs.wrappers.torch.gymnasium_envs import GymnasiumWrapper

    example = load_example()
    env, agent = example.train(num_envs=4, timesteps=8, rollouts=4, units=(32,), disc_units=(32,),
                               experiment_dir=str(tmp_path), write_interval=0, checkpoint_interval=0,
                               num_threads=1, seed=0, max_episode_length=3)
    assert isinstance(env, GymnasiumWrapper) and env.num_envs == 4
    data = agent.tracking_data
    assert len(data["Loss / Discriminator loss"]) == 2 and len(data["Loss / Policy loss"]) == 2
    assert all(torch.isfinite(torch.tensor(v)).all() for v in data["Loss / Policy loss"])
    # the env's episode summaries reached skrl's logger (episodes of 3 steps in 8 steps)
    assert data["Episode/length"] == [3.0, 3.0] and data["Episode/count"] == [4.0, 4.0]
    # skrl stored the env's AMP observations of the last rollout
    amp = agent.memory.get_tensor_by_name("amp_observations")
    assert amp.shape[-1] == env.amp_observation_space.shape[0] and amp.abs().sum() > 0
    env.close()
