"""From a composed config to objects: the env, the agent and the paths they read.

train.py's body (`app.py`) and evaluation (`evaluate.py`) both build through here, so neither
imports the other.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from ase_humanoid.paths import PROJECT_ROOT
from ase_humanoid.config import saved_value
from ase_humanoid.errors import ConfigError

ALGOS = ("ppo", "amp", "ase", "hrl")


def resolve_path(path: str | None) -> str | None:
    """Paths in configs are relative to the working directory, else to the project root."""
    if path is None:
        return None
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return str(p)
    return str(PROJECT_ROOT / p)


def motion_file_for(cfg: DictConfig) -> str | None:
    if cfg.motion_file is not None:
        return resolve_path(cfg.motion_file)
    defaults = cfg.task.get("motion_file")
    if defaults is None:
        return None
    if isinstance(defaults, str):
        return resolve_path(defaults)
    if cfg.robot.name not in defaults:
        raise ConfigError(f"task {cfg.task.name} has no default motion_file for robot '{cfg.robot.name}' "
                          f"(known: {', '.join(defaults.keys())}); pass motion_file=...")
    return resolve_path(defaults[cfg.robot.name])


def warn_about_llc_choice(cfg: DictConfig, llc_path: str, llc_state: dict) -> None:
    """Say so when the low-level controller is not what it seems: a task policy evaluated on a
    controller other than the one it was trained on, or a task policy given as llc_checkpoint
    (its own controller is then used)."""
    if saved_value(llc_state, "agent.algo") == "HRLAgent" and cfg.llc_checkpoint:
        print(f"note: llc_checkpoint={cfg.llc_checkpoint} is a hierarchical task policy "
              f"({saved_value(llc_state.get('config'), 'task.name')}); using the controller it carries",
              file=sys.stderr, flush=True)
    if not (cfg.test and cfg.checkpoint and cfg.llc_checkpoint):
        return
    from ase_humanoid.utils.checkpoint import load_checkpoint_config

    trained_on = saved_value(load_checkpoint_config(resolve_path(cfg.checkpoint)) or {}, "llc_checkpoint")
    evaluated_on, named = llc_path, cfg.llc_checkpoint
    if saved_value(llc_state, "agent.algo") == "HRLAgent":  # its carried controller: the one it trained on
        named = saved_value(llc_state.get("config"), "llc_checkpoint")
        evaluated_on = resolve_path(named) if named else llc_path
    if trained_on and Path(resolve_path(trained_on)).resolve() != Path(evaluated_on).resolve():
        print(f"warning: {cfg.checkpoint} was trained on the controller {trained_on}; evaluating it on "
              f"{named} (leave llc_checkpoint out to use its own)", file=sys.stderr, flush=True)


def build_env(cfg: DictConfig, rank: int = 0):
    from ase_humanoid.envs import make_env

    env_options = OmegaConf.to_container(cfg.task.env, resolve=True) if "env" in cfg.task else {}
    # The robot group's key/contact bodies apply unless the task sets its own.
    for key in ("key_bodies", "contact_bodies"):
        if key in env_options and env_options[key] is None:
            env_options[key] = list(cfg.robot[key])
    llc_path = llc_state = None
    if cfg.train.algo == "hrl":
        from ase_humanoid.agents.hrl import read_llc_checkpoint

        # An HRL checkpoint carries its LLC: test / resume runs need no llc_checkpoint.
        resumed = str(Path(cfg.run_dir) / "latest.pt") if cfg.resume and cfg.run_dir else None
        if not (cfg.llc_checkpoint or cfg.checkpoint or resumed):
            use_shipped_llc(cfg)
        llc_path = resolve_path(cfg.llc_checkpoint or cfg.checkpoint or resumed)
        llc_state = read_llc_checkpoint(llc_path, str(cfg.device))  # read once: steps here, LLC below
        warn_about_llc_choice(cfg, llc_path, llc_state)
        # The LLC's discriminator rates the task env's AMP observations: same history length.
        # Written back into cfg so config.yaml and this run's checkpoints record the value used.
        steps = saved_value(llc_state.get("config"), "task.env.num_amp_obs_steps")
        if steps is not None and "num_amp_obs_steps" in env_options:
            env_options["num_amp_obs_steps"] = int(steps)
            with open_dict(cfg):
                cfg.task.env.num_amp_obs_steps = int(steps)
        # The LLC acts on the dynamics it was trained on (a config without the key: "joint").
        with open_dict(cfg):
            cfg.robot.pd_damping = saved_pd_damping(llc_state.get("config"))
    env = make_env(
        cfg.task.name,
        num_envs=int(cfg.num_envs),
        robot=cfg.robot.name,
        motion_file=motion_file_for(cfg),
        sim=cfg.sim.name,
        pd_damping=cfg.robot.get("pd_damping"),
        device=str(cfg.device),
        num_threads=int(cfg.num_threads),
        seed=int(cfg.seed) + 1000 * rank,
        **env_options,
        **_terrain_env_options(cfg),
        **_task_extra_env_options(cfg),
    )
    if cfg.train.algo == "hrl":
        # One high-level step drives the frozen ASE controller for llc_steps control steps.
        from ase_humanoid.agents.hrl import llc_from_checkpoint, make_hrl_env

        llc = llc_from_checkpoint(llc_state, llc_path, env.device)
        env = make_hrl_env(env, llc, int(cfg.train.params.llc_steps))
    return env


def saved_pd_damping(saved: dict | None) -> str:
    """`robot.pd_damping` of a saved run config; runs saved before the key existed used "joint"."""
    return saved_value(saved, "robot.pd_damping") or "joint"


def use_shipped_llc(cfg: DictConfig) -> None:
    """With no llc_checkpoint, a hierarchical task uses the controller shipped for its robot
    (pretrained/), says so, and records it in cfg (so config.yaml names it)."""
    from ase_humanoid.utils.shipped_models import SHIPPED_LLC, shipped_llc_path

    path = shipped_llc_path(cfg.robot.name, cfg.task.name)
    if path is None:  # train.py and the gymnasium entry both end here: one message for both
        raise ConfigError(f"task {cfg.task.name} is hierarchical (train=hrl) and needs llc_checkpoint=<ASE checkpoint> "
                          f"(a HumanoidASE run's latest.pt or run folder): no pretrained controller ships for robot "
                          f"'{cfg.robot.name}' (shipped for: {', '.join(sorted(SHIPPED_LLC))}); or train=amp_task "
                          "for the flat task")
    shown = path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path
    print(f"llc_checkpoint: none given; using the shipped controller {shown} (model card: "
          f"{shown.with_suffix('.md')})", flush=True)
    with open_dict(cfg):
        cfg.llc_checkpoint = str(shown)


def _terrain_env_options(cfg: DictConfig) -> dict[str, Any]:
    """The terrain group's keys (cfg/terrain/*.yaml) for the env; nothing for flat ground, so a
    flat run builds exactly the env it always did."""
    terrain = cfg.get("terrain")
    if terrain is None or terrain.get("name", "flat") == "flat":
        return {}
    options = OmegaConf.to_container(terrain, resolve=True)
    if options.get("mesh_file"):
        options["mesh_file"] = resolve_path(options["mesh_file"])
    return {"terrain": options}


def _task_extra_env_options(cfg: DictConfig) -> dict[str, Any]:
    """Hierarchical tasks need the low-level controller's control rate; nothing else does."""
    return {}


