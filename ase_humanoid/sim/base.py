"""The simulator interface every physics backend implements: batched tensors in, batched tensors out.

A backend simulates `num_envs` independent worlds of one MuJoCo model: a floor, one humanoid
(a `RobotDescription`) and optional extra free bodies (`PropSpec`: strike targets, projectiles).
All state crosses this interface as torch tensors on the backend's `device`, leading dimension
`num_envs` (or `n` for a subset), quaternions x, y, z, w, angular velocities in the world frame.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np
import torch

from ase_humanoid.errors import ConfigError

PHYSICS_DT = 1.0 / 120.0
"""Physics step in seconds (120 Hz, as in ASE); the env steps the backend 4 substeps per action."""

PROP_SHAPES = {"box": 3, "sphere": 1, "capsule": 2}
"""Prop geom types and how many `size` numbers each takes (MuJoCo geom size convention)."""


@dataclass(frozen=True)
class PropSpec:
    """An extra free body present in every world (strike target, projectile).

    `size` follows MuJoCo's geom convention: box half-extents (3), sphere radius (1), capsule
    radius and half-length (2). The ASE strike target (0.4 x 0.4 x 1.8 m, density 30) is
    `PropSpec("target", "box", (0.2, 0.2, 0.9), 30.0)`. `contype`/`conaffinity` are MuJoCo
    collision bits (both 1: collides with the floor, the humanoid and the other props).
    """

    name: str
    shape: str
    size: tuple
    density: float
    rgba: tuple = (0.9, 0.4, 0.2, 1.0)
    contype: int = 1
    conaffinity: int = 1

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str):
            raise ConfigError(f"PropSpec.name must be a non-empty string, got {self.name!r}")
        if self.shape not in PROP_SHAPES:
            raise ConfigError(
                f"PropSpec {self.name!r}: shape {self.shape!r} is not one of {sorted(PROP_SHAPES)}"
            )
        size = tuple(float(s) for s in self.size)
        if len(size) != PROP_SHAPES[self.shape] or min(size) <= 0.0:
            raise ConfigError(
                f"PropSpec {self.name!r}: a {self.shape} takes {PROP_SHAPES[self.shape]} positive "
                f"size numbers, got {self.size!r}"
            )
        if not self.density > 0.0:
            raise ConfigError(f"PropSpec {self.name!r}: density must be > 0, got {self.density!r}")
        if len(self.rgba) != 4:
            raise ConfigError(f"PropSpec {self.name!r}: rgba must have 4 numbers, got {self.rgba!r}")
        object.__setattr__(self, "size", size)


@dataclass
class SimState:
    """The humanoid's state in every world, on the backend's device.

    Body quantities are at each body's origin, world frame, bodies in `robot.body_names` order.
    `contact_forces` is the net contact force acting on each body (all contacts: floor, props and
    other humanoid bodies), world frame; the CPU backend reports it from the last substep's
    constraint solve.
    """

    root_pos: torch.Tensor  # [N, 3]
    root_rot: torch.Tensor  # [N, 4] xyzw
    root_lin_vel: torch.Tensor  # [N, 3] world frame
    root_ang_vel: torch.Tensor  # [N, 3] world frame
    dof_pos: torch.Tensor  # [N, D] hinge angles (radians)
    dof_vel: torch.Tensor  # [N, D] hinge rates (rad/s)
    body_pos: torch.Tensor  # [N, B, 3]
    body_rot: torch.Tensor  # [N, B, 4] xyzw
    body_lin_vel: torch.Tensor  # [N, B, 3]
    body_ang_vel: torch.Tensor  # [N, B, 3]
    contact_forces: torch.Tensor  # [N, B, 3]
    # Local rotation of each joint group (robot.dof_body_ids order) and joint velocities (see
    # `robots.kinematics.joint_vel_from_dof_vel`): by-products of the body kinematics the AMP
    # observation needs.
    joint_rot: torch.Tensor  # [N, J, 4] xyzw
    joint_vel: torch.Tensor  # [N, D]


@dataclass
class PropState:
    """One prop's state in every world, on the backend's device (world frame, xyzw)."""

    pos: torch.Tensor  # [N, 3]
    rot: torch.Tensor  # [N, 4] xyzw
    lin_vel: torch.Tensor  # [N, 3]
    ang_vel: torch.Tensor  # [N, 3] world frame
    contact_force: torch.Tensor  # [N, 3] net contact force acting on the prop
    in_contact: torch.Tensor  # [N] bool: the prop touches anything (floor, humanoid, props)


class SimBackend(abc.ABC):
    """Batched simulation of `num_envs` worlds of one humanoid scene.

    Attributes: `robot` (RobotDescription), `num_envs`, `device`, `physics_dt` (1/120 s),
    `mj_model` (the combined MuJoCo model of one world: floor + humanoid + props),
    `prop_names` (list of prop names, in PropSpec order).
    """

    robot: object
    num_envs: int
    device: torch.device
    physics_dt: float
    mj_model: object
    prop_names: list

    @abc.abstractmethod
    def set_robot_state(
        self,
        env_ids,
        root_pos: torch.Tensor,
        root_rot: torch.Tensor,
        root_lin_vel: torch.Tensor,
        root_ang_vel: torch.Tensor,
        dof_pos: torch.Tensor,
        dof_vel: torch.Tensor,
        kinematics=None,
    ) -> None:
        """Teleport the humanoid of worlds `env_ids` (LongTensor [n] or bool mask [N]).

        Shapes: root_pos [n,3], root_rot [n,4] xyzw, root_lin_vel [n,3], root_ang_vel [n,3]
        (world frame), dof_pos [n,D], dof_vel [n,D]. Afterwards `state` returns exactly these
        values for those worlds (body states recomputed from them); solver warm starts of those
        worlds are cleared, and a world whose state had become non-finite is fully repaired.

        `kinematics`: optionally the `ArticulationState` of exactly these states, as
        `robots.kinematics.articulation_state` computes it (reset plans make it in batches
        ahead of time); the backend then uses it instead of recomputing the body states.
        """

    @abc.abstractmethod
    def set_prop_state(self, name: str, env_ids, pos, rot, lin_vel, ang_vel) -> None:
        """Teleport prop `name` in worlds `env_ids`: pos [n,3], rot [n,4] xyzw, lin_vel [n,3],
        ang_vel [n,3] (world frame)."""

    @abc.abstractmethod
    def set_pd_targets(self, targets: torch.Tensor) -> None:
        """PD position targets `[N, D]` (radians) for every world; held until set again."""

    @abc.abstractmethod
    def step(self, substeps: int = 1) -> None:
        """Advance every world `substeps` physics steps; refreshes `state` and prop states."""

    # Backends keep their latest read-back in these two attributes.
    _sim_state: SimState
    _prop_states: dict

    @property
    def state(self) -> SimState:
        """Snapshot of the humanoid state of every world; `step`/`set_*` replace it with new
        tensors and never overwrite ones already handed out."""
        return self._sim_state

    def prop_state(self, name: str) -> PropState:
        """Current state of prop `name` in every world."""
        self._check_prop_name(name)
        return self._prop_states[name]

    def _check_prop_name(self, name: str) -> None:
        if name not in self.prop_names:
            raise KeyError(f"unknown prop {name!r}; valid props: {self.prop_names}")

    def _check_env_id(self, env_id) -> int:
        env_id = int(env_id)
        if not 0 <= env_id < self.num_envs:
            raise ValueError(f"env_id must lie in [0, {self.num_envs}), got {env_id}")
        return env_id

    @abc.abstractmethod
    def qpos_for_render(self, env_id: int) -> np.ndarray:
        """MuJoCo qpos `[nq]` (quaternions w, x, y, z) of world `env_id`, for viewers and video."""

    def state_dict(self) -> dict:
        """Everything needed to continue bitwise where the simulation stands (checkpoints):
        every world's physics state, the PD targets and the last contact sensor data."""
        raise NotImplementedError(f"{type(self).__name__} cannot checkpoint its state")

    def load_state_dict(self, state: dict) -> None:
        """Restore what `state_dict` returned (same model and number of worlds)."""
        raise NotImplementedError(f"{type(self).__name__} cannot restore a checkpointed state")

    def close(self) -> None:
        """Release native resources (thread pools); the backend is unusable afterwards."""


