"""The humanoid env's observations: the policy observation (humanoid part, height scan, task
part), AMP observation steps of the simulator's state, of reference motions and of planned reset
states, and their mirror maps. A mixin of `envs.humanoid.Humanoid`, kept apart because it is one
concept: every method reads the env's state (`sim`, `robot`, `cfg`, `ground`, `key_body_ids`,
`scan_offsets`) and computes with the pure functions of `observations.py`."""

from __future__ import annotations

import torch

from ase_humanoid.envs import observations as obs_fn
from ase_humanoid.envs import terrain_placement as terrain_fn
from ase_humanoid.envs.reset_plan import ResetPlan, RobotStates
from ase_humanoid.errors import ConfigError
from ase_humanoid.robots.kinematics import ArticulationState, articulation_state, body_state_from_qpos
from ase_humanoid.robots.mirror import SignedPermutation, policy_obs_mirror, robot_mirror
from ase_humanoid.terrain import height_scan
from ase_humanoid.utils.rotations import calc_heading


class HumanoidObservations:
    """Observation methods of `Humanoid` (see the module docstring)."""

    def compute_observations(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Policy observations `[n, num_obs]` of `env_ids` (all if None) from the simulator state."""
        state = self.sim.state
        body = (state.body_pos, state.body_rot, state.body_lin_vel, state.body_ang_vel)
        if env_ids is not None:
            body = tuple(x[env_ids] for x in body)
        obs = obs_fn.policy_observation(*body, root_rotation=self.cfg.policy_root_rotation)
        if self.terrain is not None:
            obs = terrain_fn.with_root_height_above_ground(obs, body[0][:, 0], self.ground)
        task_obs = self.compute_task_obs(env_ids) if self.task_obs_size else None
        return self._with_task_obs(obs, task_obs, env_ids)

    def _humanoid_and_amp_obs(self, state) -> tuple[torch.Tensor, torch.Tensor]:
        """Humanoid part of the policy observation `[N, 15 B - 2]` and the AMP observation step
        `[N, per_step]` of every env in SimState `state`; on terrain the root height in both is
        measured from the ground under the root."""
        ground = self._ground_under_root(state) if self.terrain is not None else None  # [N], once for both
        return obs_fn.humanoid_observations(state.body_pos, state.body_rot, state.body_lin_vel, state.body_ang_vel,
                                            state.joint_rot, state.joint_vel, self.key_body_ids,
                                            self.cfg.local_root_obs, self.cfg.policy_root_rotation, ground)

    def ground_under_bodies(self, state) -> torch.Tensor:
        """`[N, B]` ground height under each body origin of SimState `state`, looked up once per
        state: a step's observations (root height, the root being body 0) and fall check (body
        heights) share it. Backends never overwrite a SimState they handed out (`SimBackend.state`),
        so the lookup stays valid for as long as `state` is the current one."""
        cached_state, heights = self._ground_lookup
        if cached_state is not state:
            heights = self.ground.height_at(state.body_pos[..., :2])
            self._ground_lookup = (state, heights)
        return heights

    def _ground_under_root(self, state) -> torch.Tensor:
        """`[N]` ground height under the root of every env in SimState `state`: from the shared
        per-state lookup when the fall check will need it (or already made it), else for the
        roots alone."""
        if self.cfg.enable_early_termination or self._ground_lookup[0] is state:
            return self.ground_under_bodies(state)[:, 0]
        return self.ground.height_at(state.root_pos[:, :2])

    def policy_obs_of(self, kinematics: ArticulationState) -> torch.Tensor:
        """Humanoid part of the policy observation `[n, 15 B - 2]` of states with `kinematics`."""
        return obs_fn.policy_observation(*kinematics.bodies(), root_rotation=self.cfg.policy_root_rotation)

    def _plan_policy_obs(self, plan: ResetPlan) -> torch.Tensor:
        """The humanoid policy observation `[n, 15 B - 2]` of the states `plan` has just set."""
        if plan.policy_obs is not None:
            return plan.policy_obs
        s = self.sim.state
        body = tuple(x.index_select(0, plan.env_ids) for x in (s.body_pos, s.body_rot, s.body_lin_vel, s.body_ang_vel))
        obs = obs_fn.policy_observation(*body, root_rotation=self.cfg.policy_root_rotation)
        if self.terrain is not None:
            obs = terrain_fn.with_root_height_above_ground(obs, body[0][:, 0], self.ground)
        return obs

    def _with_task_obs(self, humanoid_obs: torch.Tensor, task_obs: torch.Tensor | None,
                       env_ids: torch.Tensor | None = None, scan: torch.Tensor | None = None) -> torch.Tensor:
        """The policy observation `[n, num_obs]`: humanoid part, height scan (when on; `scan`
        when already computed, else measured now for `env_ids`), task part."""
        parts = [humanoid_obs]
        if self.scan_offsets is not None:
            parts.append(scan if scan is not None else self.height_scan_obs(env_ids))
        if task_obs is not None:
            parts.append(task_obs)
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)

    def height_scan_obs(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Root height above the ground at the scan points `[n, P]` of `env_ids` (all if None),
        from the current simulator state, laid out in the root's heading frame."""
        s = self.sim.state
        root_pos, root_rot = (s.root_pos, s.root_rot) if env_ids is None else (s.root_pos[env_ids], s.root_rot[env_ids])
        return height_scan(self.ground, root_pos, calc_heading(root_rot), self.scan_offsets)

    def mirror_maps(self) -> dict[str, SignedPermutation]:
        """Signed permutations taking this env's policy observations ("obs"), AMP observation
        histories ("amp_obs", newest first) and actions ("actions") to their left-right mirror
        images, for symmetry losses. ModelError unless the humanoid is symmetric
        (`robots.mirror.robot_mirror`); ConfigError when the observation holds task or height-scan
        terms, which have no mirror map."""
        if self.task_obs_size or self.scan_offsets is not None:
            raise ConfigError(f"{type(self).__name__}: mirror maps cover the humanoid's own observation only; "
                              "this env adds task or height-scan terms")
        mirror = robot_mirror(self.robot)
        return {"obs": policy_obs_mirror(mirror),
                "amp_obs": obs_fn.amp_obs_mirror(self.robot, mirror, self.robot.key_body_ids, self.num_amp_obs_steps),
                "actions": mirror.dofs}

    def amp_obs_from_sim(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Current AMP observation step `[n, per_step]` from the simulator state."""
        s = self.sim.state
        fields = (s.root_pos, s.root_rot, s.root_lin_vel, s.root_ang_vel, s.joint_rot, s.joint_vel)
        key_pos = s.body_pos.index_select(1, self.key_body_ids)
        if env_ids is not None:
            fields = tuple(x[env_ids] for x in fields)
            key_pos = key_pos[env_ids]
        amp = obs_fn.amp_observation(*fields, key_pos, self.cfg.local_root_obs)
        if self.terrain is not None:
            amp = terrain_fn.with_root_height_above_ground(amp, fields[0], self.ground)
        return amp

    def amp_obs_from_motion(self, motion_ids: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """AMP observation steps `[n, per_step]` of the MotionLib's clips at `times [n]`.

        Key-body positions come from forward kinematics of the reference root and DoF
        positions, exactly as the simulator computes them for the same state.
        """
        motion_lib = self._require_motion_lib("reference AMP observations")
        ms = motion_lib.get_motion_state(motion_ids, times, body_states=False)
        return self.amp_obs_from_motion_state(ms)

    def amp_obs_from_motion_state(self, ms, kinematics: ArticulationState | None = None) -> torch.Tensor:
        """AMP observation steps `[n, per_step]` of MotionLib states `ms` (a `MotionState`), with
        `kinematics` their ArticulationState when already computed. Key-body positions and joint
        rotations come from the simulator's own kinematics of the root and DoF positions (so a
        state set in the simulator gives the same frame), joint velocities from the clip."""
        if kinematics is None:
            kinematics = articulation_state(self.robot, ms.root_pos, ms.root_rot, ms.root_lin_vel,
                                            ms.root_ang_vel, ms.dof_pos, ms.dof_vel)
        return self._amp_obs(ms.root_pos, ms.root_rot, ms.root_lin_vel, ms.root_ang_vel, kinematics, ms.joint_vel)

    def amp_obs_from_states(self, states: RobotStates, kinematics: ArticulationState | None = None) -> torch.Tensor:
        """AMP observation steps `[n, per_step]` the simulator will give for humanoid `states`
        (`kinematics`: theirs, when already computed)."""
        if kinematics is None:
            kinematics = self.kinematics_of(states)
        return self._amp_obs(states.root_pos, states.root_rot, states.root_lin_vel, states.root_ang_vel,
                             kinematics, kinematics.joint_vel)

    def _amp_obs(self, root_pos, root_rot, root_lin_vel, root_ang_vel, kinematics: ArticulationState,
                 joint_vel: torch.Tensor) -> torch.Tensor:
        """AMP observation steps `[n, per_step]` of root states, their kinematics (joint
        rotations, key-body positions) and joint velocities `[n, D]`."""
        return obs_fn.amp_observation(root_pos, root_rot, root_lin_vel, root_ang_vel, kinematics.joint_rot, joint_vel,
                                      kinematics.body_pos.index_select(1, self.key_body_ids), self.cfg.local_root_obs)

    def policy_obs_from_motion(self, motion_ids: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
        """Humanoid part of the policy observation `[n, 15 B - 2]` for reference states."""
        motion_lib = self._require_motion_lib("reference observations")
        ms = motion_lib.get_motion_state(motion_ids, times, body_states=False)
        body = body_state_from_qpos(self.robot, ms.root_pos, ms.root_rot, ms.root_lin_vel,
                                    ms.root_ang_vel, ms.dof_pos, ms.dof_vel)
        return obs_fn.policy_observation(*body, root_rotation=self.cfg.policy_root_rotation)
