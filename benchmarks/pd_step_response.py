"""The physics port measured: a PD step response of one joint, a free fall of the character,
random PD targets, and the sword's mass and centre of mass.

    python benchmarks/pd_step_response.py                 # everything, one JSON object
    python benchmarks/pd_step_response.py --no-random-targets

Step response: the humanoid with its root fixed in the air and gravity off, every PD target 0
except one joint's (a knee or an elbow), which steps from 0 to `step` rad at t = 0; the other
joints hold their targets. Measured in MuJoCo for both places of the PD damping
(`robot.pd_damping`: joint = joint damping outside the actuator's effort clamp, this project's
default; drive = inside it, the release's PD drive) and, as the reference, the release's PD law
integrated exactly for the same joint inertia (the joint's diagonal of MuJoCo's mass matrix,
armature included): I qdd = clip(kp (target - q) - kd qdot, -effort, effort), with the
release's gains and limits (RELEASE_GAINS, written out from the release's humanoid MJCFs).
A small step stays below the effort limit (the two places are the same law there), a large one
saturates it.

Free fall: the character in its default pose, lowest point `drop` m above the floor, released at
rest with every PD target 0; the time until its first contact with the floor against
sqrt(2 drop / g), and the centre of mass's acceleration.

Random targets: random actions -> PD targets at 30 Hz on the floor, with the release's initial
policy noise and uniform in [-1, 1], at the simulator's 1/120 s step and at 1/240 s; root angular
speed and blown-up worlds. With the damping inside the clamp MuJoCo's step of 1/120 s is not
stable: a saturated actuator loses its implicit damping term, the explicit kd term is too stiff
for that step (kd dt / inertia > 2 for the abdomen, hips and others), and those joints chatter
from one effort limit to the other. `drive_implicit` gives the release's law with the damping
kept implicit (ase_humanoid.robots.scene.split_damping_across_clamp) and is measured the same ways.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import mujoco
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.robots import build_scene_spec, load_robot  # noqa: E402
from ase_humanoid.robots.scene import apply_pd_damping  # noqa: E402
from ase_humanoid.sim.base import PHYSICS_DT  # noqa: E402
from ase_humanoid.sim.scene import lowest_point_height  # noqa: E402

# The release's PD gains and effort limits (kp N m/rad, kd N m s/rad, effort N m) of the joints
# measured here, written out by hand from its humanoid MJCFs (tests/data/humanoid_facts.md).
RELEASE_GAINS = {
    "right_knee": (500.0, 50.0, 150.0),
    "right_elbow": (300.0, 30.0, 70.0),
}
# The release's sword: hilt and blade densities (kg/m^3).
RELEASE_SWORD_DENSITIES = {"sword_hilt": 300.0, "sword_blade": 600.0}
GRAVITY = 9.81
CONTROL_DT = 1.0 / 30.0
RELEASE_ACTION_STD = float(np.exp(-2.9))  # the release's initial policy noise (sigma_init -2.9)
SETTLE_BAND = 0.02  # settling: within 2% of the step
PD_MODES = ("joint", "drive", "drive_implicit")  # robot.pd_damping


def fixed_root_model(robot_name: str, pd_damping: str) -> mujoco.MjModel:
    """The humanoid alone (no floor), root welded in place, gravity off, at the simulator's
    timestep, with the PD damping where `pd_damping` puts it."""
    robot = load_robot(robot_name, pd_damping=pd_damping)
    spec = mujoco.MjSpec.from_file(str(robot.mjcf_path))
    apply_pd_damping(spec, pd_damping)
    for joint in list(spec.joints):
        if joint.type == mujoco.mjtJoint.mjJNT_FREE:
            spec.delete(joint)
    spec.option.gravity = [0.0, 0.0, 0.0]
    spec.option.timestep = PHYSICS_DT
    return spec.compile()


def joint_inertia(model: mujoco.MjModel, joint: str) -> float:
    """The joint's diagonal of the mass matrix (armature included) at the model's zero pose."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    full = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, full)
    dof = model.jnt_dofadr[model.joint(joint).id]
    return float(full[dof, dof])


