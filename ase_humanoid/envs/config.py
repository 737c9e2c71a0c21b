"""Environment settings as dataclasses with defaults, validated on construction.

`HumanoidEnvConfig` holds what every humanoid env understands (the AMP env uses exactly these);
`HumanoidASEConfig` adds the getup pre-training settings, `HumanoidPerturbConfig` the projectile
schedule, `HumanoidViewMotionConfig` nothing new. `env_config_from_dict(cls, mapping)` builds one
from a plain mapping (keyword arguments of `make_env`, a Hydra node) and raises `ConfigError`
naming an unknown key (with the valid ones) or a value of the wrong type or range.

Timing follows ASE: physics at 120 Hz, control at 30 Hz (`control_substeps` = 4), episodes of
300 control steps.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, TypeVar

from ase_humanoid.errors import ConfigError
from ase_humanoid.terrain.config import terrain_config
from ase_humanoid.utils.typed_config import check_finite_floats, config_from_mapping

STATE_INIT_CHOICES = ("Default", "Start", "Random", "Hybrid")
SIM_CHOICES = ("mujoco", "mujoco_warp", "isaacgym")
POLICY_ROOT_ROTATIONS = ("heading_free", "world")  # envs/observations.py policy_observation

C = TypeVar("C", bound="HumanoidEnvConfig")


@dataclass
class HumanoidEnvConfig:
    """Settings of the base humanoid / AMP environment."""

    num_envs: int = 16
    robot: str = "amp_humanoid"  # amp_humanoid | sword_shield | path to an MJCF
    # a clip (.npy) or a dataset YAML; needed for reference-state init and demo AMP observations
    motion_file: str | None = None
    sim: str = "mujoco"  # mujoco | mujoco_warp
    # where the PD damping acts: joint (outside the effort clamp) | drive (inside it, as the
    # release's PD drive); None: the robot config's (cfg/robot/<name>.yaml: drive_implicit)
    pd_damping: str | None = None
    device: str = "cpu"
    num_threads: int | None = None  # CPU backend threads; None = os.cpu_count()
    # Default (standing), Start (clip start), Random (random clip time), Hybrid (Random / Default)
    state_init: str = "Random"
    hybrid_init_prob: float = 0.5  # Hybrid: probability of a reference-state (Random) init
    enable_early_termination: bool = True
    # None: the robot's heights (cfg/robot/<name>.yaml: 0.15 m, head 0.3 m); a number overrides
    # the default height of every body except those the robot config lists separately
    termination_height: float | None = None
    max_episode_length: int = 300  # control steps
    control_substeps: int = 4  # physics steps per control step (120 Hz / 30 Hz)
    num_amp_obs_steps: int = 10  # AMP observation history length
    # AMP observation: True removes the heading from the root's rotation (as the release's
    # localRootObs: True does there); False keeps the world rotation
    local_root_obs: bool = True
    # Policy observation: heading_free removes the heading from the root's rotation like from
    # every other body (turning in place changes nothing); world keeps it, which is what the
    # release's localRootObs: True puts there (policy_root_rotation=world reproduces the release)
    policy_root_rotation: str = "heading_free"
    key_bodies: list[str] | None = None  # None: the robot config's key bodies
    contact_bodies: list[str] | None = None  # None: the robot config's contact bodies (feet)
    seed: int | None = None  # None draws from torch's global generator
    # Reference-state resets at random times are drawn this many at a time, ahead of use (the
    # same distribution at a fraction of the per-step cost, see envs/reset_pool.py); 0 draws
    # each one when it is needed
    reset_pool_size: int = 1024
    # The ground: None or {name: flat} is MuJoCo's plane; else the keys of
    # ase_humanoid/terrain/config.py TerrainConfig (cfg/terrain/*.yaml, `terrain=rough|mixed|mesh`)
    terrain: dict[str, Any] | None = None
    # Height-scan observation (appended after the humanoid's, before the task's): root height
    # above the ground at a grid of height_scan_size [along heading, across] points
    # height_scan_spacing metres apart, centred on the root, in the heading frame
    height_scan: bool = False
    height_scan_size: list[int] = dataclasses.field(default_factory=lambda: [11, 11])
    height_scan_spacing: float = 0.1

    def validate(self) -> None:
        """Raise ConfigError naming the first invalid field."""
        check_finite_floats(self, "env")
        if self.terrain is not None:
            terrain_config(self.terrain)  # names a bad terrain key now rather than at build time
        _check(len(self.height_scan_size) == 2 and all(k >= 1 for k in self.height_scan_size),
               "height_scan_size", f"must be two counts >= 1, got {self.height_scan_size}")
        _check(self.height_scan_spacing > 0, "height_scan_spacing", f"must be > 0, got {self.height_scan_spacing}")
        _check(self.termination_height is None or self.termination_height >= 0.0, "termination_height",
               f"must be >= 0 m or null, got {self.termination_height}")
        _check(self.num_envs > 0, "num_envs", f"must be > 0, got {self.num_envs}")
        _check(self.sim in SIM_CHOICES, "sim", f"{self.sim!r} is not one of {list(SIM_CHOICES)}")
        _check(self.policy_root_rotation in POLICY_ROOT_ROTATIONS, "policy_root_rotation",
               f"{self.policy_root_rotation!r} is not one of {list(POLICY_ROOT_ROTATIONS)}")
        _check(self.state_init in STATE_INIT_CHOICES, "state_init",
               f"{self.state_init!r} is not one of {list(STATE_INIT_CHOICES)}")
        _check(0.0 <= self.hybrid_init_prob <= 1.0, "hybrid_init_prob",
               f"must be in [0, 1], got {self.hybrid_init_prob}")
        _check(self.max_episode_length > 1, "max_episode_length",
               f"must be > 1, got {self.max_episode_length}")
        _check(self.control_substeps > 0, "control_substeps", f"must be > 0, got {self.control_substeps}")
        _check(self.num_amp_obs_steps >= 2, "num_amp_obs_steps",
               f"must be >= 2 (AMP compares consecutive frames), got {self.num_amp_obs_steps}")
        _check(self.reset_pool_size >= 0, "reset_pool_size", f"must be >= 0, got {self.reset_pool_size}")
        _check(self.num_threads is None or self.num_threads > 0, "num_threads",
               f"must be > 0 or null, got {self.num_threads}")
        if self.state_init != "Default":
            _check(self.motion_file is not None, "motion_file",
                   f"is required for state_init={self.state_init!r} (reference-state init)")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PHASE_KEYS = ("fall_init_prob", "recovery_episode_prob", "recovery_steps", "getup_reward", "getup_reward_power")
"""HumanoidASE settings a `phases` entry may change: read at every reset or reward."""


@dataclass
class HumanoidASEConfig(HumanoidEnvConfig):
    """ASE low-level-controller pre-training with getup: fall-state pool and recovery episodes."""

    state_init: str = "Hybrid"
    recovery_episode_prob: float = 0.2  # a terminated env continues from its fallen state
    recovery_steps: int = 60  # early termination and time-outs are suppressed this long in a recovery episode
    fall_init_prob: float = 0.1  # a reset starts from a state of the fall pool
    fall_pool_size: int | None = None  # None: max(num_envs, 64)
    fall_steps: int = 75  # control steps (2.5 s) simulated to make the fall pool, as the release
    # Not in the release (docs/research-notes.md, "Getup without getup clips"): during a getup episode's
    # grace period the env's reward is the head's height as a share of its standing height, in
    # [0, 1]; the agent weighs it with train.params.task_reward_w (0 in cfg/train/ase.yaml).
    getup_reward: bool = False
    # The share raised to this power: above 1 the last stretch (kneeling to standing) pays more
    # of the reward, below 1 the first (off the floor).
    getup_reward_power: float = 1.0
    # Not in the release: settings that change during training, each entry {from_epoch: N,
    # key: value, ...} with keys of PHASE_KEYS, in effect once N epochs are done (later entries
    # on top of earlier ones), so one run can pre-train as the release does and then learn to
    # get up (docs/research-notes.md). Empty: the settings above throughout.
    phases: list[dict] = dataclasses.field(default_factory=list)

    def validate(self) -> None:
        super().validate()
        for name in ("recovery_episode_prob", "fall_init_prob"):
            value = getattr(self, name)
            _check(0.0 <= value <= 1.0, name, f"must be in [0, 1], got {value}")
        _check(self.recovery_steps >= 0, "recovery_steps", f"must be >= 0, got {self.recovery_steps}")
        _check(self.fall_pool_size is None or self.fall_pool_size > 0, "fall_pool_size",
               f"must be > 0 or null, got {self.fall_pool_size}")
        _check(self.fall_steps > 0, "fall_steps", f"must be > 0, got {self.fall_steps}")
        _check(self.getup_reward_power > 0, "getup_reward_power", f"must be > 0, got {self.getup_reward_power}")
        self.phase_configs()  # checks every phase

    def phase_configs(self) -> list[tuple[int, HumanoidASEConfig]]:
        """(from_epoch, the settings in effect from then on) for each entry of `phases`, each
        validated; a ConfigError names the entry and what is wrong with it."""
        result, settings, last_start = [], {}, -1
        for index, phase in enumerate(self.phases, start=1):
            where = f"phases entry {index}"
            _check(isinstance(phase, Mapping), "phases", f"{where} must be a mapping, got {phase!r}")
            start = phase.get("from_epoch")
            _check(isinstance(start, int) and not isinstance(start, bool) and start > last_start, "phases",
                   f"{where} needs from_epoch, an integer >= 0 above the previous entry's, got {start!r}")
            unknown = sorted(set(phase) - {"from_epoch", *PHASE_KEYS})
            _check(not unknown, "phases", f"{where}: {unknown} cannot change during training; "
                                         f"valid keys: from_epoch, {', '.join(PHASE_KEYS)}")
            settings.update({key: value for key, value in phase.items() if key != "from_epoch"})
            values = {**self.to_dict(), **settings, "phases": []}
            try:
                phase_config = env_config_from_dict(type(self), values)
            except ConfigError as err:
                raise ConfigError(f"env config key 'phases', entry {index} (from_epoch {start}): {err}") from None
            result.append((start, phase_config))
            last_start = start
        return result


PROJECTILE_KINDS = ("small", "large")
# The ASE release's schedule: control steps between launches (the first after the episode start)
RELEASE_PROJECTILE_INTERVALS = [60, 7, 10, 35, 2, 2, 3, 2, 2, 3, 2, 60, 300]
RELEASE_PROJECTILE_KINDS = ["small"] * 11 + ["large", "small"]


@dataclass
class HumanoidPerturbConfig(HumanoidEnvConfig):
    """Projectiles thrown at a (trained) controller on the ASE release's schedule; no early
    termination (envs/humanoid_perturb.py)."""

    state_init: str = "Default"
    enable_early_termination: bool = False
    # one projectile body per entry; launched projectile_intervals[k] steps after projectile k - 1
    projectile_kinds: list[str] = dataclasses.field(default_factory=lambda: list(RELEASE_PROJECTILE_KINDS))
    projectile_intervals: list[int] = dataclasses.field(default_factory=lambda: list(RELEASE_PROJECTILE_INTERVALS))
    small_projectile_size: float = 0.2  # cube edge, m
    small_projectile_density: float = 200.0  # kg/m^3: 1.6 kg
    large_projectile_size: float = 0.5
    large_projectile_density: float = 100.0  # 12.5 kg
    throw_distance_min: float = 4.0  # metres from the root, on the ground plane
    throw_distance_max: float = 5.0
    throw_height_min: float = 0.25  # launch height above the floor, m
    throw_height_max: float = 2.0
    throw_speed_min: float = 30.0  # m/s
    throw_speed_max: float = 40.0
    aim_noise: float = 0.1  # std of the Gaussian noise added to the direction to the torso
    flight_steps: int = 30  # control steps a launched projectile stays in the scene before parking

    def validate(self) -> None:
        super().validate()
        kinds, intervals = list(self.projectile_kinds), list(self.projectile_intervals)
        _check(len(kinds) > 0 and all(k in PROJECTILE_KINDS for k in kinds), "projectile_kinds",
               f"must be a non-empty list of {list(PROJECTILE_KINDS)}, got {kinds}")
        _check(len(intervals) == len(kinds) and all(i > 0 for i in intervals), "projectile_intervals",
               f"need one interval > 0 per projectile_kinds entry ({len(kinds)}), got {intervals}")
        for name in ("small_projectile_size", "small_projectile_density", "large_projectile_size",
                     "large_projectile_density"):
            _check(getattr(self, name) > 0, name, f"must be > 0, got {getattr(self, name)}")
        _check(0.5 < self.throw_distance_min <= self.throw_distance_max, "throw_distance_min",
               f"need 0.5 < throw_distance_min <= throw_distance_max, got "
               f"{self.throw_distance_min}, {self.throw_distance_max}")
        _check(0.0 < self.throw_height_min <= self.throw_height_max, "throw_height_min",
               f"need 0 < throw_height_min <= throw_height_max, got "
               f"{self.throw_height_min}, {self.throw_height_max}")
        _check(0.0 < self.throw_speed_min <= self.throw_speed_max, "throw_speed_min",
               f"need 0 < throw_speed_min <= throw_speed_max, got "
               f"{self.throw_speed_min}, {self.throw_speed_max}")
        _check(self.aim_noise >= 0.0, "aim_noise", f"must be >= 0, got {self.aim_noise}")
        _check(self.flight_steps > 0, "flight_steps", f"must be > 0, got {self.flight_steps}")


@dataclass
class HumanoidViewMotionConfig(HumanoidEnvConfig):
    """Kinematic playback of the MotionLib's clips (env i plays clip i mod num_motions)."""

    state_init: str = "Start"
    enable_early_termination: bool = False


def _check(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"env config key '{key}': {message}")


def env_config_from_dict(cls: type[C], values: Mapping[str, Any] | None) -> C:
    """Build `cls` from a mapping; unknown keys and wrongly typed values raise ConfigError."""
    return config_from_mapping(cls, values, "env")


def make_config(config_class, cfg, overrides: Mapping[str, Any]):
    """A validated `config_class` from a config object or mapping plus keyword overrides."""
    if cfg is None:
        values = {}
    elif isinstance(cfg, HumanoidEnvConfig):
        values = cfg.to_dict()
    elif isinstance(cfg, Mapping):
        values = dict(cfg)
    else:
        raise ConfigError(f"env config must be a mapping or a {config_class.__name__}, got {type(cfg).__name__}")
    values.update(overrides)
    return env_config_from_dict(config_class, values)
