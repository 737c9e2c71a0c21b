"""Environment throughput: control steps per second of a humanoid env against raw MuJoCo rollout.

    python benchmarks/env_throughput.py --task HumanoidASE --envs 256 --threads 2 --json

The env runs with uniformly random actions, including everything a training step needs
(observations, AMP observations, rewards, terminations, resets). The reference is the bare
physics of the same model: `mujoco.rollout` with the same number of worlds, threads and
substeps per control step and the same random PD targets, started from the env's initial
states, with nothing else per step. The two loops run in alternating rounds, so that load from
other processes affects both alike. `ratio` = env steps/s / raw steps/s (1.0 would mean the env
adds no overhead to the physics). Prints one JSON object with --json, else a short summary.

    python benchmarks/env_throughput.py --task HumanoidAMP --terrain mixed --height-scan --json

`--terrain rough|mixed|mesh` (cfg/terrain/<name>.yaml) runs the env on that terrain and, in the
same alternating rounds, the same env on flat ground: `terrain_vs_flat` = terrain env steps/s /
flat env steps/s (the raw rollout is the terrain model's). `terrain_vs_flat_cpu` is the same ratio
in process CPU seconds (this process, all its threads) per env step: the work each loop does, much
less moved by other processes' load than the wall-clock rates (on a loaded machine those can swing
by +-0.15 between runs of the same code). `hfield_fast_path` says whether native MuJoCo ran the
heightfield collisions with the fast first test (sim/hfield_collision.py; ASE_HUMANOID_STOCK_HFIELD=1
runs MuJoCo's own routine, for a comparison in separate runs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import mujoco
import mujoco.rollout
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.envs import make_env  # noqa: E402
from ase_humanoid.sim import hfield_collision  # noqa: E402

DEFAULT_MOTION_FILE = Path(__file__).resolve().parents[1] / "motions" / "dataset_amp_humanoid_all.yaml"
NUM_ACTION_SETS = 32  # random action batches cycled through by both loops


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="HumanoidASE")
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--sim", default="mujoco")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time of each loop")
    parser.add_argument("--motion-file", default=str(DEFAULT_MOTION_FILE))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch intra-op threads for the env's tensor math (small tensors: 1 is fastest)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--terrain", default="flat", help="cfg/terrain/<name>.yaml: flat | rough | mixed | mesh")
    parser.add_argument("--height-scan", action="store_true", help="with the height-scan observation")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser.parse_args(argv)


def interleaved(steps: dict, seconds: float, rounds: int = 10, warmup: int = 10) -> dict:
    """Time several step functions in alternating rounds (so that load from other processes on
    the machine affects them alike) for about `seconds` each.

    `steps`: name -> step(i). Returns name -> (calls, elapsed seconds, process CPU seconds).
    """
    totals = {name: [0, 0.0, 0.0] for name in steps}
    for step in steps.values():
        for i in range(warmup):
            step(i)
    for _ in range(rounds):
        for name, step in steps.items():
            calls, start, cpu_start = totals[name][0], time.perf_counter(), time.process_time()
            while True:
                step(calls)
                calls += 1
                if time.perf_counter() - start >= seconds / rounds:
                    break
            totals[name][0] = calls
            totals[name][1] += time.perf_counter() - start
            totals[name][2] += time.process_time() - cpu_start
    return {name: tuple(v) for name, v in totals.items()}


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env_kwargs = dict(num_envs=args.envs, sim=args.sim, num_threads=args.threads,
                      device=args.device, seed=args.seed)
    if args.task != "HumanoidPerturb":
        env_kwargs["motion_file"] = args.motion_file
    on_terrain = args.terrain != "flat"
    flat_env = None
    if on_terrain:
        from omegaconf import OmegaConf

        from ase_humanoid.paths import CFG_DIR

        flat_env = make_env(args.task, **env_kwargs)
        flat_env.reset()
        env_kwargs["terrain"] = OmegaConf.to_container(OmegaConf.load(CFG_DIR / "terrain" / f"{args.terrain}.yaml"))
    if args.height_scan:
        env_kwargs["height_scan"] = True
    startup = time.perf_counter()
    env = make_env(args.task, **env_kwargs)
    env.reset()
    startup = time.perf_counter() - startup
    actions = 2.0 * torch.rand(NUM_ACTION_SETS, env.num_envs, env.num_actions, device=env.device) - 1.0

    stats = {"resets": 0}

    def env_step(i):
        _, _, terminated, truncated, _ = env.step(actions[i % NUM_ACTION_SETS])
        stats["resets"] += int((terminated | truncated).sum())

    # Raw physics: the same model, worlds, threads, substeps and PD targets; nothing else.
    model = env.mj_model
    substeps = env.cfg.control_substeps
    full = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state = np.stack([_world_state(model, env.render_state(i), full) for i in range(env.num_envs)])
    targets = env.robot.action_to_pd_target(actions).cpu().numpy().astype(np.float64)
    controls = np.repeat(targets[:, :, None, :], substeps, axis=2)  # [K, N, substeps, nu]
    threads = args.threads
    pool = mujoco.rollout.Rollout(nthread=threads if threads > 1 else 0)
    datas = [mujoco.MjData(model) for _ in range(threads)]
    models = [model] * env.num_envs
    out = np.empty((env.num_envs, substeps, state.shape[1]))

    def raw_step(i):
        pool.rollout(models, datas, state, controls[i % NUM_ACTION_SETS],
                     control_spec=int(mujoco.mjtState.mjSTATE_CTRL), skip_checks=True, nstep=substeps,
                     initial_warmstart=None, state=out)
        np.copyto(state, out[:, -1])

    loops = {"env": env_step, "raw": raw_step}
    if flat_env is not None:
        loops["flat_env"] = lambda i: flat_env.step(actions[i % NUM_ACTION_SETS])
    timings = interleaved(loops, args.seconds)
    (env_calls, env_time, env_cpu), (raw_calls, raw_time, _) = timings["env"], timings["raw"]
    pool.close()
    env.close()

    env_rate = env_calls * env.num_envs / env_time
    raw_rate = raw_calls * env.num_envs / raw_time
    result = {
        "task": args.task, "sim": args.sim, "num_envs": env.num_envs, "threads": threads,
        "substeps": substeps, "torch_threads": args.torch_threads, "env_steps_per_s": round(env_rate, 1),
        "raw_env_steps_per_s": round(raw_rate, 1), "ratio": round(env_rate / raw_rate, 3),
        "env_step_ms": round(1e3 * env_time / env_calls, 3), "raw_step_ms": round(1e3 * raw_time / raw_calls, 3),
        "episode_resets": stats["resets"], "startup_s": round(startup, 2),
        "terrain": args.terrain, "height_scan": args.height_scan,
    }
    if flat_env is not None:
        flat_calls, flat_time, flat_cpu = timings["flat_env"]
        flat_rate = flat_calls * env.num_envs / flat_time
        result["flat_env_steps_per_s"] = round(flat_rate, 1)
        result["terrain_vs_flat"] = round(env_rate / flat_rate, 3)
        result["env_cpu_ms"] = round(1e3 * env_cpu / env_calls, 3)
        result["flat_env_cpu_ms"] = round(1e3 * flat_cpu / flat_calls, 3)
        result["terrain_vs_flat_cpu"] = round((flat_cpu / flat_calls) / (env_cpu / env_calls), 3)
        result["hfield_fast_path"] = hfield_collision.is_installed()  # sim/hfield_collision.py
        flat_env.close()
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.task} x{env.num_envs} ({args.sim}, {threads} threads): "
              f"{env_rate:.0f} env steps/s, raw rollout {raw_rate:.0f}/s, ratio {env_rate / raw_rate:.2f}")
    return result


def _world_state(model, qpos: np.ndarray, spec: int) -> np.ndarray:
    """Full physics state of one world at rest in pose `qpos`."""
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_forward(model, data)
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, data, state, spec)
    return state


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
