"""Settings of one retargeting run and the source-to-target axis change they imply."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ase_humanoid.errors import ConfigError
from ase_humanoid.utils import rotations as rot


GROUND_MODES = ("geoms", "origins", "none", "track")
UP_AXES = ("y", "z")


# +90 deg about x: takes a y-up frame to z-up (y -> z, z -> -y), xyzw.
Y_UP_TO_Z_UP = (math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))


@dataclass
class RetargetConfig:
    """Settings of one retargeting run (see cfg/retarget/*.yaml for documented examples).

    joint_map: source joint name -> target body name.
    root_rotation: xyzw rotation applied to the source (source axes -> target axes, z up).
    scale: source length units -> metres.
    root_height_offset: height (m) at which the lowest point sits after ground alignment.
    ground: "geoms" (lowest collision-geom point), "origins" (lowest body origin, as in the ASE
        release), "track" (lowest collision-geom point followed frame by frame over a 1 s
        window, for takes whose capture floor is not level) or "none" (keep the transferred
        heights, only add root_height_offset).
    source_up: the source's up axis, "y" (BVH, ASF/AMC, FBX as ufbx reads it) or "z"; a y-up
        source is first turned z-up by +90 deg about x, then root_rotation applies.
    project_hinges: make elbows/knees exact 1-DoF rotations (see project_hinges).
    clamp_limits: clamp every hinge to the humanoid's joint range (the simulator can go no
        further; e.g. a karate side kick takes the kicking hip 59 deg past the humanoid's range);
        the limit report still tells what was clamped.
    """

    joint_map: dict[str, str]
    root_rotation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    scale: float = 1.0
    root_height_offset: float = 0.0
    ground: str = "geoms"
    source_up: str = "z"
    project_hinges: bool = True
    clamp_limits: bool = False

    def __post_init__(self):
        if self.ground not in GROUND_MODES:
            raise ConfigError(f"retarget key 'ground': '{self.ground}' is not one of {', '.join(GROUND_MODES)}")
        if len(self.root_rotation) != 4:
            raise ConfigError(f"retarget key 'root_rotation': expected 4 numbers (x, y, z, w), got {self.root_rotation}")
        if not self.scale > 0:
            raise ConfigError(f"retarget key 'scale': must be positive, got {self.scale}")
        if self.source_up not in UP_AXES:
            raise ConfigError(f"retarget key 'source_up': '{self.source_up}' is not one of {', '.join(UP_AXES)}")
        if not self.joint_map:
            raise ConfigError("retarget key 'joint_map': empty; map at least the source root to the target root")


def source_to_target_rotation(config: RetargetConfig, dtype=torch.float64) -> torch.Tensor:
    """The rotation [4] taking source world axes to the target's: root_rotation after the
    y-up -> z-up turn for y-up sources."""
    R = rot.quat_normalize(torch.tensor(config.root_rotation, dtype=dtype))
    if config.source_up == "y":
        R = rot.quat_mul(R, torch.tensor(Y_UP_TO_Z_UP, dtype=dtype))
    return R


def up_rotation(up: str, dtype) -> torch.Tensor:
    return torch.tensor(Y_UP_TO_Z_UP if up == "y" else (0.0, 0.0, 0.0, 1.0), dtype=dtype)