# ---- helpers shared by backends: argument checking at the interface boundary -----------------


def check_robot_state_shapes(n: int, num_dofs: int, root_pos, root_rot, root_lin_vel, root_ang_vel,
                             dof_pos, dof_vel) -> tuple[torch.Tensor, ...]:
    """`set_robot_state` arguments checked against their shapes for `n` worlds."""
    return (check_shape("root_pos", root_pos, (n, 3)), check_shape("root_rot", root_rot, (n, 4)),
            check_shape("root_lin_vel", root_lin_vel, (n, 3)), check_shape("root_ang_vel", root_ang_vel, (n, 3)),
            check_shape("dof_pos", dof_pos, (n, num_dofs)), check_shape("dof_vel", dof_vel, (n, num_dofs)))


def check_prop_state_shapes(name: str, n: int, pos, rot, lin_vel, ang_vel) -> tuple[torch.Tensor, ...]:
    """`set_prop_state` arguments checked against their shapes for `n` worlds."""
    return (check_shape(f"{name} pos", pos, (n, 3)), check_shape(f"{name} rot", rot, (n, 4)),
            check_shape(f"{name} lin_vel", lin_vel, (n, 3)), check_shape(f"{name} ang_vel", ang_vel, (n, 3)))


def prop_state_after_write(old: PropState, ids: torch.Tensor, pos, rot, lin_vel, ang_vel) -> PropState:
    """A new PropState snapshot: `old` with rows `ids` (a long tensor on old's device) replaced by
    the written state and no contact (none has been solved for the new pose yet)."""

    def put(current, new):
        return current.index_copy(0, ids, new.detach().to(current.device, current.dtype))

    return PropState(
        pos=put(old.pos, pos), rot=put(old.rot, rot), lin_vel=put(old.lin_vel, lin_vel),
        ang_vel=put(old.ang_vel, ang_vel),
        contact_force=old.contact_force.index_fill(0, ids, 0.0),
        in_contact=old.in_contact.index_fill(0, ids, False),
    )


