"""`HumanoidViewMotion`: plays the MotionLib's clips kinematically, for inspection in a viewer.

Env i plays clip i mod num_motions from t = 0. Every control step sets the simulator's humanoid
state to the clip at t = episode step * dt (looping over the clip), with no physics step and no
forces: the simulator only does the kinematics, so what the viewer shows (`render_state`) is the
clip as the humanoid's joints reproduce it. Actions are ignored (any `[N, D]` tensor, or None).
Observations and AMP observations are computed as in the other envs; the reward is 0 and an
episode ends only at `max_episode_length`.

On terrain each env's clip plays from its tile's spawn point: the clip's path is shifted in xy as
the reset shifted its first frame, and every frame is lifted by the highest ground under its
bodies (`terrain_placement.terrain_placement`, as a reset), so the flat-ground clip walks over the surface
instead of through it.
"""

from __future__ import annotations

import torch

from ase_humanoid.envs import terrain_placement as terrain_fn
from ase_humanoid.envs.config import HumanoidViewMotionConfig
from ase_humanoid.envs.humanoid import Humanoid
from ase_humanoid.envs.reset_plan import ResetPlan


class HumanoidViewMotion(Humanoid):
    """Kinematic clip playback (see module docstring)."""

    config_class = HumanoidViewMotionConfig

    def setup_task(self) -> None:
        motion_lib = self._require_motion_lib("HumanoidViewMotion")
        self.env_motion_ids = torch.arange(self.cfg.num_envs, device=self.device) % motion_lib.num_motions
        # xy shift `[N, 2]` from each clip's path to the env's spawn point (zero on flat ground)
        self.playback_shift_xy = torch.zeros(self.cfg.num_envs, 2, device=self.device)

    def step(self, actions=None):
        if actions is None:
            actions = torch.zeros(self.num_envs, self.num_actions, device=self.device)
        return super().step(actions)

    def motion_times(self) -> torch.Tensor:
        """Clip time `[N]` (seconds) each env shows now, looping over its clip."""
        return self._clip_time(self.episode_steps)

    describe_label = "clip"  # the viewer's label for `describe`

    def describe(self, env_id: int) -> str:
        """Clip name and time of env `env_id` (viewer and video corner text)."""
        motion_id = int(self.env_motion_ids[env_id])
        length = float(self.motion_lib.get_motion_length(self.env_motion_ids[env_id:env_id + 1])[0])
        return (f"{self.motion_lib.motion_names[motion_id]}  "
                f"t={float(self.motion_times()[env_id]):5.2f} / {length:.2f} s")

    def _clip_time(self, steps: torch.Tensor) -> torch.Tensor:
        length = self.motion_lib.get_motion_length(self.env_motion_ids).clamp_min(self.control_dt)
        return torch.remainder(steps.to(length.dtype) * self.control_dt, length)

    def simulate(self, actions: torch.Tensor) -> None:
        """Set the state from the clip at the time this step reaches; no physics."""
        on_terrain = self.terrain is not None
        ms = self.motion_lib.get_motion_state(self.env_motion_ids, self._clip_time(self.episode_steps + 1),
                                              body_states=on_terrain)
        root_pos = ms.root_pos
        if on_terrain:
            # the reset's placement, frame by frame: shifted by the episode's xy shift, lifted onto
            # the highest ground under the bodies
            spawn_xy = root_pos[:, :2] + self.playback_shift_xy
            offsets, _ = terrain_fn.terrain_placement(root_pos, ms.body_pos, spawn_xy, self.ground)  # [N, 3]
            root_pos = root_pos + offsets
        self.sim.set_robot_state(torch.arange(self.num_envs, device=self.device), root_pos,
                                 ms.root_rot, ms.root_lin_vel, ms.root_ang_vel, ms.dof_pos, ms.dof_vel)

    def reset_envs(self, env_ids: torch.Tensor) -> ResetPlan:
        if self.terrain is not None and len(env_ids):
            first = self.motion_lib.get_motion_state(self.env_motion_ids[env_ids],
                                                     torch.zeros(len(env_ids), device=self.device), body_states=False)
            # the same xy shift as the reset's placement (terrain_placement.terrain_placement)
            self.playback_shift_xy[env_ids] = self.env_origins[env_ids, :2] - first.root_pos[:, :2]
        return super().reset_envs(env_ids)

    def plan_reset(self, env_ids: torch.Tensor) -> ResetPlan:
        """Every episode starts at the beginning of the env's clip."""
        return self.reference_plan(env_ids, motion_ids=self.env_motion_ids[env_ids],
                                   times=torch.zeros(len(env_ids), device=self.device))
