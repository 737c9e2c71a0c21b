"""Pre-train an ASE low-level controller with skrl's trainer, on this project's ASE agent.

    pip install -e .[skrl]
    python examples/skrl_ase.py --num-envs 64 --timesteps 100000 --llc-out runs/skrl_ase/llc.pt
    python train.py task=HumanoidHeading llc_checkpoint=runs/skrl_ase/llc.pt   # reuse it

skrl's `SequentialTrainer` steps `gymnasium.make_vec("ase_humanoid/HumanoidASE-v0")` through
skrl's stock gymnasium wrapper and drives `SkrlASE` (ase_humanoid/integrations): a skrl Agent
whose networks, losses (discriminator, encoder, diversity), normalisers, latent schedule and
update are the project's `ASEAgent`, so it learns what `python train.py task=HumanoidASE` learns
from the same settings. skrl writes its checkpoints and TensorBoard events under
`--experiment-dir`; `--llc-out` also writes the controller in the project's checkpoint format,
which the hierarchical tasks take as `llc_checkpoint`. docs/skrl.md maps the settings.

Network sizes are CPU-friendly defaults, not the release's [1024, 1024, 512] (cfg keys
actor_units, critic_units, disc_units set those).
"""

from __future__ import annotations

import argparse

import gymnasium

import ase_humanoid  # noqa: F401  (registers the ase_humanoid/* gymnasium ids)
from ase_humanoid.integrations import SkrlASE

from skrl.envs.wrappers.torch import wrap_env
from skrl.trainers.torch import SequentialTrainer


def train(num_envs: int = 64, timesteps: int = 100000, rollouts: int = 32, units=(512, 256),
          disc_units=(512, 256), experiment_dir: str = "runs/skrl_ase", agent_cfg: dict | None = None,
          write_interval: int | str = "auto", checkpoint_interval: int | str = "auto",
          llc_out: str | None = None, headless: bool = True, **env_options):
    """Build env and agent, train `timesteps` skrl timesteps (control steps); returns (wrapped env, agent).
    `agent_cfg` updates the agent's cfg (project keys or skrl's names, see docs/skrl.md)."""
    env = wrap_env(gymnasium.make_vec("ase_humanoid/HumanoidASE-v0", num_envs=num_envs, **env_options),
                   wrapper="gymnasium")
    cfg = {"rollouts": rollouts, "mini_batches": 4, "actor_units": list(units), "critic_units": list(units),
           "disc_units": list(disc_units), "style_units": [units[-1], units[-1] // 2],
           "experiment": {"directory": experiment_dir, "write_interval": write_interval,
                          "checkpoint_interval": checkpoint_interval}, **(agent_cfg or {})}
    agent = SkrlASE(env=env, cfg=cfg)
    trainer = SequentialTrainer(env=env, agents=agent,
                                cfg={"timesteps": timesteps, "headless": headless, "environment_info": "log",
                                     "close_environment_at_exit": False})
    trainer.train()
    if llc_out is not None:
        print(f"controller written to {agent.save_project_checkpoint(llc_out)} "
              f"(python train.py task=HumanoidHeading llc_checkpoint={llc_out})", flush=True)
    return env, agent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--timesteps", type=int, default=100000)
    parser.add_argument("--rollouts", type=int, default=32, help="control steps per update (horizon_length)")
    parser.add_argument("--units", type=int, nargs="+", default=[512, 256], help="actor and critic MLP widths")
    parser.add_argument("--motion-file", default=None, help="clip or dataset YAML (default: the task's)")
    parser.add_argument("--sim", default=None, help="mujoco (CPU) or mujoco_warp (GPU); default: auto")
    parser.add_argument("--experiment-dir", default="runs/skrl_ase")
    parser.add_argument("--llc-out", default=None, help="also write the controller in the project's format here")
    args = parser.parse_args(argv)
    options = {k: v for k, v in (("motion_file", args.motion_file), ("sim", args.sim)) if v is not None}
    env, _ = train(args.num_envs, args.timesteps, args.rollouts, units=tuple(args.units),
                   experiment_dir=args.experiment_dir, llc_out=args.llc_out, **options)
    env.close()


if __name__ == "__main__":
    main()
