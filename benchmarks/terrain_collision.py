"""Where a heightfield's extra physics cost goes: MuJoCo's time per world and physics step on the
terrain's heightfield against the plane, each for the states its own env reached.

    python benchmarks/terrain_collision.py --terrain mixed --scales 0.2 0.25 0.3 --json

For each heightfield spacing (`terrain.horizontal_scale`) it runs HumanoidAMP on that terrain with
uniformly random actions (as `env_throughput.py` does), keeps every world's state every 10 steps,
and replays each kept state on one thread through `mj_step` and `mj_collision` on the terrain's
model; the flat-ground env's states likewise on MuJoCo's plane. Times are thread CPU time, which other
processes' preemption does not inflate but a busy sibling hyperthread does: measure on a quiet
machine. The collision is also timed with only the robot's contact bodies (the feet) colliding
and with no body colliding, which splits the collision's difference into the feet's share and
the other geoms'. Prints one JSON object: for `plane` and per spacing (`by_scale`), microseconds per world and physics step
(`step_us`, `collision_us`, `collision_feet_only_us`, `collision_no_body_us`), contacts per world,
and per spacing `physics_terrain_vs_plane` (plane step time / heightfield step time);
`hfield_fast_path`: whether the heightfield collisions ran with sim/hfield_collision.py's first test
(ASE_HUMANOID_STOCK_HFIELD=1: MuJoCo's own routine); with it, per spacing `mujoco_routine` gives the
same states' step and collision times through MuJoCo's own routine, in the same run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import mujoco
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.envs import make_env  # noqa: E402
from ase_humanoid.sim import hfield_collision  # noqa: E402
from ase_humanoid.paths import CFG_DIR  # noqa: E402

FULL_PHYSICS = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
DEFAULT_MOTION_FILE = Path(__file__).resolve().parents[1] / "motions" / "dataset_amp_humanoid_all.yaml"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terrain", default="mixed", help="cfg/terrain/<name>.yaml (rough | mixed)")
    parser.add_argument("--scales", type=float, nargs="+", default=[0.2], help="heightfield sample spacings, metres")
    parser.add_argument("--envs", type=int, default=128)
    parser.add_argument("--steps", type=int, default=250, help="env steps to run; states kept every 10 after 50")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print only the JSON result")
    return parser.parse_args(argv)


def kept_states(env, steps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Full physics states `[K, nstate]` and PD targets `[K, nu]` of every world, every 10 env
    steps after the first 50 (from the backend's own state_dict, as checkpoints keep it)."""
    generator = torch.Generator().manual_seed(seed)
    actions = 2.0 * torch.rand(8, env.num_envs, env.num_actions, generator=generator) - 1.0
    states, controls = [], []
    for i in range(steps):
        env.step(actions[i % len(actions)])
        if i >= 50 and i % 10 == 0:
            kept = env.sim.state_dict()
            states.append(kept["state"].numpy())
            controls.append(kept["ctrl"].numpy())
    return np.concatenate(states), np.concatenate(controls)


def replay_times(model, states: np.ndarray, controls: np.ndarray, collide_bodies=None) -> dict:
    """Mean thread-CPU microseconds of `mj_collision` and `mj_step` per world state, and contacts;
    `collide_bodies`: body ids whose geoms keep colliding (None: all), the others switched off."""
    contype, conaffinity = model.geom_contype.copy(), model.geom_conaffinity.copy()
    if collide_bodies is not None:
        off = (model.geom_bodyid != 0) & ~np.isin(model.geom_bodyid, collide_bodies)
        model.geom_contype[off] = 0
        model.geom_conaffinity[off] = 0
    data = mujoco.MjData(model)
    collision = step = contacts = 0.0
    try:
        for state, ctrl in zip(states, controls):
            mujoco.mj_setState(model, data, state, FULL_PHYSICS)
            data.ctrl[:] = ctrl
            mujoco.mj_fwdPosition(model, data)
            contacts += data.ncon
            start = time.thread_time()
            for _ in range(10):
                mujoco.mj_collision(model, data)
            collision += (time.thread_time() - start) / 10
            mujoco.mj_setState(model, data, state, FULL_PHYSICS)
            start = time.thread_time()
            for _ in range(4):
                mujoco.mj_step(model, data)
            step += (time.thread_time() - start) / 4
    finally:
        model.geom_contype[:], model.geom_conaffinity[:] = contype, conaffinity
    n = len(states)
    return {"collision_us": 1e6 * collision / n, "step_us": 1e6 * step / n, "contacts": contacts / n}


def make_amp_env(args, terrain_cfg=None):
    torch.manual_seed(args.seed)
    env = make_env("HumanoidAMP", num_envs=args.envs, sim="mujoco", num_threads=1, device="cpu", seed=args.seed,
                   motion_file=str(DEFAULT_MOTION_FILE), terrain=terrain_cfg)
    env.reset()
    return env


def replay_report(env, states: np.ndarray, controls: np.ndarray) -> dict:
    """`replay_times` of `env`'s model on its own kept states: all bodies, the feet only, none."""
    model = env.mj_model
    feet = [model.body(name).id for name in env.robot.contact_body_names]
    full = replay_times(model, states, controls)
    return {"step_us": round(full["step_us"], 2), "collision_us": round(full["collision_us"], 2),
            "contacts": round(full["contacts"], 3),
            "collision_feet_only_us": round(replay_times(model, states, controls, feet)["collision_us"], 2),
            "collision_no_body_us": round(replay_times(model, states, controls, [])["collision_us"], 2)}


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(1)
    from omegaconf import OmegaConf

    terrain_cfg = OmegaConf.to_container(OmegaConf.load(CFG_DIR / "terrain" / f"{args.terrain}.yaml"))
    # Each model replays the states its own env reached: the plane those of flat ground, each
    # heightfield those of its terrain (a terrain state on the plane would sink into it or float).
    flat_env = make_amp_env(args)
    plane = replay_report(flat_env, *kept_states(flat_env, args.steps, args.seed))
    out = {"terrain": args.terrain, "envs": args.envs, "steps": args.steps, "seed": args.seed, "plane": plane,
           "by_scale": {}}
    for scale in args.scales:
        env = make_amp_env(args, dict(terrain_cfg, horizontal_scale=scale))
        states, controls = kept_states(env, args.steps, args.seed)
        report = replay_report(env, states, controls)
        report["physics_terrain_vs_plane"] = round(plane["step_us"] / report["step_us"], 3)
        if hfield_collision.is_installed():  # the same states through MuJoCo's own routine, for comparison
            hfield_collision.uninstall_heightfield_fast_path()
            try:
                stock = replay_times(env.mj_model, states, controls)
            finally:
                hfield_collision.install_heightfield_fast_path()
            report["mujoco_routine"] = {"step_us": round(stock["step_us"], 2),
                                        "collision_us": round(stock["collision_us"], 2)}
        out["by_scale"][str(scale)] = report
    out["hfield_fast_path"] = hfield_collision.is_installed()  # installed by the terrain envs
    if args.json:
        print(json.dumps(out))
    else:
        print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
