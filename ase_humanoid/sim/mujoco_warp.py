"""MuJoCo Warp backend: every world of the scene stepped by `mujoco_warp`, state shared with torch.

The same combined MjModel as the CPU backend (`ase_humanoid.sim.scene.build_scene`: floor +
humanoid + props + one contact sensor per body) is put on a warp device once, with one MuJoCo Warp
world per env. `qpos`, `qvel`, `ctrl`, `sensordata` and `qacc_warmstart` of all worlds are warp
arrays `[N, ...]` viewed as torch tensors with `wp.to_torch` (same memory, no copies): PD targets,
resets and read-back are torch indexing into those views and never leave the device.

Stepping: `step(substeps)` zeroes the solver warm start (like the CPU backend, every call starts
the constraint solver cold, so a world's evolution depends only on its own state and targets),
then runs `substeps` `mujoco_warp.step` calls. That sequence is captured once per `substeps` value
(`wp.ScopedCapture`) and replayed: on a CUDA device as a CUDA graph on a dedicated warp stream,
ordered after and before the torch work by stream events; on warp's CPU device as warp's recorded
launch sequence, which replays bitwise the same results about 14 times faster than launching
the kernels from Python.

Read-back (identical conventions to `mujoco_cpu.py`): root/DoF state from qpos/qvel (w,x,y,z ->
x,y,z,w here and only here; MuJoCo's body-frame root angular velocity rotated to the world frame);
body poses and velocities from `ase_humanoid.robots.kinematics.body_state_from_qpos`; per-body
contact forces from the scene's MuJoCo contact sensors (`reduce="netforce"`), which MuJoCo Warp
evaluates itself (`mujoco_warp` sensor.py), from the last substep's constraint solve, negated
because MuJoCo reports the force a body exerts on the others.

Precision: MuJoCo Warp computes in float32 (the CPU backend in float64) and raises the solver
tolerance to at least 1e-6; with the analytic box-box collider selected below, a
second of falling, contact-rich motion from the same states and targets ends within about 1e-5 m
and 1e-5 rad of the CPU backend (tests/test_sim_warp.py). Exact ties are broken differently: a
hinge set exactly at its limit may activate the limit in one engine and not in the other.

Worlds are independent: on warp's CPU device a world's trajectory depends only on its own state
and targets, bitwise (checked by the tests); on a GPU, float atomics may reorder sums in the
last bits.

Blow-ups: MuJoCo Warp has no auto-reset (the scene's `mjDSBL_AUTORESET` flag is cleared on the
copy given to warp, which rejects it), so a world whose state turns non-finite stays non-finite;
`set_robot_state` restores such a world (qpos/qvel of the whole world, props included, back to the
model's default before the new robot state is written), all on the device.

Checkpoints: `state_dict` holds qpos, qvel, ctrl, act, time and sensor data of every world
(host arrays); a backend restored from it continues bitwise. A CPU-backend checkpoint does not
load here (different state layout and precision) and vice versa.

Capacity: contacts live in one shared pool of `num_envs * nconmax` slots and constraint rows in
`njmax` rows per world; the defaults (48 contacts, 128 rows) hold the humanoid with one or two
props (measured: at most 12 contacts and 51 rows in a flailing, fallen humanoid).
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np
import torch

try:
    import warp as wp
    import mujoco_warp as mjw
except ImportError as exc:  # pragma: no cover - exercised only where the extra is missing
    raise ImportError(
        "the 'mujoco_warp' sim backend needs MuJoCo Warp: install the 'gpu' extra "
        "(pip install 'ase_humanoid[gpu]', i.e. mujoco-warp and warp-lang) or use sim=mujoco "
        f"(import failed: {exc})"
    ) from exc

from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.sim.base import (
    PHYSICS_DT,
    PropState,
    SimBackend,
    check_prop_state_shapes,
    check_robot_state_shapes,
    check_shape,
    make_sim_state,
    resolve_env_ids,
    sim_state_after_write,
)
from ase_humanoid.sim.scene import build_scene
from ase_humanoid.utils.rotations import quat_rotate, quat_rotate_inverse

# Warp records and replays launch sequences on its CPU device from 1.19 on (tested there);
# older versions launch eagerly on the CPU.
_CPU_GRAPHS = tuple(int(part) for part in wp.__version__.split(".")[:2]) >= (1, 19)

DEFAULT_NCONMAX = 48
DEFAULT_NJMAX = 128

# Column offsets inside a free joint's qpos block: pos (3) then quat w, x, y, z.
_QUAT_XYZW_FROM_QPOS = [4, 5, 6, 3]


def warp_device_for(device: torch.device) -> str:
    """The warp device that shares memory with torch `device` ('cpu' or 'cuda:<index>')."""
    if device.type == "cpu":
        return "cpu"
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index}"
    raise ConfigError(f"sim device {str(device)!r}: the mujoco_warp backend runs on 'cpu' or 'cuda'")


def model_for_warp(model: mujoco.MjModel) -> mujoco.MjModel:
    """A copy of the scene model for MuJoCo Warp, colliding like native MuJoCo.

    - The auto-reset flag is cleared: MuJoCo Warp rejects it (and never auto-resets anyway).
    - Native CCD is disabled on the copy only, which makes MuJoCo Warp use its port of MuJoCo's
      analytic box-box collider instead of GJK/EPA multi-contact (pruned to 4 points). Native
      MuJoCo always uses the analytic one for boxes; with CCD, foot-foot contacts came out
      different and about one falling world in five left the CPU trajectory by centimetres
      within a second. Every other geom pair of the scene is analytic in both engines.
    """
    warp_model = copy.copy(model)
    warp_model.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_AUTORESET)
    warp_model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_NATIVECCD)
    return warp_model


def _quiet_warp():
    """No banner and no per-kernel "Module ... load" lines (about a hundred) in training logs."""
    wp.config.quiet = True
    wp.config.log_level = max(wp.config.log_level, wp.LOG_WARNING)


class MujocoWarpBackend(SimBackend):
    """`num_envs` MuJoCo Warp worlds of floor + `robot` + `props` on `device` ('cpu' or 'cuda').

    `nconmax` (contacts per world, pooled across worlds) and `njmax` (constraint rows per world)
    size MuJoCo Warp's buffers; `use_graph` captures each substep loop once as a graph (CUDA
    graph on a GPU, warp's recorded launch sequence on its CPU device) and replays it.
    """

    def __init__(self, robot, num_envs: int, props=(), device="cpu", nconmax: int = DEFAULT_NCONMAX,
                 njmax: int = DEFAULT_NJMAX, use_graph: bool = True, terrain=None):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.robot = robot
        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        self.physics_dt = PHYSICS_DT
        self._wp_device = warp_device_for(self.device)

        self._layout = build_scene(robot, props, PHYSICS_DT, terrain=terrain)  # terrain: heightfield floor
        self.mj_model = self._layout.model
        self.prop_names = list(self._layout.prop_names)
        if self._layout.num_pd_actuators != robot.num_dofs:
            raise ModelError(
                f"{robot.mjcf_path}: {self._layout.num_pd_actuators} actuators but {robot.num_dofs} hinge DoFs; "
                "every DoF needs exactly one position actuator"
            )

        _quiet_warp()
        wp.init()
        self._is_cuda = self.device.type == "cuda"
        self._use_graph = bool(use_graph) and (self._is_cuda or _CPU_GRAPHS)
        self._graphs = {}  # substeps -> captured graph
        self._build_warp_world(int(nconmax), int(njmax))
        self._init_index_maps()
        if self._is_cuda:
            self._warp_stream = wp.Stream(self._wp_device)
            self._warm_up()
        self._refresh()

    # ---- construction -------------------------------------------------------------------------

    def _build_warp_world(self, nconmax: int, njmax: int):
        """Put model and `num_envs` copies of the default state on the warp device, and view the
        arrays the backend touches as torch tensors."""
        warp_model = model_for_warp(self.mj_model)
        default = mujoco.MjData(self.mj_model)
        mujoco.mj_forward(self.mj_model, default)
        with wp.ScopedDevice(self._wp_device):
            self._m = mjw.put_model(warp_model)
            # The MJCF caps the solver at 20 iterations and 10 linesearch steps, for speed; native
            # MuJoCo stops there silently, MuJoCo Warp prints a line from the kernel each time (a
            # few per epoch at 4096 worlds on a GPU). Capacity overflows (contacts, constraints)
            # still print: those lose physics.
            self._m.opt.warn_overflow &= ~int(
                mjw.OverflowType.ITERATIONS | mjw.OverflowType.LS_ITERATIONS
            )
            self._d = mjw.put_data(
                warp_model, default, nworld=self.num_envs, nconmax=nconmax, njmax=njmax
            )
        d = self._d
        self._qpos = wp.to_torch(d.qpos)  # [N, nq]
        self._qvel = wp.to_torch(d.qvel)  # [N, nv]
        self._ctrl = wp.to_torch(d.ctrl)  # [N, nu]
        self._sensordata = wp.to_torch(d.sensordata)  # [N, nsensordata]
        self._qacc_warmstart = wp.to_torch(d.qacc_warmstart)  # [N, nv]
        self._default_qpos = torch.as_tensor(default.qpos, dtype=torch.float32, device=self.device)
        self._default_qvel = torch.as_tensor(default.qvel, dtype=torch.float32, device=self.device)
        self._default_ctrl = torch.as_tensor(default.ctrl, dtype=torch.float32, device=self.device)

    def _init_index_maps(self):
        layout, device = self._layout, self.device

        def cols(values):
            return torch.as_tensor(np.asarray(values), dtype=torch.long, device=device)

        def free_body_cols(qpos_adr, qvel_adr):
            """(pos, quat as xyzw, lin vel, body-frame ang vel) columns of one free joint."""
            return (
                cols(qpos_adr + np.arange(3)),
                cols(qpos_adr + np.array(_QUAT_XYZW_FROM_QPOS)),
                cols(qvel_adr + np.arange(3)),
                cols(qvel_adr + 3 + np.arange(3)),
            )

        self._root_cols = free_body_cols(layout.root_qpos_adr, layout.root_qvel_adr)
        self._prop_cols = {
            name: free_body_cols(layout.prop_qpos_adr[name], layout.prop_qvel_adr[name])
            for name in self.prop_names
        }
        self._prop_contact_adr = dict(layout.prop_contact_adr)
        self._dof_pos_cols = cols(layout.dof_qpos_adr)
        self._dof_vel_cols = cols(layout.dof_qvel_adr)
        self._body_contact_cols = cols(layout.body_contact_adr[:, None] + np.arange(3)).reshape(-1)
        self._dof_actuator_ids = cols(layout.dof_actuator_ids)
        self._actuators_in_dof_order = bool(
            np.array_equal(layout.dof_actuator_ids, np.arange(self.mj_model.nu))
        )

    def _warm_up(self):
        """Load every kernel module before graph capture (capture cannot compile), then restore
        the default state the warm-up step disturbed."""
        with wp.ScopedDevice(self._wp_device), wp.ScopedStream(self._warp_stream):
            mjw.step(self._m, self._d)
        wp.synchronize_stream(self._warp_stream)
        self._qpos.copy_(self._default_qpos.expand_as(self._qpos))
        self._qvel.copy_(self._default_qvel.expand_as(self._qvel))
        self._ctrl.copy_(self._default_ctrl.expand_as(self._ctrl))
        self._qacc_warmstart.zero_()
        self._sensordata.zero_()
        torch.cuda.synchronize(self.device)

    # ---- stepping -----------------------------------------------------------------------------

    def set_pd_targets(self, targets: torch.Tensor) -> None:
        targets = check_shape("targets", targets, (self.num_envs, self.robot.num_dofs))
        values = targets.detach().to(device=self.device, dtype=torch.float32)
        if self._actuators_in_dof_order:
            self._ctrl.copy_(values)
        else:
            self._ctrl[:, self._dof_actuator_ids] = values

    def _launch_substeps(self, substeps: int):
        """Cold solver start, then `substeps` MuJoCo Warp steps of every world (warp launches)."""
        self._d.qacc_warmstart.zero_()
        for _ in range(substeps):
            mjw.step(self._m, self._d)

    def _graph_for(self, substeps: int):
        """The captured substep loop for `substeps` (captured on first use). On CUDA the launches
        must go to the capturing stream, hence the ScopedStream around the capture."""
        graph = self._graphs.get(substeps)
        if graph is None:
            with wp.ScopedDevice(self._wp_device):
                if self._is_cuda:
                    with wp.ScopedStream(self._warp_stream), wp.ScopedCapture(
                        stream=self._warp_stream, force_module_load=False
                    ) as capture:
                        self._launch_substeps(substeps)
                else:
                    with wp.ScopedCapture() as capture:
                        self._launch_substeps(substeps)
            graph = self._graphs[substeps] = capture.graph
        return graph

    def step(self, substeps: int = 1) -> None:
        substeps = int(substeps)
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        if self._is_cuda:
            # Warp works on its own stream, ordered after the torch writes (targets, resets) and
            # before the torch reads that follow; no host synchronisation.
            torch_stream = wp.stream_from_torch(torch.cuda.current_stream(self.device))
            self._warp_stream.wait_stream(torch_stream)
            if self._use_graph:
                wp.capture_launch(self._graph_for(substeps), stream=self._warp_stream)
            else:
                with wp.ScopedDevice(self._wp_device), wp.ScopedStream(self._warp_stream):
                    self._launch_substeps(substeps)
            torch_stream.wait_stream(self._warp_stream)
        elif self._use_graph:
            wp.capture_launch(self._graph_for(substeps))
        else:
            with wp.ScopedDevice(self._wp_device):
                self._launch_substeps(substeps)
        self._refresh()

    def close(self) -> None:
        self._graphs.clear()

    # ---- checkpoints --------------------------------------------------------------------------

    _CHECKPOINT_FIELDS = ("qpos", "qvel", "ctrl", "act", "time", "sensordata")

    def state_dict(self) -> dict:
        """Every world's qpos, qvel, ctrl (PD targets), act, time and last sensor data, as host
        float32 tensors (plain data for weights-only loading). That is all a step reads (the solver warm start is zeroed per step), so a
        restored backend continues bitwise where this one stands."""
        state = {"backend": "mujoco_warp"}
        for name in self._CHECKPOINT_FIELDS:
            state[name] = torch.from_numpy(getattr(self._d, name).numpy().copy())
        return state

    def load_state_dict(self, state: dict) -> None:
        if state.get("backend") != "mujoco_warp":
            raise ModelError(
                f"simulator state of backend {state.get('backend')!r} does not fit the mujoco_warp backend"
            )
        for name in self._CHECKPOINT_FIELDS:
            target = wp.to_torch(getattr(self._d, name))
            value = torch.as_tensor(state[name])
            if tuple(value.shape) != tuple(target.shape):
                raise ModelError(
                    f"simulator state field {name!r} has shape {list(value.shape)}, this "
                    f"mujoco_warp backend needs {list(target.shape)} (same scene and num_envs)"
                )
            target.copy_(value.to(target.device, target.dtype))
        self._refresh()

    # ---- state read-back ----------------------------------------------------------------------

    def _read_free_body(self, pos_cols, quat_cols, lin_cols, ang_cols):
        """Free-joint state of every world -> (pos, rot xyzw, lin_vel, world ang_vel) tensors."""
        rot = self._qpos[:, quat_cols]
        ang_world = quat_rotate(rot, self._qvel[:, ang_cols])
        return self._qpos[:, pos_cols], rot, self._qvel[:, lin_cols], ang_world

    def _read_prop(self, name: str) -> PropState:
        pos, rot, lin_vel, ang_vel = self._read_free_body(*self._prop_cols[name])
        adr = self._prop_contact_adr[name]
        return PropState(
            pos=pos, rot=rot, lin_vel=lin_vel, ang_vel=ang_vel,
            contact_force=-self._sensordata[:, adr + 1: adr + 4],
            in_contact=self._sensordata[:, adr] > 0,
        )

    def _refresh(self):
        """New SimState/PropState snapshots (fresh tensors) from the warp arrays' torch views."""
        root = self._read_free_body(*self._root_cols)
        dof_pos = self._qpos[:, self._dof_pos_cols]
        dof_vel = self._qvel[:, self._dof_vel_cols]
        contact = -self._sensordata[:, self._body_contact_cols]
        self._sim_state = make_sim_state(
            self.robot,
            *root, dof_pos, dof_vel, contact.reshape(self.num_envs, self.robot.num_bodies, 3)
        )
        self._prop_states = {name: self._read_prop(name) for name in self.prop_names}

    def qpos_for_render(self, env_id: int) -> np.ndarray:
        env_id = self._check_env_id(env_id)
        return self._qpos[env_id].detach().to("cpu", torch.float64).numpy()

    # ---- state writes -------------------------------------------------------------------------

    def _device_env_ids(self, env_ids) -> torch.Tensor:
        """Env ids as a LongTensor [n] on the backend's device.

        Host ids (lists, CPU tensors) are validated like the CPU backend does; ids already on a
        GPU are used as they are, without the host synchronisation a range check would cost (an
        out-of-range id there is a device-side indexing error).
        """
        if isinstance(env_ids, torch.Tensor) and env_ids.device.type != "cpu":
            if env_ids.dtype == torch.bool:
                if env_ids.shape != (self.num_envs,):
                    raise ValueError(
                        f"env_ids bool mask must have shape [{self.num_envs}], got {list(env_ids.shape)}"
                    )
                return env_ids.nonzero().flatten().to(self.device)
            if env_ids.dtype.is_floating_point or env_ids.dim() != 1:
                raise ValueError(
                    f"env_ids must be a 1-D integer tensor or a bool mask [{self.num_envs}], got "
                    f"dtype {env_ids.dtype} shape {list(env_ids.shape)}"
                )
            return env_ids.to(device=self.device, dtype=torch.long)
        return resolve_env_ids(env_ids, self.num_envs).to(self.device)

    def _as_f32(self, value: torch.Tensor) -> torch.Tensor:
        return value.detach().to(device=self.device, dtype=torch.float32)

    def _repair_non_finite(self, ids: torch.Tensor):
        """Worlds among `ids` whose state went non-finite restart from the model's default state
        (props parked), so nothing of the blow-up survives the caller's new robot state."""
        qpos, qvel = self._qpos[ids], self._qvel[ids]
        broken = ~(torch.isfinite(qpos).all(dim=1) & torch.isfinite(qvel).all(dim=1))
        self._qpos[ids] = torch.where(broken[:, None], self._default_qpos, qpos)
        self._qvel[ids] = torch.where(broken[:, None], self._default_qvel, qvel)

    def _write_free_body(self, ids, columns, pos, rot, lin_vel, ang_vel):
        pos_cols, quat_cols, lin_cols, ang_cols = columns
        rows = ids[:, None]
        rot = self._as_f32(rot)
        self._qpos[rows, pos_cols] = self._as_f32(pos)
        self._qpos[rows, quat_cols] = rot
        self._qvel[rows, lin_cols] = self._as_f32(lin_vel)
        self._qvel[rows, ang_cols] = quat_rotate_inverse(rot, self._as_f32(ang_vel))

    def set_robot_state(self, env_ids, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos,
                        dof_vel, kinematics=None) -> None:
        ids = self._device_env_ids(env_ids)
        n, num_dofs = ids.numel(), self.robot.num_dofs
        root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel = check_robot_state_shapes(
            n, num_dofs, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel)
        if n == 0:
            return
        self._repair_non_finite(ids)
        self._write_free_body(ids, self._root_cols, root_pos, root_rot, root_lin_vel, root_ang_vel)
        self._qpos[ids[:, None], self._dof_pos_cols] = self._as_f32(dof_pos)
        self._qvel[ids[:, None], self._dof_vel_cols] = self._as_f32(dof_vel)
        self._sensordata[ids] = 0.0  # no contact has been solved for the new pose yet

        # New snapshot: the set values verbatim for `ids` (exact round trip), their bodies'
        # kinematics given or computed for these rows only.
        self._sim_state = sim_state_after_write(self.robot, self._sim_state, ids, root_pos, root_rot,
                                                root_lin_vel, root_ang_vel, dof_pos, dof_vel, kinematics)
        # Repaired worlds may have had their props reset too.
        self._prop_states = {name: self._read_prop(name) for name in self.prop_names}

    def set_prop_state(self, name, env_ids, pos, rot, lin_vel, ang_vel) -> None:
        self._check_prop_name(name)
        ids = self._device_env_ids(env_ids)
        n = ids.numel()
        pos, rot, lin_vel, ang_vel = check_prop_state_shapes(name, n, pos, rot, lin_vel, ang_vel)
        if n == 0:
            return
        self._write_free_body(ids, self._prop_cols[name], pos, rot, lin_vel, ang_vel)
        adr = self._prop_contact_adr[name]
        self._sensordata[ids, adr: adr + 4] = 0.0

        old = self._prop_states[name]

        def put(current, new):
            return current.index_copy(0, ids, self._as_f32(new))

        self._prop_states[name] = PropState(
            pos=put(old.pos, pos), rot=put(old.rot, rot), lin_vel=put(old.lin_vel, lin_vel),
            ang_vel=put(old.ang_vel, ang_vel),
            contact_force=old.contact_force.index_fill(0, ids, 0.0),
            in_contact=old.in_contact.index_fill(0, ids, False),
        )
