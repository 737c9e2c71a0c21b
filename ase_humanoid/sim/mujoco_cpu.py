"""Native MuJoCo backend: every world stepped by `mujoco.rollout` on a pool of C threads.

All worlds live in one float64 array `[N, nstate]` of MuJoCo `mjSTATE_FULLPHYSICS` states (time,
qpos, qvel, act, ...). A `step(substeps)` is a single `Rollout.rollout` call: the C thread pool
(GIL released) restores each world's state into a per-thread MjData, applies the PD targets as
position-actuator controls and runs `substeps` `mj_step`s; the last substep's state becomes the
new state array. There is no Python loop over worlds anywhere on this path.

Determinism: rollout restores the whole physics state of a world before stepping it and starts
the constraint solver from a zero warm start at every `step` call, so a world's result depends
only on its own state and targets: bitwise the same for any thread count or chunking, and a
world reset by `set_robot_state` evolves exactly like any other world in that state.

Read-back: root/DoF state comes from the final qpos/qvel (quaternions converted w,x,y,z ->
x,y,z,w here and only here; MuJoCo's body-frame root angular velocity converted to the world
frame); body poses and velocities are recomputed from them with
`ase_humanoid.robots.kinematics.body_state_from_qpos`, so they always match the state (MuJoCo's
own sensors recorded during the rollout lag one substep). Contact forces come from MuJoCo
contact sensors (one per body, `reduce="netforce"`) of the last substep, i.e. from the
constraint solve that produced the final velocities.

Blow-ups: MuJoCo's auto-reset is disabled in the scene, so a world whose state turns non-finite
keeps non-finite values (rollout stops stepping it after the warning) while all other worlds are
untouched; `set_robot_state` on that world restores it completely.
"""

from __future__ import annotations

import numpy as np
import mujoco
import mujoco.rollout
import torch

from ase_humanoid.errors import ModelError
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
from ase_humanoid.sim.hfield_collision import install_heightfield_fast_path
from ase_humanoid.sim.scene import build_scene
from ase_humanoid.utils.rotations import quat_rotate, quat_rotate_inverse

_FULLPHYSICS = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
_CTRL = int(mujoco.mjtState.mjSTATE_CTRL)


