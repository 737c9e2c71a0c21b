"""Train skrl's own AMP agent on this project's HumanoidAMP env, through skrl's stock wrapper.

    pip install -e .[skrl]
    python examples/skrl_amp.py --num-envs 64 --timesteps 100000
    python examples/skrl_amp.py --motion-file motions/amp_humanoid/amp_humanoid_run.npy

The env comes from gymnasium's registry (`gymnasium.make_vec("ase_humanoid/HumanoidAMP-v0")`,
registered by `import ase_humanoid`) and skrl's `wrap_env(..., wrapper="gymnasium")` drives it
unchanged: no adapter code. skrl's AMP agent reads the env's AMP extras: `amp_observation_space`,
`collect_reference_motions(n)` and `info["amp_obs"]`. Episode statistics reach skrl's
TensorBoard through `environment_info="log"` (`info["log"]`, see envs/gym_vector.py).

skrl's `time_limit_bootstrap` would bootstrap time-outs from the observation returned by `step`,
which after the env's same-step auto-reset is the next episode's first; it stays off here (the
project's own agents bootstrap from `info["final_obs"]`).

Network sizes and hyperparameters are small CPU-friendly defaults, not the ASE release's
(`python train.py task=HumanoidAMP` trains with those through the project's own agent).
"""

from __future__ import annotations

import argparse

import gymnasium
import torch
from torch import nn

import ase_humanoid  # noqa: F401  (registers the ase_humanoid/* gymnasium ids)

from skrl.agents.torch.amp import AMP, AMP_CFG
from skrl.envs.wrappers.torch import wrap_env
from skrl.memories.torch import RandomMemory
from skrl.models.torch import DeterministicMixin, GaussianMixin, Model
from skrl.resources.preprocessors.torch import RunningStandardScaler
from skrl.trainers.torch import SequentialTrainer


def mlp(in_dim: int, units: list[int], out_dim: int) -> nn.Sequential:
    """ReLU MLP `in_dim -> units... -> out_dim` (linear output)."""
    layers: list[nn.Module] = []
    for width in units:
        layers += [nn.Linear(in_dim, width), nn.ReLU()]
        in_dim = width
    layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)


class Policy(GaussianMixin, Model):
    """Gaussian policy: action mean from an MLP, a learnt state-independent log-std."""

    def __init__(self, observation_space, action_space, device, units: list[int], init_log_std: float = -2.9):
        Model.__init__(self, observation_space=observation_space, action_space=action_space, device=device)
        GaussianMixin.__init__(self, clip_actions=False, clip_log_std=True, min_log_std=-20.0, max_log_std=2.0)
        self.net = mlp(self.num_observations, units, self.num_actions)
        self.log_std = nn.Parameter(torch.full((self.num_actions,), init_log_std))

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {"log_std": self.log_std}


class Critic(DeterministicMixin, Model):
    """Value (role 'value') or discriminator logit (role 'discriminator'): an MLP to one number."""

    def __init__(self, observation_space, device, units: list[int]):
        Model.__init__(self, observation_space=observation_space, action_space=None, device=device)
        DeterministicMixin.__init__(self, clip_actions=False)
        self.net = mlp(self.num_observations, units, 1)

    def compute(self, inputs, role=""):
        return self.net(inputs["observations"]), {}


def build_agent(env, units: list[int], disc_units: list[int], rollouts: int, experiment_dir: str,
                write_interval: int | str = "auto", checkpoint_interval: int | str = "auto") -> AMP:
    """skrl's AMP agent for the wrapped env `env` (skrl Wrapper over a HumanoidVectorEnv)."""
    device = env.device
    amp_space = env.amp_observation_space
    models = {
        "policy": Policy(env.observation_space, env.action_space, device, units),
        "value": Critic(env.observation_space, device, units),
        "discriminator": Critic(amp_space, device, disc_units),
    }
    cfg = AMP_CFG(
        rollouts=rollouts, learning_epochs=4, mini_batches=2, learning_rate=5e-5,
        observation_preprocessor=RunningStandardScaler,
        observation_preprocessor_kwargs={"size": env.observation_space, "device": device},
        value_preprocessor=RunningStandardScaler, value_preprocessor_kwargs={"size": 1, "device": device},
        amp_observation_preprocessor=RunningStandardScaler,
        amp_observation_preprocessor_kwargs={"size": amp_space, "device": device},
        task_reward_scale=0.0, style_reward_scale=2.0, amp_batch_size=512,
        time_limit_bootstrap=False,
    )
    cfg.experiment.directory = experiment_dir
    cfg.experiment.write_interval = write_interval
    cfg.experiment.checkpoint_interval = checkpoint_interval
    return AMP(
        models=models,
        memory=RandomMemory(memory_size=rollouts, num_envs=env.num_envs, device=device),
        cfg=cfg,
        observation_space=env.observation_space,
        action_space=env.action_space,
        device=device,
        amp_observation_space=amp_space,
        motion_dataset=RandomMemory(memory_size=20000, device=device),
        reply_buffer=RandomMemory(memory_size=100000, device=device),
        collect_reference_motions=env.collect_reference_motions,
    )


def train(num_envs: int = 64, timesteps: int = 100000, rollouts: int = 16, units=(256, 256),
          disc_units=(256, 128), experiment_dir: str = "runs/skrl_amp", headless: bool = True,
          write_interval: int | str = "auto", checkpoint_interval: int | str = "auto", **env_options):
    """Build the env and the agent and train `timesteps` steps; returns (wrapped env, agent)."""
    env = wrap_env(gymnasium.make_vec("ase_humanoid/HumanoidAMP-v0", num_envs=num_envs, **env_options),
                   wrapper="gymnasium")
    agent = build_agent(env, list(units), list(disc_units), rollouts, experiment_dir,
                        write_interval, checkpoint_interval)
    trainer = SequentialTrainer(env=env, agents=agent,
                                cfg={"timesteps": timesteps, "headless": headless,
                                     "environment_info": "log", "close_environment_at_exit": False})
    trainer.train()
    return env, agent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--timesteps", type=int, default=100000)
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--motion-file", default=None, help="clip or dataset YAML (default: the walk clip)")
    parser.add_argument("--sim", default=None, help="mujoco (CPU) or mujoco_warp (GPU); default: auto")
    parser.add_argument("--experiment-dir", default="runs/skrl_amp")
    args = parser.parse_args(argv)
    options = {k: v for k, v in (("motion_file", args.motion_file), ("sim", args.sim)) if v is not None}
    env, _ = train(args.num_envs, args.timesteps, args.rollouts, experiment_dir=args.experiment_dir, **options)
    env.close()


if __name__ == "__main__":
    main()
