"""MuJoCo Warp pieces of the benchmarks: a raw-physics reference loop and a GPU equivalence check.

`RawWarpLoop` is what `sim_throughput.py --sim mujoco_warp` compares the backend against: bare
MuJoCo Warp stepping of the backend's own model (same worlds, substeps and random PD targets, the
substep loop captured and replayed as in the backend) with no conversion of state to the
interface's tensors.

    python benchmarks/_warp_bench.py equivalence --device cuda     # GPU vs native MuJoCo, JSON

`equivalence` runs the scenario of tests/test_sim_warp.py (one standing world, pushed and tilted
worlds driven to random PD targets, 30 control steps) on the MuJoCo Warp backend on `--device`
and on the CPU backend, and prints the largest differences and the tolerances the CPU test
asserts, so a GPU machine checks the CUDA path (graph capture, stream ordering, float32 on GPU).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import mujoco
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.robots import load_robot  # noqa: E402
from ase_humanoid.sim import make_backend  # noqa: E402
from ase_humanoid.sim.scene import build_scene, lowest_point_height  # noqa: E402

MAX_SPEED = 1e3  # |qvel| above this (m/s or rad/s) means a world has blown up
TOLERANCES = {"root_pos_m": 1e-4, "root_rot": 1e-4, "dof_pos_rad": 1e-3}  # as in the CPU test


def standing_qpos(model: mujoco.MjModel, robot) -> torch.Tensor:
    """MuJoCo qpos `[nq]` of the default pose with the feet resting on the floor."""
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in robot.body_names]
    qpos = torch.as_tensor(model.qpos0.copy(), dtype=torch.float64)
    root = model.jnt_qposadr[model.body_jntadr[body_ids[0]]]
    qpos[root + 2] -= lowest_point_height(model, model.qpos0, body_ids)
    return qpos


class RawWarpLoop:
    """Bare MuJoCo Warp: random PD targets -> captured substeps -> blown-up worlds reset. The
    targets are written through a torch view of `ctrl`, as the backend does, but nothing is read
    back except the velocity check (one device-to-host sync per step, like the backend loop)."""

    def __init__(self, args, robot):
        import warp as wp
        import mujoco_warp as mjw

        from ase_humanoid.sim.mujoco_warp import model_for_warp, warp_device_for

        self.wp, self.mjw, self.args = wp, mjw, args
        wp.config.quiet = True
        wp.config.log_level = max(wp.config.log_level, wp.LOG_WARNING)
        model = build_scene(robot).model
        device = torch.device(args.device)
        self.wp_device = warp_device_for(device)
        data = mujoco.MjData(model)
        data.qpos[:] = standing_qpos(model, robot).numpy()
        mujoco.mj_forward(model, data)
        warp_model = model_for_warp(model)
        with wp.ScopedDevice(self.wp_device):
            self.m = mjw.put_model(warp_model)
            self.d = mjw.put_data(warp_model, data, nworld=args.envs, nconmax=48, njmax=128)
        self.qpos, self.qvel = wp.to_torch(self.d.qpos), wp.to_torch(self.d.qvel)
        self.ctrl = wp.to_torch(self.d.ctrl)
        self.start_qpos = self.qpos[0].clone()
        self.offset = robot.pd_action_offset.to(device)
        self.scale = robot.pd_action_scale.to(device)
        self.generator = torch.Generator(device=device).manual_seed(args.seed)
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.stream = wp.Stream(self.wp_device)
            with wp.ScopedDevice(self.wp_device), wp.ScopedStream(self.stream):
                mjw.step(self.m, self.d)  # load modules before capture
            wp.synchronize_stream(self.stream)
            self.qpos.copy_(self.start_qpos.expand_as(self.qpos))
            self.qvel.zero_()
            with wp.ScopedDevice(self.wp_device), wp.ScopedStream(self.stream):
                with wp.ScopedCapture(stream=self.stream, force_module_load=False) as capture:
                    self._substeps()
        else:  # warp's CPU device replays a recorded launch sequence
            with wp.ScopedDevice(self.wp_device), wp.ScopedCapture() as capture:
                self._substeps()
        self.graph = capture.graph
        self.resets = 0

    def _substeps(self):
        self.d.qacc_warmstart.zero_()
        for _ in range(self.args.substeps):
            self.mjw.step(self.m, self.d)

    def control_step(self):
        wp = self.wp
        actions = torch.rand(self.ctrl.shape, generator=self.generator, device=self.ctrl.device) * 2 - 1
        self.ctrl.copy_(self.offset + self.scale * actions)
        if self.cuda:
            torch_stream = wp.stream_from_torch(torch.cuda.current_stream(self.ctrl.device))
            self.stream.wait_stream(torch_stream)
            wp.capture_launch(self.graph, stream=self.stream)
            torch_stream.wait_stream(self.stream)
        else:
            wp.capture_launch(self.graph)
        blown = ~(self.qvel.abs() <= MAX_SPEED).all(dim=1)
        if blown.any():
            self.resets += int(blown.sum())
            self.qpos[blown] = self.start_qpos
            self.qvel[blown] = 0.0

    def close(self):
        self.graph = None


# ---- GPU equivalence check ---------------------------------------------------------------------


def _scenario(sim, generator):
    """World 0 standing; the others lifted 5 cm, tilted 0.15 rad, pushed, random DoF state;
    PD targets zero for world 0 and random (action amplitude 0.2) for the others."""
    robot, n = sim.robot, sim.num_envs
    qpos = standing_qpos(sim.mj_model, robot)
    root_pos = qpos[:3].float().expand(n, 3).clone()
    root_rot = torch.tensor([0.0, 0.0, 0.0, 1.0]).expand(n, 4).clone()
    lin, ang = torch.zeros(n, 3), torch.zeros(n, 3)
    dof, dof_vel = torch.zeros(n, robot.num_dofs), torch.zeros(n, robot.num_dofs)
    m = n - 1
    axis = torch.nn.functional.normalize(torch.randn(m, 3, generator=generator), dim=-1)
    root_pos[1:, 2] += 0.05
    half = torch.tensor(0.075)
    root_rot[1:] = torch.cat([axis * torch.sin(half), torch.cos(half).expand(m, 1)], -1)
    lin[1:] = 0.3 * torch.randn(m, 3, generator=generator)
    ang[1:] = 0.5 * torch.randn(m, 3, generator=generator)
    # Strictly inside the limits: a hinge exactly at a limit is a tie that float32 and float64
    # break differently (the limit constraint is active in one engine only).
    dof[1:] = (0.15 * torch.randn(m, robot.num_dofs, generator=generator)).clamp(
        robot.dof_limits_lower + 0.02, robot.dof_limits_upper - 0.02)
    dof_vel[1:] = 0.5 * torch.randn(m, robot.num_dofs, generator=generator)
    targets = torch.zeros(n, robot.num_dofs)
    actions = (torch.rand(m, robot.num_dofs, generator=generator) * 2 - 1) * 0.2
    targets[1:] = robot.action_to_pd_target(actions)
    return [root_pos, root_rot, lin, ang, dof, dof_vel], targets


def check_equivalence(device: str, num_envs: int = 8, steps: int = 30, seed: int = 1) -> dict:
    robot = load_robot("amp_humanoid")
    t0 = time.perf_counter()
    warp_sim = make_backend("mujoco_warp", robot, num_envs, device=device)
    build_s = time.perf_counter() - t0
    cpu_sim = make_backend("mujoco", robot, num_envs, num_threads=1)
    start, targets = _scenario(cpu_sim, torch.Generator().manual_seed(seed))
    for sim in (cpu_sim, warp_sim):
        sim.set_robot_state(torch.arange(num_envs), *[v.to(sim.device) for v in start])
        sim.set_pd_targets(targets.to(sim.device))
        t0 = time.perf_counter()
        for _ in range(steps):
            sim.step(4)
        if sim is warp_sim:
            first_run_s = time.perf_counter() - t0  # includes graph capture
    ref, got = cpu_sim.state, warp_sim.state
    got = {k: getattr(got, k).cpu() for k in ("root_pos", "root_rot", "dof_pos", "contact_forces")}
    rot_diff = torch.minimum((got["root_rot"] - ref.root_rot).abs().amax(-1),
                             (got["root_rot"] + ref.root_rot).abs().amax(-1))
    result = {
        "device": device, "worlds": num_envs, "control_steps": steps,
        "max_diff": {
            "root_pos_m": float((got["root_pos"] - ref.root_pos).abs().max()),
            "root_rot": float(rot_diff.max()),
            "dof_pos_rad": float((got["dof_pos"] - ref.dof_pos).abs().max()),
            "contact_force_n": float((got["contact_forces"] - ref.contact_forces).abs().max()),
        },
        "tolerance": TOLERANCES,
        "build_s": round(build_s, 2), "first_run_s": round(first_run_s, 2),
        "lowest_root_height_m": float(ref.root_pos[:, 2].min()),
    }
    result["within_tolerance"] = all(result["max_diff"][k] <= v for k, v in TOLERANCES.items())
    warp_sim.close()
    cpu_sim.close()
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["equivalence"])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args(argv)
    result = check_equivalence(args.device, args.envs, args.steps)
    print(json.dumps(result))
    return 0 if result["within_tolerance"] else 1


if __name__ == "__main__":
    sys.exit(main())
