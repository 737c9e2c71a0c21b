"""Optional Isaac Gym (Preview 4) adapter behind the `SimBackend` interface.

For users who already have Isaac Gym (it is not on a package index and needs Python <= 3.8, so
the project never depends on it and CI here never runs this file; only the import message is
tested). Isaac Gym must be imported before torch, so a script that uses this adapter starts with
`import isaacgym` as its first import.

What it builds: one PhysX scene with `num_envs` env slots; in each, the humanoid loaded from the
same MJCF as the MuJoCo backends (`robot.mjcf_path`) and one actor per `PropSpec`. Isaac Gym's
MJCF importer does not read MuJoCo `<position>` actuators, so every DoF gets a PhysX position
drive from the RobotDescription (stiffness kp, damping kd, effort limit, armature): the same PD
law, torque = clip(kp (target - q) - kd qdot, +-effort). Physics runs at 1/120 s, one PhysX step
per substep, with the PhysX solver settings of the ASE release (4 position / 0 velocity
iterations, contact offset 2 cm).

State: the GPU (or CPU) tensors Isaac Gym exposes (`acquire_actor_root_state_tensor`,
`acquire_dof_state_tensor`, `acquire_net_contact_force_tensor`) are wrapped once with
`gymtorch.wrap_tensor` and viewed per env. Isaac Gym already uses x, y, z, w quaternions and
world-frame angular velocities. Its positions are in the scene frame, which offsets each env by
its origin; the adapter subtracts/adds those origins so every env sees the same world frame as a
MuJoCo world. Body states are computed with `body_state_from_qpos` like in the MuJoCo backends,
so all backends agree on body conventions (origin pose, velocity at the body origin).
Contact forces are PhysX's net contact force per rigid body; a prop is `in_contact` when its net
contact force is non-zero (PhysX reports no contact list through the tensor API).

Writes (`set_robot_state`, `set_prop_state`) update the wrapped tensors at once (so `state` reads
them back exactly) and are pushed to PhysX in one `set_actor_root_state_tensor_indexed` /
`set_dof_state_tensor_indexed` call at the next `step`, because Isaac Gym applies only one
indexed call of each kind per simulation step.

Not supported here: props with MuJoCo collision bits other than the default (contype = conaffinity
= 1), since Isaac Gym filters collisions by per-env groups and bit masks of another meaning.
"""

from __future__ import annotations

import math

try:
    from isaacgym import gymapi, gymtorch
except ImportError as exc:  # the usual case: Isaac Gym is not installed
    raise ImportError(
        "the Isaac Gym adapter (ase_humanoid.sim.isaacgym) needs NVIDIA Isaac Gym Preview 4 "
        "installed from NVIDIA's archive (Python <= 3.8) and imported before torch; without it "
        f"use sim=mujoco or sim=mujoco_warp (import failed: {exc})"
    ) from exc

import numpy as np
import torch

from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.sim.base import (
    PHYSICS_DT,
    PropState,
    SimBackend,
    check_prop_state_shapes,
    check_robot_state_shapes,
    check_shape,
    make_sim_state,
    prop_state_after_write,
    resolve_env_ids,
    sim_state_after_write,
)
from ase_humanoid.sim.scene import build_scene
from ase_humanoid.utils.rotations import quat_conjugate, quat_mul

ENV_SPACING = 5.0  # metres between env origins in the shared PhysX scene
GRAVITY = 9.81

# Isaac Gym capsules lie along their x axis, MuJoCo's along z: a prop capsule's Isaac pose is
# its MuJoCo pose times this rotation (-90 degrees about y maps x onto z).
_CAPSULE_X_TO_Z = torch.tensor([0.0, -math.sin(math.pi / 4), 0.0, math.cos(math.pi / 4)])


def _sim_params(device: torch.device) -> "gymapi.SimParams":
    params = gymapi.SimParams()
    params.dt = PHYSICS_DT
    params.substeps = 1
    params.up_axis = gymapi.UP_AXIS_Z
    params.gravity = gymapi.Vec3(0.0, 0.0, -GRAVITY)
    params.use_gpu_pipeline = device.type == "cuda"
    physx = params.physx
    physx.use_gpu = device.type == "cuda"
    physx.solver_type = 1  # TGS
    physx.num_position_iterations = 4
    physx.num_velocity_iterations = 0
    physx.contact_offset = 0.02
    physx.rest_offset = 0.0
    physx.bounce_threshold_velocity = 0.2
    physx.max_depenetration_velocity = 10.0
    physx.default_buffer_size_multiplier = 10.0
    physx.num_threads = 4
    return params