def agent_config(cfg: DictConfig, num_envs: int, rank: int = 0):
    """The agent's dataclass config from cfg.train.params; `minibatch_size: auto` -> batch / 8."""
    from ase_humanoid.agents import config as agent_cfg

    algo = cfg.train.algo
    classes = {"ppo": agent_cfg.PPOConfig, "amp": agent_cfg.AMPConfig, "ase": agent_cfg.ASEConfig}
    if algo == "hrl":
        from ase_humanoid.agents.hrl import HRLConfig

        classes["hrl"] = HRLConfig
    if algo not in classes:
        raise ConfigError(f"unknown train.algo '{algo}'; valid choices: {', '.join(ALGOS)}")
    params = OmegaConf.to_container(cfg.train.params, resolve=True)
    horizon = params.get("horizon_length", classes[algo]().horizon_length)
    params["minibatch_size"] = resolve_minibatch_size(params.get("minibatch_size"), horizon * num_envs)
    params["seed"] = int(cfg.seed) + 1000 * rank
    return agent_cfg.from_dict(classes[algo], params)


def resolve_minibatch_size(value, batch: int):
    """`auto` -> batch / 8 (the release's 8 minibatches: 16384 of 4096 envs x 32 steps);
    `batch/K` -> batch / K (K minibatches per mini-epoch, whatever num_envs is); else as given.
    A batch that K does not divide is taken whole."""
    if value == "auto":
        value = "batch/8"
    if isinstance(value, str):
        prefix, _, count = value.partition("/")
        if prefix.strip() != "batch" or not count.strip().isdigit() or int(count) < 1:
            raise ConfigError(f"agent config key 'minibatch_size': '{value}' is not a number, 'auto' or "
                              "'batch/K' (K minibatches per mini-epoch)")
        count = int(count)
        return batch // count if batch % count == 0 else batch
    return value


def build_agent(cfg: DictConfig, env, rank: int = 0):
    from ase_humanoid.agents.amp import AMPAgent
    from ase_humanoid.agents.ase import ASEAgent
    from ase_humanoid.agents.ppo import PPOAgent

    config = agent_config(cfg, env.num_envs, rank)
    obs_dim = env.observation_space.shape[-1]
    action_dim = env.action_space.shape[-1]
    algo = cfg.train.algo
    if algo == "ppo":
        return PPOAgent(obs_dim, action_dim, env.num_envs, config, env.device)
    amp_obs_dim = env.amp_observation_space.shape[-1]
    if algo == "amp":
        return AMPAgent(obs_dim, action_dim, amp_obs_dim, env.num_envs, env.fetch_amp_obs_demo, config,
                        env.device, demo_keys=env)
    if algo == "ase":
        if getattr(env, "uses_getup_reward", False) and config.task_reward_w <= 0:
            raise ConfigError("task.env.getup_reward=true (or in task.env.phases) is the env's reward, which the agent weighs with "
                              f"train.params.task_reward_w ({config.task_reward_w} here): set it above 0 (2.0 in docs/research-notes.md)")
        return ASEAgent(obs_dim, action_dim, amp_obs_dim, env.num_envs, env.fetch_amp_obs_demo, config,
                        env.device, demo_keys=env,
                        mirror_maps=env.mirror_maps() if config.symmetric_actor else None)
    from ase_humanoid.agents.hrl import HRLAgent

    return HRLAgent.from_llc_checkpoint(resolve_path(cfg.llc_checkpoint), env, config, device=env.device)