def make_sim_state(robot, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel,
                   contact_forces) -> SimState:
    """SimState with body states computed from the root and DoF state by the robot's kinematics,
    so every backend reports bodies exactly consistent with its joint state."""
    from ase_humanoid.robots.kinematics import articulation_state

    kinematics = articulation_state(robot, root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel)
    return SimState(root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel,
                    *kinematics.bodies(), contact_forces=contact_forces, joint_rot=kinematics.joint_rot,
                    joint_vel=kinematics.joint_vel)


def sim_state_after_write(robot, old: SimState, ids: torch.Tensor, root_pos, root_rot, root_lin_vel,
                          root_ang_vel, dof_pos, dof_vel, kinematics=None) -> SimState:
    """A new SimState snapshot: `old` with rows `ids` (a long tensor on old's device) holding the
    written humanoid states verbatim (exact round trip), their kinematics (`kinematics` when
    given, else computed for these rows only) and no contact (none solved for the new pose yet)."""
    from ase_humanoid.robots.kinematics import articulation_state

    new_root = [x.detach().to(old.root_pos.device, old.root_pos.dtype)
                for x in (root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel)]
    if kinematics is None:
        kinematics = articulation_state(robot, *new_root)
    olds = (old.root_pos, old.root_rot, old.root_lin_vel, old.root_ang_vel, old.dof_pos, old.dof_vel,
            old.body_pos, old.body_rot, old.body_lin_vel, old.body_ang_vel, old.joint_rot, old.joint_vel)
    news = (*new_root, *kinematics.bodies(), kinematics.joint_rot, kinematics.joint_vel)
    (root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel, body_pos, body_rot, body_lin_vel,
     body_ang_vel, joint_rot, joint_vel) = (current.index_copy(0, ids, new.to(current.device, current.dtype))
                                            for current, new in zip(olds, news))
    return SimState(root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel, body_pos, body_rot,
                    body_lin_vel, body_ang_vel, contact_forces=old.contact_forces.index_fill(0, ids, 0.0),
                    joint_rot=joint_rot, joint_vel=joint_vel)


def resolve_env_ids(env_ids, num_envs: int) -> torch.Tensor:
    """Turn env ids (LongTensor/sequence [n] or bool mask [num_envs]) into a CPU LongTensor [n]."""
    ids = torch.as_tensor(env_ids)
    if ids.dtype == torch.bool:
        if ids.shape != (num_envs,):
            raise ValueError(
                f"env_ids bool mask must have shape [{num_envs}], got {list(ids.shape)}"
            )
        return ids.detach().cpu().nonzero().flatten()
    if ids.dtype.is_floating_point or ids.dim() != 1:
        raise ValueError(
            f"env_ids must be a 1-D integer tensor or a bool mask [{num_envs}], got dtype "
            f"{ids.dtype} shape {list(ids.shape)}"
        )
    ids = ids.detach().cpu().long()
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= num_envs):
        raise ValueError(f"env_ids must lie in [0, {num_envs}), got {ids.tolist()}")
    return ids


def check_shape(name: str, value: torch.Tensor, expected: tuple) -> torch.Tensor:
    """Raise a ValueError naming `name` unless `value` is a tensor/array of shape `expected`."""
    tensor = torch.as_tensor(value)
    if tuple(tensor.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {list(expected)}, got {list(tensor.shape)}")
    return tensor
