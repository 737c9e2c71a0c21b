"""Train the Heading task with skrl's trainer: a high-level policy over the shipped ASE controller.

    pip install -e .[skrl]
    python examples/skrl_hrl_heading.py --num-envs 64 --timesteps 20000
    python examples/skrl_hrl_heading.py --llc-checkpoint runs/skrl_ase/llc.pt   # a controller of your own

`gymnasium.make_vec("ase_humanoid/HumanoidHeading-v0", llc_checkpoint=...)` builds the task as
`python train.py task=HumanoidHeading` does: hierarchical, the frozen low-level controller
stepped inside the env (`llc_steps` control steps per skrl timestep), its discriminator's style
reward in `info["style_reward"]`. `SkrlHRL` (ase_humanoid/integrations) is a skrl Agent around
the project's `HRLAgent`: PPO on 64-d latent actions, reward 0.9 task + 0.1 style. The default
controller is the one the Heading task uses when none is named:
pretrained/ase_llc_amp_humanoid_walk.pt (its model card: the .md beside it).

Network sizes are CPU-friendly defaults, not the release's [1024, 512].
"""

from __future__ import annotations

import argparse

import gymnasium

import ase_humanoid  # noqa: F401  (registers the ase_humanoid/* gymnasium ids)
from ase_humanoid.integrations import SkrlHRL

from skrl.envs.wrappers.torch import wrap_env
from skrl.trainers.torch import SequentialTrainer

SHIPPED_WALK_LLC = "pretrained/ase_llc_amp_humanoid_walk.pt"


def train(num_envs: int = 64, timesteps: int = 20000, rollouts: int = 32, units=(512, 256),
          llc_checkpoint: str = SHIPPED_WALK_LLC, experiment_dir: str = "runs/skrl_hrl_heading",
          agent_cfg: dict | None = None, write_interval: int | str = "auto",
          checkpoint_interval: int | str = "auto", headless: bool = True, **env_options):
    """Build env and agent, train `timesteps` high-level steps; returns (wrapped env, agent)."""
    env = wrap_env(gymnasium.make_vec("ase_humanoid/HumanoidHeading-v0", num_envs=num_envs,
                                      llc_checkpoint=llc_checkpoint, **env_options), wrapper="gymnasium")
    cfg = {"rollouts": rollouts, "mini_batches": 4, "actor_units": list(units), "critic_units": list(units),
           "experiment": {"directory": experiment_dir, "write_interval": write_interval,
                          "checkpoint_interval": checkpoint_interval}, **(agent_cfg or {})}
    agent = SkrlHRL(env=env, cfg=cfg, llc_checkpoint=llc_checkpoint)
    trainer = SequentialTrainer(env=env, agents=agent,
                                cfg={"timesteps": timesteps, "headless": headless, "environment_info": "log",
                                     "close_environment_at_exit": False})
    trainer.train()
    return env, agent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--timesteps", type=int, default=20000, help="high-level steps")
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--units", type=int, nargs="+", default=[512, 256])
    parser.add_argument("--llc-checkpoint", default=SHIPPED_WALK_LLC)
    parser.add_argument("--sim", default=None, help="mujoco (CPU) or mujoco_warp (GPU); default: auto")
    parser.add_argument("--experiment-dir", default="runs/skrl_hrl_heading")
    args = parser.parse_args(argv)
    options = {"sim": args.sim} if args.sim is not None else {}
    env, _ = train(args.num_envs, args.timesteps, args.rollouts, units=tuple(args.units),
                   llc_checkpoint=args.llc_checkpoint, experiment_dir=args.experiment_dir, **options)
    env.close()


if __name__ == "__main__":
    main()