def mujoco_step_response(robot_name: str, pd_damping: str, joint: str, step: float, seconds: float):
    """(times, q, joint torque = actuator force + passive damping) of the step in MuJoCo."""
    model = fixed_root_model(robot_name, pd_damping)
    data = mujoco.MjData(model)
    dof = model.jnt_dofadr[model.joint(joint).id]
    act = model.actuator(joint).id
    data.ctrl[:] = 0.0
    data.ctrl[act] = step
    mujoco.mj_forward(model, data)
    times, q = [0.0], [float(data.qpos[model.jnt_qposadr[model.joint(joint).id]])]
    torque = [float(data.qfrc_actuator[dof] + data.qfrc_damper[dof])]
    for _ in range(int(round(seconds / model.opt.timestep))):
        mujoco.mj_step(model, data)
        mujoco.mj_forward(model, data)  # forces at the new state
        times.append(float(data.time))
        q.append(float(data.qpos[model.jnt_qposadr[model.joint(joint).id]]))
        torque.append(float(data.qfrc_actuator[dof] + data.qfrc_damper[dof]))
    return np.array(times), np.array(q), np.array(torque)


def reference_step_response(inertia: float, kp: float, kd: float, effort: float, step: float,
                            seconds: float, damping_in_clamp: bool = True, dt: float = 1e-4):
    """The PD law integrated exactly (RK4, `dt`) for one joint of inertia `inertia`: the
    release's drive clip(kp e - kd qdot) or, with damping_in_clamp=False, clip(kp e) - kd qdot."""

    def accel(q, v):
        if damping_in_clamp:
            return np.clip(kp * (step - q) - kd * v, -effort, effort) / inertia
        return (np.clip(kp * (step - q), -effort, effort) - kd * v) / inertia

    n = int(round(seconds / dt))
    every = max(1, int(round(PHYSICS_DT / dt)))
    q = v = 0.0
    times, qs, torques = [0.0], [0.0], [accel(0.0, 0.0) * inertia]
    for i in range(1, n + 1):
        k1q, k1v = v, accel(q, v)
        k2q, k2v = v + 0.5 * dt * k1v, accel(q + 0.5 * dt * k1q, v + 0.5 * dt * k1v)
        k3q, k3v = v + 0.5 * dt * k2v, accel(q + 0.5 * dt * k2q, v + 0.5 * dt * k2v)
        k4q, k4v = v + dt * k3v, accel(q + dt * k3q, v + dt * k3v)
        q += dt / 6 * (k1q + 2 * k2q + 2 * k3q + k4q)
        v += dt / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        if i % every == 0:
            times.append(i * dt)
            qs.append(q)
            torques.append(accel(q, v) * inertia)
    return np.array(times), np.array(qs), np.array(torques)


def response_metrics(times, q, torque, step: float) -> dict:
    """Rise time (10-90%), overshoot, 2% settling time, final error, peak torque."""
    frac = q / step
    t10 = float(times[np.argmax(frac >= 0.1)]) if (frac >= 0.1).any() else None
    t90 = float(times[np.argmax(frac >= 0.9)]) if (frac >= 0.9).any() else None
    outside = np.flatnonzero(np.abs(frac - 1.0) > SETTLE_BAND)
    settled = outside[-1] + 1 < len(times) if len(outside) else True
    return {
        "rise_time_s": None if t10 is None or t90 is None else round(t90 - t10, 4),
        "overshoot": round(float(max(frac.max() - 1.0, 0.0)), 4),
        "settling_time_s": (round(float(times[outside[-1] + 1]), 4) if len(outside) else 0.0) if settled else None,
        "final_error_rad": round(float(abs(q[-1] - step)), 5),
        "peak_torque_nm": round(float(np.abs(torque).max()), 2),
    }


