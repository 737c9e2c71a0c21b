"""Checks a clip must pass before it ships or trains: feet on the ground, joints inside the
humanoid's range, no jumps.

A retargeted take can look fine and still teach the character nonsense: a capture floor that
tilts leaves the feet 10 cm in the air by the end of the walk, a hip beyond its range is a pose
the simulator can never reach (reference-state starts then begin in a joint-limit violation),
and one glitched frame of mocap moves a hand 2 m in 1/30 s, which the discriminator takes as
style. `clip_problems` names each such defect with the frame where it happens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ase_humanoid.motion.ground_alignment import lowest_geom_height, robot_geoms
from ase_humanoid.robots.kinematics import local_rot_to_dof_pos
from ase_humanoid.utils import rotations as rot


@dataclass(frozen=True)
class ClipLimits:
    """What `clip_problems` accepts (metres, seconds, radians)."""

    max_penetration: float = 0.02  # lowest collision-geom point below the floor
    max_float: float = 0.03  # lowest point above the floor, in every `ground_window` seconds
    ground_window: float = 1.0  # a foot touches the floor at least once in this long (runs fly 0.15 s, hops 0.5 s)
    joint_tolerance: float = math.radians(1.0)  # beyond a joint's range
    max_body_speed: float = 25.0  # m/s of any body between two frames (a fist: 8-10 m/s; a sword's centre 21 m/s in a lunge)
    max_joint_speed: float = 60.0  # rad/s of any joint's rotation between two frames (a kick's knee: about 30)


def clip_problems(clip, robot, limits: ClipLimits = ClipLimits(), geoms=None) -> list[str]:
    """Defects of a MotionClip on `robot` (its bodies in the robot's order); [] when it passes.

    Grounded: in every window of `ground_window` s the lowest collision-geom point comes within
    `max_float` of the floor, and it never sinks more than `max_penetration` below it. Joint
    limits: no hinge beyond its range by more than `joint_tolerance`. No jumps: no body faster
    than `max_body_speed` and no joint turning faster than `max_joint_speed` between consecutive
    frames.
    """
    if list(clip.skeleton.node_names) != list(robot.body_names):
        return [f"bodies {list(clip.skeleton.node_names)} are not {robot.name}'s {list(robot.body_names)}"]
    problems = []
    body_pos, body_rot = clip.global_translation.double(), clip.global_rotation.double()
    if not (torch.isfinite(body_pos).all() and torch.isfinite(body_rot).all()):
        return ["non-finite positions or rotations"]
    fps, frames = float(clip.fps), clip.num_frames
    lowest = lowest_geom_height(geoms if geoms is not None else robot_geoms(robot), body_pos, body_rot)  # [T]
    sunk = int(lowest.argmin())
    if float(lowest[sunk]) < -limits.max_penetration:
        problems.append(f"sinks {-100 * float(lowest[sunk]):.1f} cm into the floor at frame {sunk}")
    window = max(1, min(frames, round(limits.ground_window * fps)))
    touch = lowest.unfold(0, window, 1).min(dim=-1).values  # [T - window + 1]
    worst = int(touch.argmax())
    if float(touch[worst]) > limits.max_float:
        problems.append(f"floats {100 * float(touch[worst]):.1f} cm above the floor for {limits.ground_window:g} s "
                        f"from frame {worst}")

    dof_pos = local_rot_to_dof_pos(robot, clip.local_rotation.double())  # [T, D]
    lower, upper = robot.dof_limits_lower.double(), robot.dof_limits_upper.double()
    excess = torch.maximum(lower - dof_pos, dof_pos - upper)  # [T, D], > 0 outside the range
    frame, dof = divmod(int(excess.argmax()), robot.num_dofs)
    if float(excess[frame, dof]) > limits.joint_tolerance:
        problems.append(f"{robot.dof_names[dof]} {math.degrees(float(excess[frame, dof])):.1f} deg beyond its range "
                        f"at frame {frame}")

    if frames > 1:
        body_speed = (body_pos[1:] - body_pos[:-1]).norm(dim=-1) * fps  # [T - 1, B]
        frame, body = divmod(int(body_speed.argmax()), body_speed.shape[1])
        if float(body_speed[frame, body]) > limits.max_body_speed:
            problems.append(f"{robot.body_names[body]} jumps at {float(body_speed[frame, body]):.0f} m/s "
                            f"between frames {frame} and {frame + 1}")
        # A joint's rotation, not its hinge angles: near a spherical joint's gimbal lock its
        # Euler angles swap solution branch between frames with the pose hardly changed.
        local = clip.local_rotation.double()
        joint_speed = rot.quat_angle_between(local[1:, 1:], local[:-1, 1:]) * fps  # [T - 1, B - 1]
        frame, body = divmod(int(joint_speed.argmax()), joint_speed.shape[1])
        if float(joint_speed[frame, body]) > limits.max_joint_speed:
            problems.append(f"{robot.body_names[body + 1]}'s joint turns at {float(joint_speed[frame, body]):.0f} rad/s "
                            f"between frames {frame} and {frame + 1}")
    return problems
