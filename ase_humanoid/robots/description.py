"""Humanoid description read from its MJCF: skeleton, DoF layout, PD gains and action mapping.

Everything numeric comes from the compiled `mujoco.MjModel`; the robot YAML (cfg/robot/<name>.yaml)
only names the file and the bodies that tasks care about (key, contact, reach bodies, termination
heights).

DoF layout: the root body has a free joint; every other body has 0 hinges (welded to its parent),
1 hinge, or 3 hinges about its own x, y, z axes in that order (a spherical joint, local rotation
Rx(a) Ry(b) Rz(c)). All hinges sit at their body's origin. Each hinge has one position actuator,
in hinge order.

PD control (see the humanoid MJCFs): torque = clip(kp (target - q), -effort, effort) - kd qdot.
kp and the effort limit come from the hinge's position actuator; kd is the hinge's joint damping
plus the actuator's own velocity gain (kv, zero in the shipped models). `pd_damping="drive"`
(the robot config's key, `robot.pd_damping`) moves kd into the actuator when the simulator's
scene is built (ase_humanoid.robots.scene), so that the clamp covers both terms as in the ASE
release's PD drive: torque = clip(kp (target - q) - kd qdot, -effort, effort).
`pd_damping="drive_implicit"` gives that law too, stable at the 1/120 s step: kd stays implicit
joint damping and an explicit +kd qdot outside the clamp cancels it where the clamp holds
(ase_humanoid.robots.scene.split_damping_across_clamp).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np
import torch
import yaml

from ase_humanoid.errors import ConfigError, ModelError
from ase_humanoid.paths import CFG_DIR, PROJECT_ROOT

ROBOT_CFG_DIR = CFG_DIR / "robot"

DEFAULT_TERMINATION_HEIGHT = 0.15


@dataclass
class RobotDescription:
    """Static description of a humanoid. Tensors are float32 on the CPU unless moved with `to`.

    Shapes: B bodies (0 = root), D hinge DoFs, J joint groups (bodies that have hinges).
    """

    name: str
    mjcf_path: Path
    body_names: list[str]  # [B] depth-first as in the MJCF
    parent_indices: torch.Tensor  # [B] long, -1 for the root
    local_translation: torch.Tensor  # [B, 3] body position in its parent frame (root: initial pos)
    body_masses: torch.Tensor  # [B]
    dof_names: list[str]  # [D] hinge names in qpos order
    dof_axes: torch.Tensor  # [D, 3] hinge axis in its body frame
    dof_body_ids: list[int]  # [J] body of each joint group
    dof_offsets: list[int]  # [J + 1] group j owns dofs dof_offsets[j]:dof_offsets[j + 1]
    dof_limits_lower: torch.Tensor  # [D] radians
    dof_limits_upper: torch.Tensor  # [D] radians
    kp: torch.Tensor  # [D] PD stiffness (N m / rad), position actuator gain
    kd: torch.Tensor  # [D] PD damping (N m s / rad), joint damping + actuator kv
    effort_limit: torch.Tensor  # [D] N m, actuator force limit on the kp term (inf if unlimited)
    armature: torch.Tensor  # [D]
    pd_action_offset: torch.Tensor  # [D]
    pd_action_scale: torch.Tensor  # [D]
    key_body_names: list[str]
    key_body_ids: list[int]
    contact_body_names: list[str]
    contact_body_ids: list[int]
    termination_heights: torch.Tensor  # [B] metres; a non-contact body below this ends an episode
    reach_body_name: str | None = None
    reach_body_id: int | None = None
    # the PD law, PD_DAMPING_MODES (module docstring): where the simulator applies kd
    pd_damping: str = "drive_implicit"
    # Index tensors derived from dof_offsets, for batched kinematics (see __post_init__).
    spherical_body_ids: torch.Tensor = field(init=False)  # [S] bodies with 3 hinges
    spherical_dof_ids: torch.Tensor = field(init=False)  # [S, 3] their x, y, z hinges
    hinge_body_ids: torch.Tensor = field(init=False)  # [H] bodies with 1 hinge
    hinge_dof_ids: torch.Tensor = field(init=False)  # [H]

    def __post_init__(self):
        sizes = np.diff(self.dof_offsets)
        spherical = [j for j, n in enumerate(sizes) if n == 3]
        hinges = [j for j, n in enumerate(sizes) if n == 1]
        device = self.local_translation.device
        self.spherical_body_ids = torch.tensor([self.dof_body_ids[j] for j in spherical], dtype=torch.long, device=device)
        self.spherical_dof_ids = torch.tensor(
            [[self.dof_offsets[j] + k for k in range(3)] for j in spherical], dtype=torch.long, device=device
        ).reshape(-1, 3)
        self.hinge_body_ids = torch.tensor([self.dof_body_ids[j] for j in hinges], dtype=torch.long, device=device)
        self.hinge_dof_ids = torch.tensor([self.dof_offsets[j] for j in hinges], dtype=torch.long, device=device)

    @property
    def num_bodies(self) -> int:
        return len(self.body_names)

    @property
    def num_dofs(self) -> int:
        return len(self.dof_names)

    @property
    def num_joints(self) -> int:
        return len(self.dof_body_ids)

    def body_id(self, name: str) -> int:
        """Index of a body by name; ModelError listing the valid names if there is none."""
        return _body_ids(self.body_names, [name], self.mjcf_path, "body")[0]

    def action_to_pd_target(self, actions: torch.Tensor) -> torch.Tensor:
        """Policy actions `[..., D]` in [-1, 1] (clipped) -> PD position targets `[..., D]` (radians)."""
        offset = self.pd_action_offset.to(device=actions.device, dtype=actions.dtype)
        scale = self.pd_action_scale.to(device=actions.device, dtype=actions.dtype)
        return offset + scale * actions.clamp(-1.0, 1.0)

    def to(self, device=None, dtype=None) -> "RobotDescription":
        """A copy with every tensor moved to `device`; floating tensors also cast to `dtype` if given."""
        moved = {}
        for f in dataclasses.fields(self):
            if not f.init:
                continue
            value = getattr(self, f.name)
            if isinstance(value, torch.Tensor):
                value = value.to(device=device, dtype=dtype if value.is_floating_point() and dtype else None)
            moved[f.name] = value
        return RobotDescription(**moved)


def robot_names() -> list[str]:
    """Names of the configured robots (cfg/robot/*.yaml)."""
    return sorted(p.stem for p in ROBOT_CFG_DIR.glob("*.yaml"))


def load_robot_config(name: str) -> dict:
    """The robot YAML `cfg/robot/<name>.yaml` as a dict."""
    path = ROBOT_CFG_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ModelError(f"no robot config {path}; known robots: {', '.join(robot_names())}")
    try:
        cfg = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ModelError(f"{path}: malformed YAML: {exc}") from exc
    if not isinstance(cfg, dict) or "mjcf" not in cfg:
        raise ModelError(f"{path}: expected a mapping with at least the key 'mjcf'")
    return cfg


PD_DAMPING_MODES = ("joint", "drive", "drive_implicit")
# The release's law, stable at 1/120 s: the default of both robot configs. A checkpoint saved
# without the key was trained under "joint" (builders.saved_pd_damping).
DEFAULT_PD_DAMPING = "drive_implicit"


def load_robot(name_or_path, key_bodies=None, contact_bodies=None, pd_damping=None) -> RobotDescription:
    """Read a humanoid description from a named robot config or an MJCF path.

    `name_or_path`: a robot name (`amp_humanoid`, `sword_shield`, see `robot_names()`), or a path
    to an MJCF file (key/contact bodies then default to none). `key_bodies` / `contact_bodies`
    override the configured lists; `pd_damping` (PD_DAMPING_MODES; None: the robot config's, else
    DEFAULT_PD_DAMPING) says where the simulator applies kd. Raises ModelError for a missing or malformed file, an
    unsupported joint layout, or body names that are not in the model.
    """
    name_or_path = str(name_or_path)
    if name_or_path in robot_names():
        cfg = load_robot_config(name_or_path)
        name = cfg.get("name", name_or_path)
        mjcf_path = Path(cfg["mjcf"])
        if not mjcf_path.is_absolute():
            mjcf_path = PROJECT_ROOT / mjcf_path
    else:
        cfg = {}
        mjcf_path = Path(name_or_path)
        name = mjcf_path.stem
        if mjcf_path.suffix.lower() != ".xml" and not mjcf_path.exists():
            raise ModelError(
                f"'{name_or_path}' is neither a known robot ({', '.join(robot_names())}) nor an MJCF file"
            )
    pd_damping = pd_damping or cfg.get("pd_damping", DEFAULT_PD_DAMPING)
    if pd_damping not in PD_DAMPING_MODES:
        raise ConfigError(f"config key 'robot.pd_damping': '{pd_damping}' is not one of {', '.join(PD_DAMPING_MODES)}")
    model = load_mjcf(mjcf_path)
    robot = describe_model(
        model,
        name=name,
        mjcf_path=mjcf_path,
        key_bodies=cfg.get("key_bodies", []) if key_bodies is None else key_bodies,
        contact_bodies=cfg.get("contact_bodies", []) if contact_bodies is None else contact_bodies,
        termination_height=float(cfg.get("termination_height", DEFAULT_TERMINATION_HEIGHT)),
        termination_heights=cfg.get("termination_heights") or {},
        reach_body=cfg.get("reach_body"),
    )
    robot.pd_damping = pd_damping
    return robot


def load_mjcf(path) -> mujoco.MjModel:
    """Compile an MJCF file; ModelError naming the file if it is missing or MuJoCo rejects it."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"MJCF file not found: {path}")
    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except ValueError as exc:
        raise ModelError(f"{path}: MuJoCo could not load the MJCF: {exc}") from exc


def describe_model(
    model: mujoco.MjModel,
    name: str,
    mjcf_path: Path,
    key_bodies=(),
    contact_bodies=(),
    termination_height: float = DEFAULT_TERMINATION_HEIGHT,
    termination_heights: dict | None = None,
    reach_body: str | None = None,
) -> RobotDescription:
    """Build a RobotDescription from a compiled humanoid-only model (no floor bodies or props)."""
    _check_root(model, mjcf_path)
    # MuJoCo body 0 is the world; the humanoid's bodies are 1..nbody-1.
    body_names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(1, model.nbody)]
    parents = [int(model.body_parentid[b]) - 1 for b in range(1, model.nbody)]
    _check_body_frames(model, body_names, mjcf_path)

    dof_names, dof_body_ids, dof_offsets, hinge_jnt_ids = _dof_layout(model, body_names, mjcf_path)
    kp, kd, effort = _pd_gains(model, hinge_jnt_ids, dof_names, mjcf_path)
    dof_adr = model.jnt_dofadr[hinge_jnt_ids]
    lower = model.jnt_range[hinge_jnt_ids, 0].copy()
    upper = model.jnt_range[hinge_jnt_ids, 1].copy()
    offset, scale = pd_action_mapping(lower, upper, dof_offsets)

    key_ids = _body_ids(body_names, list(key_bodies), mjcf_path, "key body")
    contact_ids = _body_ids(body_names, list(contact_bodies), mjcf_path, "contact body")
    reach_id = _body_ids(body_names, [reach_body], mjcf_path, "reach body")[0] if reach_body else None
    heights = np.full(len(body_names), termination_height)
    for body, height in (termination_heights or {}).items():
        heights[_body_ids(body_names, [body], mjcf_path, "termination-height body")[0]] = float(height)

    local_translation = model.body_pos[1:].copy()
    f32 = lambda x: torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=torch.float32)  # noqa: E731
    return RobotDescription(
        name=name,
        mjcf_path=Path(mjcf_path),
        body_names=body_names,
        parent_indices=torch.tensor(parents, dtype=torch.long),
        local_translation=f32(local_translation),
        body_masses=f32(model.body_mass[1:]),
        dof_names=dof_names,
        dof_axes=f32(model.jnt_axis[hinge_jnt_ids]),
        dof_body_ids=dof_body_ids,
        dof_offsets=dof_offsets,
        dof_limits_lower=f32(lower),
        dof_limits_upper=f32(upper),
        kp=f32(kp),
        kd=f32(kd),
        effort_limit=f32(effort),
        armature=f32(model.dof_armature[dof_adr]),
        pd_action_offset=f32(offset),
        pd_action_scale=f32(scale),
        key_body_names=list(key_bodies),
        key_body_ids=key_ids,
        contact_body_names=list(contact_bodies),
        contact_body_ids=contact_ids,
        termination_heights=f32(heights),
        reach_body_name=reach_body,
        reach_body_id=reach_id,
    )


def pd_action_mapping(lower: np.ndarray, upper: np.ndarray, dof_offsets: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """ASE's action -> PD target mapping per DoF: target = offset + scale * action.

    Spherical (3-hinge) joint: offset 0, scale min(1.2 * max |limit| over its hinges, pi).
    Single hinge: offset at the middle of the range, scale 0.7 * (upper - lower), i.e. actions
    of +-1 reach 20% beyond each limit.
    """
    offset = np.zeros(len(lower))
    scale = np.zeros(len(lower))
    for start, end in zip(dof_offsets[:-1], dof_offsets[1:]):
        if end - start == 3:
            reach = 1.2 * max(np.abs(lower[start:end]).max(), np.abs(upper[start:end]).max())
            scale[start:end] = min(reach, math.pi)
        else:
            offset[start] = 0.5 * (lower[start] + upper[start])
            scale[start] = 0.7 * (upper[start] - lower[start])
    return offset, scale


def _check_root(model: mujoco.MjModel, path) -> None:
    if model.nbody < 2 or model.body_jntnum[1] != 1 or model.jnt_type[model.body_jntadr[1]] != mujoco.mjtJoint.mjJNT_FREE:
        raise ModelError(f"{path}: the first body must be the humanoid root with exactly one free joint")
    roots = [b for b in range(1, model.nbody) if model.body_parentid[b] == 0]
    if roots != [1]:
        names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in roots]
        raise ModelError(f"{path}: expected one humanoid tree under the world, found roots {names}")


def _check_body_frames(model: mujoco.MjModel, body_names: list[str], path) -> None:
    # Kinematics composes parent frames with translations only: rest orientations must be identity.
    for b, name in enumerate(body_names, start=1):
        if not np.allclose(model.body_quat[b], [1, 0, 0, 0], atol=1e-9):
            raise ModelError(f"{path}: body '{name}' has a rotated frame (quat {model.body_quat[b]}); "
                             "only identity body orientations are supported")


def _dof_layout(model: mujoco.MjModel, body_names: list[str], path):
    """Hinge names, joint-group bodies and offsets, and MuJoCo joint ids of the hinges in qpos order."""
    dof_names, dof_body_ids, dof_offsets, jnt_ids = [], [], [0], []
    unit = np.eye(3)
    for b in range(2, model.nbody):
        name = body_names[b - 1]
        jnts = list(range(model.body_jntadr[b], model.body_jntadr[b] + model.body_jntnum[b]))
        if not jnts:
            continue
        non_hinge = [j for j in jnts if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE]
        if non_hinge:
            jname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, non_hinge[0])
            raise ModelError(f"{path}: joint '{jname}' of body '{name}' is not a hinge; "
                             "only the root may have a non-hinge (free) joint")
        if len(jnts) not in (1, 3):
            raise ModelError(f"{path}: body '{name}' has {len(jnts)} hinges; expected 1 or 3 (x, y, z)")
        for k, j in enumerate(jnts):
            jname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if not np.allclose(model.jnt_pos[j], 0.0, atol=1e-9):
                raise ModelError(f"{path}: hinge '{jname}' is not at the origin of body '{name}'")
            if len(jnts) == 3 and not np.allclose(model.jnt_axis[j], unit[k], atol=1e-9):
                raise ModelError(f"{path}: body '{name}' has 3 hinges; they must be about x, y, z in that "
                                 f"order, but '{jname}' has axis {model.jnt_axis[j]}")
            if not model.jnt_limited[j]:
                raise ModelError(f"{path}: hinge '{jname}' has no range; every hinge needs joint limits")
            dof_names.append(jname)
            jnt_ids.append(j)
        dof_body_ids.append(b - 1)
        dof_offsets.append(len(dof_names))
    return dof_names, dof_body_ids, dof_offsets, np.array(jnt_ids, dtype=np.int64)


def _pd_gains(model: mujoco.MjModel, hinge_jnt_ids: np.ndarray, dof_names: list[str], path):
    """kp, kd and effort limit per hinge: kp and effort from its position actuator (actuators in
    hinge order), kd = joint damping + actuator velocity gain."""
    if model.nu != len(hinge_jnt_ids):
        raise ModelError(f"{path}: {model.nu} actuators for {len(hinge_jnt_ids)} hinges; expected one per hinge")
    kp, kd, effort = np.zeros(model.nu), np.zeros(model.nu), np.zeros(model.nu)
    for a in range(model.nu):
        jnt = model.actuator_trnid[a, 0]
        if model.actuator_trntype[a] != mujoco.mjtTrn.mjTRN_JOINT or jnt != hinge_jnt_ids[a]:
            aname = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a)
            raise ModelError(f"{path}: actuator {a} ('{aname}') must drive hinge '{dof_names[a]}' "
                             "(one actuator per hinge, in hinge order)")
        is_position = (
            model.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_FIXED
            and model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_AFFINE
            and np.isclose(model.actuator_biasprm[a, 1], -model.actuator_gainprm[a, 0])
        )
        if not is_position:
            raise ModelError(f"{path}: actuator for hinge '{dof_names[a]}' is not a position (PD) actuator")
        kp[a] = model.actuator_gainprm[a, 0]
        kd[a] = model.dof_damping[model.jnt_dofadr[jnt]] - model.actuator_biasprm[a, 2]
        limited = model.actuator_forcelimited[a]
        effort[a] = max(abs(model.actuator_forcerange[a, 0]), abs(model.actuator_forcerange[a, 1])) if limited else np.inf
    return kp, kd, effort


def _body_ids(body_names: list[str], wanted: list[str], path, role: str) -> list[int]:
    missing = [n for n in wanted if n not in body_names]
    if missing:
        raise ModelError(f"{path}: {role} '{missing[0]}' is not in the model; valid bodies: {', '.join(body_names)}")
    return [body_names.index(n) for n in wanted]