class IsaacGymBackend(SimBackend):
    """`num_envs` Isaac Gym envs of floor + `robot` + `props`; `device` 'cpu' or 'cuda[:i]'
    (the GPU pipeline, tensors stay on that GPU)."""

    def __init__(self, robot, num_envs: int, props=(), device="cpu"):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.robot = robot
        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        self.physics_dt = PHYSICS_DT
        self._props = tuple(props)
        for prop in self._props:
            if (prop.contype, prop.conaffinity) != (1, 1):
                raise ConfigError(
                    f"PropSpec {prop.name!r}: the Isaac Gym adapter supports only contype = "
                    f"conaffinity = 1, got {prop.contype}, {prop.conaffinity}"
                )
        # The MuJoCo scene gives the qpos layout for viewers/video and checks the MJCF.
        self._layout = build_scene(robot, self._props, PHYSICS_DT)
        self.mj_model = self._layout.model
        self.prop_names = list(self._layout.prop_names)

        self._gym = gymapi.acquire_gym()
        device_id = (self.device.index or 0) if self.device.type == "cuda" else 0
        self._sim = self._gym.create_sim(device_id, -1, gymapi.SIM_PHYSX, _sim_params(self.device))
        if self._sim is None:
            raise ModelError(f"Isaac Gym could not create a PhysX sim on {self.device}")
        self._add_ground()
        self._create_envs()
        self._gym.prepare_sim(self._sim)
        self._wrap_tensors()
        self._pending_actor_ids = []  # actors whose root state must be pushed before stepping
        self._pending_dof_ids = []
        self._refresh()

    # ---- construction -------------------------------------------------------------------------

    def _add_ground(self):
        plane = gymapi.PlaneParams()
        plane.normal = gymapi.Vec3(0.0, 0.0, 1.0)
        plane.static_friction = 1.0
        plane.dynamic_friction = 1.0
        plane.restitution = 0.0
        self._gym.add_ground(self._sim, plane)

    def _load_humanoid(self):
        options = gymapi.AssetOptions()
        options.angular_damping = 0.01
        options.max_angular_velocity = 100.0
        options.default_dof_drive_mode = gymapi.DOF_MODE_POS
        path = self.robot.mjcf_path
        asset = self._gym.load_asset(self._sim, str(path.parent), path.name, options)
        if asset is None:
            raise ModelError(f"Isaac Gym could not load the MJCF {path}")
        body_names = list(self._gym.get_asset_rigid_body_names(asset))
        dof_names = list(self._gym.get_asset_dof_names(asset))
        missing = [n for n in self.robot.body_names if n not in body_names]
        missing += [n for n in self.robot.dof_names if n not in dof_names]
        if missing or len(dof_names) != self.robot.num_dofs:
            raise ModelError(
                f"{path}: Isaac Gym's import does not match the robot description "
                f"(missing {missing}, {len(dof_names)} DoFs for {self.robot.num_dofs})"
            )
        # Isaac order -> robot order maps.
        self._body_index = torch.tensor([body_names.index(n) for n in self.robot.body_names])
        self._dof_index = torch.tensor([dof_names.index(n) for n in self.robot.dof_names])
        self._num_asset_bodies = len(body_names)

        dof_props = self._gym.get_asset_dof_properties(asset)
        order = self._dof_index.numpy()
        dof_props["driveMode"][:] = gymapi.DOF_MODE_POS
        for field, values in (("stiffness", self.robot.kp), ("damping", self.robot.kd),
                              ("effort", self.robot.effort_limit), ("armature", self.robot.armature)):
            column = np.array(dof_props[field], dtype=np.float64)
            column[order] = values.double().numpy()
            dof_props[field][:] = column
        return asset, dof_props

    def _prop_asset(self, prop):
        options = gymapi.AssetOptions()
        options.density = prop.density
        if prop.shape == "box":
            sx, sy, sz = (2.0 * s for s in prop.size)
            return self._gym.create_box(self._sim, sx, sy, sz, options)
        if prop.shape == "sphere":
            return self._gym.create_sphere(self._sim, prop.size[0], options)
        radius, half_length = prop.size
        return self._gym.create_capsule(self._sim, radius, 2.0 * half_length, options)

    def _create_envs(self):
        gym, sim = self._gym, self._sim
        humanoid, dof_props = self._load_humanoid()
        prop_assets = [self._prop_asset(p) for p in self._props]
        lower = gymapi.Vec3(-ENV_SPACING, -ENV_SPACING, 0.0)
        upper = gymapi.Vec3(ENV_SPACING, ENV_SPACING, ENV_SPACING)
        per_row = int(math.sqrt(self.num_envs))
        start = gymapi.Transform()
        start.p = gymapi.Vec3(*self.robot.local_translation[0].tolist())
        origins, actor_ids = [], []
        for env_id in range(self.num_envs):
            env = gym.create_env(sim, lower, upper, per_row)
            # Collision group = env id; filter 0 keeps self-collisions (as in the MJCF scene).
            actor = gym.create_actor(env, humanoid, start, "humanoid", env_id, 0, 0)
            gym.set_actor_dof_properties(env, actor, dof_props)
            ids = [gym.get_actor_index(env, actor, gymapi.DOMAIN_SIM)]
            for index, (prop, asset) in enumerate(zip(self._props, prop_assets)):
                pose = gymapi.Transform()
                pose.p = gymapi.Vec3(5.0 + 2.0 * index, 0.0, 1.0)
                handle = gym.create_actor(env, asset, pose, prop.name, env_id, 0, 0)
                ids.append(gym.get_actor_index(env, handle, gymapi.DOMAIN_SIM))
            origin = gym.get_env_origin(env)
            origins.append([origin.x, origin.y, origin.z])
            actor_ids.append(ids)
        self._env_origins = torch.tensor(origins, dtype=torch.float32, device=self.device)  # [N, 3]
        # Global actor indices [N, 1 + P]: column 0 the humanoid, then the props.
        self._actor_ids = torch.tensor(actor_ids, dtype=torch.int32, device=self.device)
        self._bodies_per_env = self._num_asset_bodies + len(self._props)

    def _wrap_tensors(self):
        gym, sim, n = self._gym, self._sim, self.num_envs
        actors_per_env = 1 + len(self._props)
        self._root_states = gymtorch.wrap_tensor(gym.acquire_actor_root_state_tensor(sim))  # [A, 13]
        self._dof_states = gymtorch.wrap_tensor(gym.acquire_dof_state_tensor(sim))  # [N*D, 2]
        self._contact = gymtorch.wrap_tensor(gym.acquire_net_contact_force_tensor(sim))  # [N*Bt, 3]
        self._root_view = self._root_states.view(n, actors_per_env, 13)
        self._dof_view = self._dof_states.view(n, self.robot.num_dofs, 2)
        self._contact_view = self._contact.view(n, self._bodies_per_env, 3)
        self._dof_targets = torch.zeros(n * self.robot.num_dofs, dtype=torch.float32, device=self.device)
        self._dof_index = self._dof_index.to(self.device)
        self._body_index = self._body_index.to(self.device)

    # ---- stepping -----------------------------------------------------------------------------

    def set_pd_targets(self, targets: torch.Tensor) -> None:
        targets = check_shape("targets", targets, (self.num_envs, self.robot.num_dofs))
        view = self._dof_targets.view(self.num_envs, self.robot.num_dofs)
        view[:, self._dof_index] = targets.detach().to(self.device, torch.float32)
        self._gym.set_dof_position_target_tensor(self._sim, gymtorch.unwrap_tensor(self._dof_targets))

    def _push_pending_writes(self):
        gym, sim = self._gym, self._sim
        if self._pending_actor_ids:
            ids = torch.unique(torch.cat(self._pending_actor_ids)).to(torch.int32)
            gym.set_actor_root_state_tensor_indexed(
                sim, gymtorch.unwrap_tensor(self._root_states), gymtorch.unwrap_tensor(ids), len(ids)
            )
            self._pending_actor_ids = []
        if self._pending_dof_ids:
            ids = torch.unique(torch.cat(self._pending_dof_ids)).to(torch.int32)
            gym.set_dof_state_tensor_indexed(
                sim, gymtorch.unwrap_tensor(self._dof_states), gymtorch.unwrap_tensor(ids), len(ids)
            )
            self._pending_dof_ids = []

    def step(self, substeps: int = 1) -> None:
        substeps = int(substeps)
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        self._push_pending_writes()
        for _ in range(substeps):
            self._gym.simulate(self._sim)
            if self.device.type == "cpu":
                self._gym.fetch_results(self._sim, True)
        self._gym.refresh_actor_root_state_tensor(self._sim)
        self._gym.refresh_dof_state_tensor(self._sim)
        self._gym.refresh_net_contact_force_tensor(self._sim)
        self._refresh()

    def close(self) -> None:
        if self._sim is not None:
            self._gym.destroy_sim(self._sim)
            self._sim = None

    # ---- state read-back ----------------------------------------------------------------------

    def _read_actor(self, column: int):
        """(pos, rot xyzw, lin_vel, ang_vel) of actor `column` in every env, env-local frame."""
        states = self._root_view[:, column]
        return (states[:, 0:3] - self._env_origins, states[:, 3:7].clone(),
                states[:, 7:10].clone(), states[:, 10:13].clone())

    def _refresh(self):
        root_pos, root_rot, root_lin_vel, root_ang_vel = self._read_actor(0)
        dof_pos = self._dof_view[:, self._dof_index, 0]
        dof_vel = self._dof_view[:, self._dof_index, 1]
        contact = self._contact_view[:, self._body_index]
        self._sim_state = make_sim_state(
            self.robot,
            root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel, contact
        )
        self._prop_states = {name: self._read_prop(k) for k, name in enumerate(self.prop_names)}

    def _read_prop(self, index: int) -> PropState:
        pos, rot, lin_vel, ang_vel = self._read_actor(1 + index)
        if self._props[index].shape == "capsule":
            rot = quat_mul(rot, quat_conjugate(_CAPSULE_X_TO_Z.to(rot)))
        force = self._contact_view[:, self._num_asset_bodies + index].clone()
        return PropState(pos=pos, rot=rot, lin_vel=lin_vel, ang_vel=ang_vel, contact_force=force,
                         in_contact=force.norm(dim=-1) > 0)

    def qpos_for_render(self, env_id: int) -> np.ndarray:
        env_id = self._check_env_id(env_id)
        layout, state = self._layout, self._sim_state
        qpos = self.mj_model.qpos0.copy()

        def put_free(adr, pos, rot):
            qpos[adr:adr + 3] = pos.detach().cpu().double().numpy()
            qpos[adr + 3:adr + 7] = rot.detach().cpu().double().numpy()[[3, 0, 1, 2]]

        put_free(layout.root_qpos_adr, state.root_pos[env_id], state.root_rot[env_id])
        qpos[layout.dof_qpos_adr] = state.dof_pos[env_id].detach().cpu().double().numpy()
        for name in self.prop_names:
            prop = self._prop_states[name]
            put_free(layout.prop_qpos_adr[name], prop.pos[env_id], prop.rot[env_id])
        return qpos

    # ---- state writes -------------------------------------------------------------------------

    def _env_ids(self, env_ids) -> torch.Tensor:
        return resolve_env_ids(env_ids, self.num_envs).to(self.device)

    def _write_actor(self, ids, column, pos, rot, lin_vel, ang_vel):
        f32 = dict(device=self.device, dtype=torch.float32)
        rows = self._root_view[:, column]  # a view: writes land in the wrapped tensor
        rows[ids, 0:3] = pos.detach().to(**f32) + self._env_origins[ids]
        rows[ids, 3:7] = rot.detach().to(**f32)
        rows[ids, 7:10] = lin_vel.detach().to(**f32)
        rows[ids, 10:13] = ang_vel.detach().to(**f32)
        self._pending_actor_ids.append(self._actor_ids[ids, column])

    def set_robot_state(self, env_ids, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos,
                        dof_vel, kinematics=None) -> None:
        ids = self._env_ids(env_ids)
        n, num_dofs = ids.numel(), self.robot.num_dofs
        root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel = check_robot_state_shapes(
            n, num_dofs, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel)
        if n == 0:
            return
        self._write_actor(ids, 0, root_pos, root_rot, root_lin_vel, root_ang_vel)
        rows = ids[:, None]
        self._dof_view[rows, self._dof_index, 0] = dof_pos.detach().to(self.device, torch.float32)
        self._dof_view[rows, self._dof_index, 1] = dof_vel.detach().to(self.device, torch.float32)
        self._pending_dof_ids.append(self._actor_ids[ids, 0])
        self._contact_view[ids] = 0.0  # nothing solved for the new pose yet

        # New snapshot: the set values verbatim for `ids` (exact round trip), their bodies'
        # kinematics given or computed for these rows only.
        self._sim_state = sim_state_after_write(self.robot, self._sim_state, ids, root_pos, root_rot,
                                                root_lin_vel, root_ang_vel, dof_pos, dof_vel, kinematics)

    def set_prop_state(self, name, env_ids, pos, rot, lin_vel, ang_vel) -> None:
        self._check_prop_name(name)
        ids = self._env_ids(env_ids)
        n = ids.numel()
        pos, rot, lin_vel, ang_vel = check_prop_state_shapes(name, n, pos, rot, lin_vel, ang_vel)
        if n == 0:
            return
        index = self.prop_names.index(name)
        isaac_rot = rot.detach().to(self.device, torch.float32)
        if self._props[index].shape == "capsule":
            isaac_rot = quat_mul(isaac_rot, _CAPSULE_X_TO_Z.to(self.device))
        self._write_actor(ids, 1 + index, pos, isaac_rot, lin_vel, ang_vel)
        self._contact_view[ids, self._num_asset_bodies + index] = 0.0

        self._prop_states[name] = prop_state_after_write(
            self._prop_states[name], ids, pos, rot, lin_vel, ang_vel)