def step_responses(robot_name: str = "amp_humanoid", joints=("right_knee", "right_elbow"),
                   seconds: float = 1.0) -> dict:
    """Small (unsaturated) and large (saturated) steps of each joint, MuJoCo in both damping
    places against the release's law integrated exactly."""
    robot = load_robot(robot_name)
    out = {}
    for joint in joints:
        d = robot.dof_names.index(joint)
        kp, kd, effort = float(robot.kp[d]), float(robot.kd[d]), float(robot.effort_limit[d])
        rel_kp, rel_kd, rel_effort = RELEASE_GAINS[joint]
        inertia = joint_inertia(fixed_root_model(robot_name, "joint"), joint)
        sign = 1.0 if float(robot.dof_limits_upper[d]) > 0.5 else -1.0  # into the joint's range
        entry = {"kp": kp, "kd": kd, "effort_nm": effort, "release_kp_kd_effort": [rel_kp, rel_kd, rel_effort],
                 "joint_inertia_kgm2": round(inertia, 5),
                 "natural_frequency_hz": round(float(np.sqrt(kp / inertia) / (2 * np.pi)), 3),
                 "damping_ratio": round(kd / (2 * np.sqrt(kp * inertia)), 3)}
        for label, magnitude in (("small", 0.5 * effort / kp), ("large", 1.5)):
            step = sign * magnitude
            result = {"step_rad": round(step, 4), "saturates": bool(kp * magnitude > effort)}
            result["release_law"] = response_metrics(
                *reference_step_response(inertia, rel_kp, rel_kd, rel_effort, step, seconds), step)
            result["damping_outside_clamp_law"] = response_metrics(
                *reference_step_response(inertia, kp, kd, effort, step, seconds, damping_in_clamp=False), step)
            for mode in PD_MODES:
                result[f"mujoco_{mode}"] = response_metrics(
                    *mujoco_step_response(robot_name, mode, joint, step, seconds), step)
            entry[label] = result
        out[joint] = entry
    return out


def free_fall(robot_name: str = "amp_humanoid", drop: float = 0.5, pd_damping: str = "joint") -> dict:
    """Release the default pose `drop` m above the floor; time to the first floor contact and
    the centre of mass's vertical acceleration during the fall."""
    robot = load_robot(robot_name, pd_damping=pd_damping)
    spec = build_scene_spec(robot)
    spec.option.timestep = PHYSICS_DT
    model = spec.compile()
    data = mujoco.MjData(model)
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in robot.body_names]
    qpos = model.qpos0.copy()
    qpos[2] += drop - lowest_point_height(model, qpos, body_ids)
    data.qpos[:] = qpos
    data.ctrl[:] = 0.0
    mujoco.mj_forward(model, data)
    root = body_ids[0]
    com_z = [float(data.subtree_com[root, 2])]
    contact_time = None
    while data.time < 2.0 * np.sqrt(2 * drop / GRAVITY) + 0.1:
        mujoco.mj_step(model, data)
        mujoco.mj_forward(model, data)  # contacts at the new positions
        if data.ncon > 0:
            contact_time = float(data.time)
            break
        com_z.append(float(data.subtree_com[root, 2]))
    dt = model.opt.timestep
    # semi-implicit Euler from rest: after n steps the fall is g dt^2 n (n + 1) / 2
    n = int(np.ceil((np.sqrt(1 + 8 * drop / (GRAVITY * dt * dt)) - 1) / 2))
    com = np.array(com_z)
    accel = np.diff(com, 2) / dt**2
    return {
        "robot": robot_name, "pd_damping": pd_damping, "drop_m": drop, "gravity": float(-model.opt.gravity[2]),
        "time_to_ground_s": contact_time,
        "ideal_time_s": round(float(np.sqrt(2 * drop / GRAVITY)), 5),
        "ideal_discrete_time_s": round(n * dt, 5),
        "timestep_s": dt,
        "com_accel_mean": round(float(accel.mean()), 4), "com_accel_max_dev": round(float(np.abs(accel + GRAVITY).max()), 6),
    }


def sword_mass_properties(densities: dict | None = None) -> dict:
    """Mass, centre of mass (sword frame) and principal inertia of the sword body; `densities`
    (geom name -> kg/m^3) replaces the MJCF's."""
    robot = load_robot("sword_shield")
    spec = mujoco.MjSpec.from_file(str(robot.mjcf_path))
    for geom in spec.geoms:
        if densities and geom.name in densities:
            geom.density = densities[geom.name]
    model = spec.compile()
    body = model.body("sword")
    return {"densities": {g.name: float(g.density) for g in spec.geoms if g.name in ("sword_hilt", "sword_blade")},
            "mass_kg": round(float(body.mass[0]), 5), "com_m": [round(float(x), 5) for x in body.ipos],
            "inertia_kgm2": [round(float(x), 6) for x in body.inertia],
            "total_mass_kg": round(float(model.body_subtreemass[1]), 4)}


