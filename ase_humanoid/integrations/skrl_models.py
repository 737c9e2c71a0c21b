"""skrl `Model` views of a project agent's networks.

skrl's agents and tools expect `agent.models[role]` to be skrl Models (`act(inputs, role=...)`,
`enable_training_mode`, `state_dict` for checkpoints). These views hold the project agent's own
modules (registered as submodules: the same parameters, not copies) and compute through the
agent's own normalisers, so `models["policy"].act({"observations": obs})` gives the actions the
project agent would take. Training never goes through them: the adapter's update is the project
agent's `update()`.

Inputs and outputs (N rows):
  policy         inputs["observations"] [N, obs_dim] raw (un-normalised); ASE also reads
                 inputs["latents"] [N, latent_dim] (default: the agent's current per-env latents,
                 which need N == num_envs) -> actions [N, A], {"log_std", "log_prob", "mean_actions"}
  value          same inputs -> V [N, 1] in reward units (de-normalised)
  discriminator  inputs["observations"] [N, amp_obs_dim] raw AMP observations -> logits [N, 1]
"""

from __future__ import annotations

from typing import Any

import torch

from ase_humanoid.errors import ConfigError
from ase_humanoid.integrations import SKRL_MISSING

try:
    from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(SKRL_MISSING) from err


def _conditioning(agent, inputs: dict[str, Any], rows: int) -> dict[str, torch.Tensor]:
    """The agent's per-env conditioning (ASE: latents) for `rows` inputs, from `inputs` where given."""
    cond = agent._conditioning()
    for key in cond:
        if key in inputs and inputs[key] is not None:
            cond[key] = torch.as_tensor(inputs[key], device=agent.device, dtype=torch.float32)
        elif cond[key].shape[0] != rows:
            raise ConfigError(f"{type(agent).__name__} acts on inputs['{key}'] too: pass it for {rows} rows "
                              f"(the agent's own {key} cover its {cond[key].shape[0]} envs)")
    return cond


class PolicyView(GaussianMixin, Model):
    """The project agent's Gaussian policy (its actor, normaliser and log-std) as a skrl model."""

    def __init__(self, agent, observation_space, action_space):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=agent.device)
        GaussianMixin.__init__(self, clip_actions=False, clip_log_std=False, reduction="sum")
        self.actor = agent.actor
        self._agent = (agent,)  # a tuple: the agent is no Module and must not be registered

    def compute(self, inputs, role=""):
        agent = self._agent[0]
        obs = inputs["observations"]
        cond = _conditioning(agent, inputs, obs.shape[0])
        mu = agent._policy_mu(agent._normalize_obs(obs), cond)
        return mu, {"log_std": agent.log_std.expand_as(mu)}


class ValueView(DeterministicMixin, Model):
    """The project agent's critic as a skrl model: V in reward units `[N, 1]`."""

    def __init__(self, agent, observation_space):
        Model.__init__(self, observation_space=observation_space, action_space=None, device=agent.device)
        DeterministicMixin.__init__(self, clip_actions=False)
        self.critic = agent.critic
        self._agent = (agent,)

    def compute(self, inputs, role=""):
        agent = self._agent[0]
        obs = inputs["observations"]
        cond = _conditioning(agent, inputs, obs.shape[0])
        return agent._denormalize_value(agent._critic_value(agent._normalize_obs(obs), cond)).unsqueeze(-1), {}


class DiscriminatorView(DeterministicMixin, Model):
    """The project agent's discriminator (ASE: with its encoder head) as a skrl model: logits `[N, 1]`
    of raw AMP observations, through the agent's AMP normaliser."""

    def __init__(self, agent, amp_observation_space):
        Model.__init__(self, observation_space=amp_observation_space, action_space=None, device=agent.device)
        DeterministicMixin.__init__(self, clip_actions=False)
        self.disc = agent.disc
        self._agent = (agent,)

    def compute(self, inputs, role=""):
        agent = self._agent[0]
        return self.disc.logit(agent._normalize_amp(inputs["observations"])).unsqueeze(-1), {}


class ProjectState:
    """The project agent's whole state as one skrl checkpoint module (`state_dict` /
    `load_state_dict`): networks, optimiser, normalisers, counters, RNG, latents and the rollout,
    without the AMP demo/replay samples (a resumed agent refills its demo buffer and starts with
    an empty replay buffer; `save_project_checkpoint` writes the project's own format)."""

    def __init__(self, agent):
        self.agent = agent

    def state_dict(self) -> dict[str, Any]:
        return self.agent.state_dict(include_buffers=False)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.agent.load_state_dict(state)