class MujocoCpuBackend(SimBackend):
    """`num_envs` worlds of floor + `robot` + `props`, stepped on `num_threads` native threads."""

    def __init__(self, robot, num_envs: int, props=(), device="cpu", num_threads: int = 1,
                 dtype=torch.float32, terrain=None):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if int(num_threads) < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}")
        self.robot = robot
        self.num_envs = int(num_envs)
        self.num_threads = int(num_threads)
        self.device = torch.device(device)
        self.dtype = dtype
        self.physics_dt = PHYSICS_DT

        self._layout = build_scene(robot, props, PHYSICS_DT, terrain=terrain)  # terrain: heightfield floor
        if terrain is not None:
            install_heightfield_fast_path()  # the same contacts, a cheaper first test (hfield_collision.py)
        model = self._layout.model
        self.mj_model = model
        self.prop_names = list(self._layout.prop_names)
        self._props = {p.name: p for p in props}
        if self._layout.num_pd_actuators != robot.num_dofs:
            raise ModelError(
                f"{robot.mjcf_path}: {self._layout.num_pd_actuators} actuators but {robot.num_dofs} hinge DoFs; "
                "every DoF needs exactly one position actuator"
            )
        self._init_index_maps()
        self._init_buffers()
        self._pool = mujoco.rollout.Rollout(nthread=self.num_threads if self.num_threads > 1 else 0)
        self._thread_data = [mujoco.MjData(model) for _ in range(self.num_threads)]
        self._models = [model] * self.num_envs
        self._refresh_from_state()

    # ---- construction -------------------------------------------------------------------------

    def _init_index_maps(self):
        model, layout = self.mj_model, self._layout
        self._nstate = mujoco.mj_stateSize(model, _FULLPHYSICS)
        qpos_off = mujoco.mj_stateSize(model, int(mujoco.mjtState.mjSTATE_TIME))
        qvel_off = qpos_off + model.nq
        # Column indices into the state array.
        self._qpos_cols = slice(qpos_off, qpos_off + model.nq)
        root_q, root_v = qpos_off + layout.root_qpos_adr, qvel_off + layout.root_qvel_adr
        # Free joints: (pos, quat w x y z, linear vel, angular vel in the body frame) columns.
        self._root_cols = _free_body_cols(root_q, root_v)
        self._dof_pos_cols = _as_slice(qpos_off + layout.dof_qpos_adr)
        self._dof_vel_cols = _as_slice(qvel_off + layout.dof_qvel_adr)
        self._prop_cols = {
            name: _free_body_cols(qpos_off + layout.prop_qpos_adr[name], qvel_off + layout.prop_qvel_adr[name])
            for name in self.prop_names
        }
        dof_cols = np.concatenate([qpos_off + layout.dof_qpos_adr, qvel_off + layout.dof_qvel_adr])
        self._robot_write_cols = np.concatenate([_free_body_columns(self._root_cols), dof_cols])
        self._body_contact_cols = _as_slice((layout.body_contact_adr[:, None] + np.arange(3)).reshape(-1))
        self._dof_actuator_ids = layout.dof_actuator_ids
        self._actuators_in_dof_order = bool(
            np.array_equal(layout.dof_actuator_ids, np.arange(model.nu))
        )

    def _init_buffers(self):
        model = self.mj_model
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        self._default_state = np.empty(self._nstate)
        mujoco.mj_getState(model, data, self._default_state, _FULLPHYSICS)
        # World states and PD targets (actuator order); the rollout reads/writes these in place.
        self._state = np.tile(self._default_state, (self.num_envs, 1))
        self._ctrl_targets = np.tile(np.asarray(data.ctrl, dtype=np.float64), (self.num_envs, 1))
        self._sensordata = np.zeros((self.num_envs, model.nsensordata))  # last substep's
        self._step_buffers = {}  # substeps -> (control, state_out, sensordata_out)

    def _buffers_for(self, substeps: int):
        buffers = self._step_buffers.get(substeps)
        if buffers is None:
            shape = (self.num_envs, substeps)
            buffers = (
                np.empty(shape + (self.mj_model.nu,)),
                np.empty(shape + (self._nstate,)),
                np.empty(shape + (self.mj_model.nsensordata,)),
            )
            self._step_buffers[substeps] = buffers
        return buffers

    # ---- stepping -----------------------------------------------------------------------------

    def set_pd_targets(self, targets: torch.Tensor) -> None:
        targets = check_shape("targets", targets, (self.num_envs, self.robot.num_dofs))
        values = targets.detach().to("cpu", torch.float64).numpy()
        if self._actuators_in_dof_order:
            np.copyto(self._ctrl_targets, values)
        else:
            self._ctrl_targets[:, self._dof_actuator_ids] = values

    def step(self, substeps: int = 1) -> None:
        substeps = int(substeps)
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        control, state_out, sensordata_out = self._buffers_for(substeps)
        np.copyto(control, self._ctrl_targets[:, None, :])  # targets held for every substep
        self._pool.rollout(
            self._models,
            self._thread_data,
            self._state,
            control,
            control_spec=_CTRL,
            skip_checks=True,
            nstep=substeps,
            initial_warmstart=None,
            state=state_out,
            sensordata=sensordata_out,
        )
        np.copyto(self._state, state_out[:, -1])
        np.copyto(self._sensordata, sensordata_out[:, -1])
        self._refresh_from_state()

    def state_dict(self) -> dict:
        # Tensors rather than numpy arrays: checkpoints are loaded weights-only (plain data).
        return {"backend": "mujoco", "state": torch.from_numpy(self._state.copy()),
                "ctrl": torch.from_numpy(self._ctrl_targets.copy()),
                "sensordata": torch.from_numpy(self._sensordata.copy())}

    def load_state_dict(self, state: dict) -> None:
        state = {key: value.cpu().numpy() if isinstance(value, torch.Tensor) else value
                 for key, value in state.items()}
        if state.get("backend") != "mujoco" or tuple(state["state"].shape) != self._state.shape:
            raise ModelError(f"simulator state of backend {state.get('backend')!r} with shape "
                             f"{getattr(state.get('state'), 'shape', None)} does not fit this "
                             f"mujoco backend's {self._state.shape}")
        np.copyto(self._state, state["state"])
        np.copyto(self._ctrl_targets, state["ctrl"])
        np.copyto(self._sensordata, state["sensordata"])
        self._refresh_from_state()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to release
            pass

    # ---- state read-back ----------------------------------------------------------------------

    def _read_free_body(self, state: torch.Tensor, cols):
        """Free-joint state of every world from `state` (float64 view of the state array) ->
        (pos, rot xyzw, lin_vel, world ang_vel) as one float64 tensor `[N, 13]`."""
        pos_cols, quat_cols, lin_cols, ang_cols = cols
        wxyz = state[:, quat_cols]
        rot64 = torch.cat([wxyz[:, 1:], wxyz[:, :1]], dim=1)
        return torch.cat([state[:, pos_cols], rot64, state[:, lin_cols], quat_rotate(rot64, state[:, ang_cols])], dim=1)

    def _refresh_from_state(self):
        """Rebuild the SimState/PropState snapshots from the state array and last sensor data."""
        state, sensors = torch.from_numpy(self._state), torch.from_numpy(self._sensordata)
        # Root and DoF state in one conversion to a new tensor (the arrays change every step);
        # the SimState fields are views of it.
        values = torch.cat([self._read_free_body(state, self._root_cols), state[:, self._dof_pos_cols],
                            state[:, self._dof_vel_cols]], dim=1).to(device=self.device, dtype=self.dtype)
        num_dofs = self.robot.num_dofs
        root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel = values.split((3, 4, 3, 3, num_dofs, num_dofs), dim=1)
        contact = sensors[:, self._body_contact_cols].to(device=self.device, dtype=self.dtype).neg()
        self._sim_state = make_sim_state(self.robot, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos,
                                         dof_vel, contact.reshape(self.num_envs, self.robot.num_bodies, 3))
        self._refresh_props(state, sensors)

    def _refresh_props(self, state=None, sensors=None):
        if state is None:
            state, sensors = torch.from_numpy(self._state), torch.from_numpy(self._sensordata)
        self._prop_states = {name: self._read_prop(state, sensors, name) for name in self.prop_names}

    def _read_prop(self, state: torch.Tensor, sensors: torch.Tensor, name: str) -> PropState:
        values = self._read_free_body(state, self._prop_cols[name]).to(device=self.device, dtype=self.dtype)
        pos, rot, lin_vel, ang_vel = values.split((3, 4, 3, 3), dim=1)
        adr = self._layout.prop_contact_adr[name]
        return PropState(
            pos=pos, rot=rot, lin_vel=lin_vel, ang_vel=ang_vel,
            contact_force=sensors[:, adr + 1: adr + 4].to(device=self.device, dtype=self.dtype).neg(),
            in_contact=(sensors[:, adr] > 0).to(self.device),
        )

    def qpos_for_render(self, env_id: int) -> np.ndarray:
        env_id = self._check_env_id(env_id)
        return self._state[env_id, self._qpos_cols].copy()

    # ---- state writes -------------------------------------------------------------------------

    def _repair_non_finite(self, ids: np.ndarray) -> bool:
        """Worlds among `ids` whose state went non-finite restart from the model's default state
        (props parked), so nothing of the blow-up survives the caller's new robot state.
        Returns whether any world was repaired."""
        rows = self._state[ids]
        broken = ids[~np.isfinite(rows).all(axis=1)]
        if broken.size:
            self._state[broken] = self._default_state
            self._sensordata[broken] = 0.0
        return bool(broken.size)

    @staticmethod
    def _free_body_values(pos, rot, lin_vel, ang_vel) -> torch.Tensor:
        """State-array values `[n, 13]` (float64) of free bodies in the order of `_free_body_columns`:
        position, quaternion w x y z, linear velocity, angular velocity in the body frame."""
        pos, rot, lin_vel, ang_vel = (x.detach().to("cpu", torch.float64) for x in (pos, rot, lin_vel, ang_vel))
        return torch.cat([pos, rot[:, 3:], rot[:, :3], lin_vel, quat_rotate_inverse(rot, ang_vel)], dim=1)

    def _write_rows(self, ids: np.ndarray, cols: np.ndarray, values: torch.Tensor) -> None:
        """One scattered write of `values [n, k]` (float64) into rows `ids`, columns `cols [k]`."""
        self._state[np.ix_(ids, cols)] = values.numpy()

    def set_robot_state(self, env_ids, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos,
                        dof_vel, kinematics=None) -> None:
        ids_t = resolve_env_ids(env_ids, self.num_envs)
        n, num_dofs = ids_t.numel(), self.robot.num_dofs
        root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel = check_robot_state_shapes(
            n, num_dofs, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel)
        if n == 0:
            return
        ids = ids_t.numpy()
        repaired = self._repair_non_finite(ids)
        dofs = torch.cat([dof_pos.detach(), dof_vel.detach()], dim=1).to("cpu", torch.float64)
        self._write_rows(ids, self._robot_write_cols, torch.cat(
            [self._free_body_values(root_pos, root_rot, root_lin_vel, root_ang_vel), dofs], dim=1))
        # No contact has been solved for the new pose yet.
        if isinstance(self._body_contact_cols, slice):
            self._sensordata[ids, self._body_contact_cols] = 0.0
        else:
            self._sensordata[np.ix_(ids, self._body_contact_cols)] = 0.0

        self._sim_state = sim_state_after_write(self.robot, self._sim_state, ids_t.to(self.device), root_pos,
                                                root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel, kinematics)
        if repaired:  # their props went back to the default state too
            self._refresh_props()

    def set_prop_state(self, name, env_ids, pos, rot, lin_vel, ang_vel) -> None:
        self._check_prop_name(name)
        ids_t = resolve_env_ids(env_ids, self.num_envs)
        n = ids_t.numel()
        pos, rot, lin_vel, ang_vel = check_prop_state_shapes(name, n, pos, rot, lin_vel, ang_vel)
        if n == 0:
            return
        ids = ids_t.numpy()
        self._write_rows(ids, _free_body_columns(self._prop_cols[name]), self._free_body_values(pos, rot, lin_vel, ang_vel))
        adr = self._layout.prop_contact_adr[name]
        self._sensordata[ids, adr: adr + 4] = 0.0

        dev_ids = ids_t.to(self.device)
        self._prop_states[name] = prop_state_after_write(
            self._prop_states[name], dev_ids, pos, rot, lin_vel, ang_vel)


def _free_body_cols(qpos_adr: int, qvel_adr: int) -> tuple:
    """State-array columns of a free joint: (pos, quat w x y z, linear velocity, angular
    velocity in the body frame), as slices."""
    return (slice(qpos_adr, qpos_adr + 3), slice(qpos_adr + 3, qpos_adr + 7),
            slice(qvel_adr, qvel_adr + 3), slice(qvel_adr + 3, qvel_adr + 6))


def _free_body_columns(cols: tuple) -> np.ndarray:
    """The 13 state-array columns of a free joint's `_free_body_cols` slices, as an index array."""
    return np.concatenate([np.arange(c.start, c.stop) for c in cols])


def _as_slice(cols: np.ndarray):
    """Consecutive column indices as a slice (views instead of copies), else the index array."""
    cols = np.asarray(cols, dtype=np.int64)
    if cols.size and np.array_equal(cols, np.arange(cols[0], cols[0] + cols.size)):
        return slice(int(cols[0]), int(cols[0]) + cols.size)
    return cols