def random_targets(robot_name: str, pd_damping: str, action_std: float | None = RELEASE_ACTION_STD,
                   timestep: float = PHYSICS_DT, worlds: int = 8, steps: int = 300, seed: int = 0) -> dict:
    """Random policy actions -> PD targets at 30 Hz from the standing pose on the floor, physics
    step `timestep`: Gaussian actions of std `action_std` (the release's initial policy noise by
    default), or uniform in [-1, 1] with None. Root angular speed and blown-up worlds (|qvel| >
    1e3, put back on their feet)."""
    robot = load_robot(robot_name, pd_damping=pd_damping)
    spec = build_scene_spec(robot)
    spec.option.timestep = timestep
    model = spec.compile()
    substeps = int(round(CONTROL_DT / timestep))
    body_ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) for n in robot.body_names]
    standing = model.qpos0.copy()
    standing[2] -= lowest_point_height(model, standing, body_ids)
    offset, scale = robot.pd_action_offset.double().numpy(), robot.pd_action_scale.double().numpy()
    rng = np.random.default_rng(seed)
    speeds, blown_up = [], 0
    for _ in range(worlds):
        data = mujoco.MjData(model)
        data.qpos[:] = standing
        for _ in range(steps):
            if action_std is None:
                actions = rng.uniform(-1.0, 1.0, robot.num_dofs)
            else:
                actions = np.clip(rng.normal(0.0, action_std, robot.num_dofs), -1.0, 1.0)
            data.ctrl[:robot.num_dofs] = offset + scale * actions  # drive_implicit's extra actuators: 0
            for _ in range(substeps):
                mujoco.mj_step(model, data)
            if not np.all(np.abs(data.qvel) <= 1e3):  # also catches NaN
                blown_up += 1
                mujoco.mj_resetData(model, data)
                data.qpos[:] = standing
                continue
            speeds.append(float(np.linalg.norm(data.qvel[3:6])))
    return {"pd_damping": pd_damping, "timestep_s": timestep,
            "actions": "uniform" if action_std is None else f"normal(0, {action_std:.3f})",
            "control_steps": worlds * steps, "root_ang_speed_median": round(float(np.median(speeds)), 3),
            "root_ang_speed_p99": round(float(np.quantile(speeds, 0.99)), 3), "blown_up": blown_up}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="amp_humanoid")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of each step response")
    parser.add_argument("--drop", type=float, default=0.5, help="free-fall height of the lowest point (m)")
    parser.add_argument("--random-worlds", type=int, default=8)
    parser.add_argument("--random-steps", type=int, default=300, help="control steps (30 Hz) per world")
    parser.add_argument("--no-random-targets", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result = {
        "step_response": step_responses(args.robot, seconds=args.seconds),
        "free_fall": [free_fall(args.robot, args.drop, mode) for mode in PD_MODES],
        "sword": {"one_density": sword_mass_properties({"sword_hilt": 506.1, "sword_blade": 506.1}),
                  "release_densities": sword_mass_properties(RELEASE_SWORD_DENSITIES),
                  "mjcf": sword_mass_properties()},
    }
    if not args.no_random_targets:
        cases = [("joint", RELEASE_ACTION_STD, PHYSICS_DT), ("drive", RELEASE_ACTION_STD, PHYSICS_DT),
                 ("joint", None, PHYSICS_DT), ("drive", None, PHYSICS_DT),
                 ("drive", RELEASE_ACTION_STD, PHYSICS_DT / 2), ("joint", RELEASE_ACTION_STD, PHYSICS_DT / 2),
                 ("drive_implicit", RELEASE_ACTION_STD, PHYSICS_DT), ("drive_implicit", None, PHYSICS_DT),
                 ("drive", None, PHYSICS_DT / 2)]
        result["random_targets"] = [
            random_targets(args.robot, mode, std, dt, worlds=args.random_worlds, steps=args.random_steps)
            for mode, std, dt in cases]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
