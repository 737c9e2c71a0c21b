"""Simulator backend throughput against raw `mujoco.rollout` on the same model.

    python benchmarks/sim_throughput.py --envs 256 --seconds 10 --threads 2 --json

Measures control steps per second through a `SimBackend` (each: random PD targets from the
robot's action mapping, `substeps` physics steps, full state read back as torch tensors,
body states included) and, in the same run, bare `mujoco.rollout` stepping of the same
combined model with the same thread count, substeps and random controls (no state conversion);
with --sim mujoco_warp the reference is bare MuJoCo Warp stepping on the same device instead
(`benchmarks/_warp_bench.py`).
Prints one JSON object: env_steps_per_s, raw_env_steps_per_s, ratio (backend / raw), envs,
threads, seconds, substeps, sim, robot, torch_threads, and how many blown-up worlds each
loop put back on their feet (blown_up_resets, raw_blown_up_resets).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import mujoco
import mujoco.rollout
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.robots import load_robot  # noqa: E402
from ase_humanoid.sim import make_backend  # noqa: E402
from ase_humanoid.sim.scene import lowest_point_height  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=10.0, help="time budget for each of the two measurements")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--substeps", type=int, default=4)
    parser.add_argument("--sim", choices=["mujoco", "mujoco_warp"], default="mujoco")
    parser.add_argument("--robot", default="amp_humanoid")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--torch-threads", type=int, default=1,
        help="torch intra-op threads; tensors of a few hundred envs gain nothing from more, and "
        "OpenMP workers competing with the MuJoCo pool for the same cores stall every small op",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print only the JSON result")
    return parser.parse_args(argv)


def random_actions(generator, num_envs, num_dofs, device):
    """Uniform policy actions in [-1, 1] `[num_envs, num_dofs]`."""
    return torch.rand(num_envs, num_dofs, generator=generator, device=device) * 2.0 - 1.0


def standing_state(sim, num_envs, device):
    """Default pose with the feet resting on the floor (tensors for set_robot_state)."""
    robot, model = sim.robot, sim.mj_model
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in robot.body_names]
    root_pos = robot.local_translation[0].to(device).expand(num_envs, 3).clone()
    root_pos[:, 2] -= lowest_point_height(model, model.qpos0, body_ids)
    root_rot = torch.zeros(num_envs, 4, device=device)
    root_rot[:, 3] = 1.0
    zeros3 = torch.zeros(num_envs, 3, device=device)
    dofs = torch.zeros(num_envs, robot.num_dofs, device=device)
    return root_pos, root_rot, zeros3, zeros3.clone(), dofs, dofs.clone()


MAX_SPEED = 1e3  # |qvel| above this (m/s or rad/s) means a world has blown up


class BackendLoop:
    """Control steps through a SimBackend: random actions -> PD targets -> step -> state read-back."""

    def __init__(self, args, robot):
        self.args, self.robot = args, robot
        self.sim = make_backend(args.sim, robot, args.envs, device=args.device, num_threads=args.threads)
        self.start = standing_state(self.sim, args.envs, args.device)
        self.sim.set_robot_state(torch.arange(args.envs), *self.start)
        self.generator = torch.Generator(device=args.device).manual_seed(args.seed)
        self.resets = 0

    def control_step(self):
        actions = random_actions(self.generator, self.args.envs, self.robot.num_dofs, self.args.device)
        self.sim.set_pd_targets(self.robot.action_to_pd_target(actions))
        self.sim.step(self.args.substeps)
        state = self.sim.state
        speed = torch.cat([state.root_lin_vel, state.root_ang_vel, state.dof_vel], dim=1).abs()
        blown = ~(speed <= MAX_SPEED).all(dim=1)  # also catches NaN
        if blown.any():  # what the env does: put blown-up worlds back on their feet
            self.resets += int(blown.sum())
            self.sim.set_robot_state(blown, *[v[blown] for v in self.start])

    def close(self):
        self.sim.close()


class RawRolloutLoop:
    """Bare mujoco.rollout on the backend's own model: same threads, substeps, random controls,
    same blown-up-world resets; no conversion to tensors."""

    def __init__(self, args, robot):
        sim = make_backend("mujoco", robot, 1, num_threads=1)
        sim.set_robot_state(torch.arange(1), *standing_state(sim, 1, "cpu"))
        self.model = model = sim.mj_model
        self.start = sim._state[0].copy()  # noqa: SLF001 (benchmark-only peek at the state row)
        sim.close()
        self.args = args
        nstate = mujoco.mj_stateSize(model, int(mujoco.mjtState.mjSTATE_FULLPHYSICS))
        qvel_start = mujoco.mj_stateSize(model, int(mujoco.mjtState.mjSTATE_TIME)) + model.nq
        self.qvel_cols = slice(qvel_start, qvel_start + model.nv)
        self.state0 = np.tile(self.start, (args.envs, 1))
        self.control = np.empty((args.envs, args.substeps, model.nu))
        self.state_out = np.empty((args.envs, args.substeps, nstate))
        self.sensordata = np.empty((args.envs, args.substeps, model.nsensordata))
        self.models = [model] * args.envs
        self.datas = [mujoco.MjData(model) for _ in range(args.threads)]
        self.pool = mujoco.rollout.Rollout(nthread=args.threads if args.threads > 1 else 0)
        self.generator = torch.Generator().manual_seed(args.seed)
        self.offset = robot.pd_action_offset.double().numpy()
        self.scale = robot.pd_action_scale.double().numpy()
        self.num_dofs = robot.num_dofs
        self.resets = 0

    def control_step(self):
        actions = random_actions(self.generator, self.args.envs, self.num_dofs, "cpu").double().numpy()
        self.control[:] = (self.offset + self.scale * actions)[:, None, :]
        self.pool.rollout(self.models, self.datas, self.state0, self.control, skip_checks=True,
                          nstep=self.args.substeps, state=self.state_out, sensordata=self.sensordata)
        self.state0[:] = self.state_out[:, -1]
        blown = ~(np.abs(self.state0[:, self.qvel_cols]) <= MAX_SPEED).all(axis=1)
        if blown.any():
            self.resets += int(blown.sum())
            self.state0[blown] = self.start

    def close(self):
        self.pool.close()


def make_raw_loop(args, robot):
    """The bare-physics reference of the chosen engine: mujoco.rollout, or bare MuJoCo Warp
    (benchmarks/_warp_bench.py) for --sim mujoco_warp."""
    if args.sim == "mujoco_warp":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _warp_bench import RawWarpLoop

        return RawWarpLoop(args, robot)
    return RawRolloutLoop(args, robot)


def run_interleaved(loops, seconds: float, slice_seconds: float = 0.5):
    """Alternate short timed slices of the loops so load from other processes hits all alike.

    Returns control steps per second of each loop.
    """
    for loop in loops:  # warm-up: thread pools started, buffers allocated
        for _ in range(3):
            loop.control_step()
    steps, elapsed = [0] * len(loops), [0.0] * len(loops)
    while min(elapsed) < seconds:
        for i, loop in enumerate(loops):
            start = time.perf_counter()
            while time.perf_counter() - start < slice_seconds:
                loop.control_step()
                steps[i] += 1
            elapsed[i] += time.perf_counter() - start
    return [s / e for s, e in zip(steps, elapsed)]


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(max(1, args.torch_threads))
    robot = load_robot(args.robot)
    raw_loop, backend_loop = make_raw_loop(args, robot), BackendLoop(args, robot)
    raw, backend = (rate * args.envs for rate in run_interleaved([raw_loop, backend_loop], args.seconds))
    raw_loop.close()
    backend_loop.close()
    result = {
        "sim": args.sim,
        "robot": args.robot,
        "envs": args.envs,
        "threads": args.threads,
        "seconds": args.seconds,
        "substeps": args.substeps,
        "torch_threads": args.torch_threads,
        "env_steps_per_s": round(backend, 1),
        "raw_env_steps_per_s": round(raw, 1),
        "ratio": round(backend / raw, 4),
        "blown_up_resets": backend_loop.resets,
        "raw_blown_up_resets": raw_loop.resets,
    }
    if not args.json:
        print(f"backend {backend:,.0f} env steps/s, raw rollout {raw:,.0f} env steps/s")
    print(json.dumps(result))


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
