"""Humanoid descriptions read from MJCF, and batched kinematics in the simulator's DoF coordinates."""

from ase_humanoid.robots.description import RobotDescription, load_robot, robot_names
from ase_humanoid.robots.kinematics import (
    body_state_from_qpos,
    dof_pos_to_local_rot,
    dof_vel_from_joint_vel,
    forward_kinematics,
    joint_vel_from_dof_vel,
    local_rot_to_dof_pos,
)
from ase_humanoid.robots.scene import build_scene_spec

__all__ = [
    "RobotDescription",
    "load_robot",
    "robot_names",
    "forward_kinematics",
    "dof_pos_to_local_rot",
    "local_rot_to_dof_pos",
    "joint_vel_from_dof_vel",
    "dof_vel_from_joint_vel",
    "body_state_from_qpos",
    "build_scene_spec",
]
