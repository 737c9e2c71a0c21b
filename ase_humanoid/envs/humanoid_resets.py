"""The humanoid env's resets: how an episode starts. Every reset of a step is planned first
(`ResetPlan`: states, their kinematics, policy observations and AMP histories) from draws of the
`state_init` mixture (standing pose, reference states at t = 0 or a uniform time), moved onto the
env's terrain tile, then written with one `set_robot_state` call. A mixin of
`envs.humanoid.Humanoid`; subclasses add reset modes by overriding `plan_reset` / `_draw_resets`."""

from __future__ import annotations

import dataclasses

import torch

from ase_humanoid.envs import amp_history as amp_ring
from ase_humanoid.envs import terrain_placement as terrain_fn
from ase_humanoid.envs.reset_plan import (
    KINEMATICS_FIELDS,
    STATE_FIELDS,
    ResetPlan,
    RobotStates,
    merge_draws,
    plan_from_draws,
    standing_states,
)
from ase_humanoid.robots.kinematics import ArticulationState, articulation_state


class HumanoidResets:
    """Reset methods of `Humanoid` (see the module docstring)."""

    def reset_envs(self, env_ids: torch.Tensor) -> ResetPlan:
        """Reset the humanoids, counters, task and AMP history of `env_ids [n]`; returns the plan."""
        plan = self.place_on_terrain(self.plan_reset(env_ids))
        if len(plan.env_ids):
            # one state write for the whole batch: the backend refreshes its state once
            self.sim.set_robot_state(plan.env_ids, *plan.states.as_tuple(), kinematics=plan.kinematics)
        self._start_episodes(env_ids, plan)
        return plan

    def place_on_terrain(self, plan: ResetPlan) -> ResetPlan:
        """`plan` (states for flat ground) moved onto each env's spawn point and lifted clear of the
        ground under its bodies (`terrain_placement.py`); the plan itself on flat ground."""
        if self.terrain is None or len(plan.env_ids) == 0:
            return plan
        states = plan.states
        kinematics = plan.kinematics if plan.kinematics is not None else self.kinematics_of(states)
        offsets, correction = terrain_fn.terrain_placement(  # [n, 3], [n]: one ground lookup
            states.root_pos, kinematics.body_pos, self.env_origins[plan.env_ids], self.ground)
        moved_states = RobotStates(states.root_pos + offsets, *states.as_tuple()[1:])
        moved_kinematics = dataclasses.replace(kinematics, body_pos=kinematics.body_pos + offsets.unsqueeze(1))
        policy_obs = plan.policy_obs
        if policy_obs is not None:
            policy_obs = torch.cat([policy_obs[:, :1] + correction.unsqueeze(-1), policy_obs[:, 1:]], dim=-1)
        amp_history = torch.cat([plan.amp_history[..., :1] + correction[:, None, None], plan.amp_history[..., 1:]],
                                dim=-1)
        return ResetPlan(plan.env_ids, moved_states, amp_history, moved_kinematics, policy_obs)

    def restart_episodes(self, env_ids: torch.Tensor) -> torch.Tensor:
        """Reset `env_ids [n]` again, discarding the steps their current (just begun) episodes
        have run; returns their first observations `[n, num_obs]` (hierarchical envs start an
        episode only at a high-level step)."""
        self.reset_envs(env_ids)
        return self.compute_observations(env_ids)

    def plan_reset(self, env_ids: torch.Tensor) -> ResetPlan:
        """Initial states of the humanoids of `env_ids` by `state_init` (subclasses add modes)."""
        return self.plan_from_draws(env_ids, self.take_resets(len(env_ids)))

    def take_resets(self, n: int) -> dict:
        """`n` independent draws of `_draw_resets`: from the ones drawn ahead (`reset_draws`), or
        drawn now when `reset_pool_size` is 0."""
        return self.reset_draws.take(n) if self.reset_draws is not None else self._draw_resets(n)

    def _draw_resets(self, count: int) -> dict:
        """`count` resets of the `state_init` distribution: `Default` standing pose, `Start` /
        `Random` reference states of clips sampled by weight at t = 0 / a uniform time, `Hybrid`
        Random with probability `hybrid_init_prob`, else Default. A dict of the RobotStates and
        ArticulationState fields `[count, ...]`, `amp_history [count, steps, per_step]` and
        `policy_obs [count, 15 B - 2]` (subclasses may add fields)."""
        mode = self.cfg.state_init
        if mode == "Default":
            return self._default_draws(count)
        if mode == "Hybrid":  # reference states only for the rows that get one
            use_reference = self._bernoulli(count, self.cfg.hybrid_init_prob)
            default_rows, reference_rows = (~use_reference).nonzero().flatten(), use_reference.nonzero().flatten()
            return merge_draws(count, [(default_rows, self._default_draws(len(default_rows))),
                                       (reference_rows, self._reference_draws(len(reference_rows), True))])
        return self._reference_draws(count, random_time=mode == "Random")

    def _reference_draws(self, count: int, random_time: bool) -> dict:
        """`count` reference states of clips sampled by weight at a uniform time or t = 0."""
        motion_lib = self._require_motion_lib(f"state_init={self.cfg.state_init!r}")
        motion_ids = (motion_lib.sample_motions(count, generator=self.generator) if count
                      else torch.zeros(0, dtype=torch.long, device=self.device))
        times = (motion_lib.sample_time(motion_ids, generator=self.generator) if random_time
                 else torch.zeros(count, device=self.device))
        return self._reference_resets(motion_ids, times)

    def plan_from_draws(self, env_ids: torch.Tensor, draws: dict) -> ResetPlan:
        """The plan that resets `env_ids [n]` into `draws` (as `_draw_resets` makes them, n rows)."""
        return plan_from_draws(env_ids, draws)

    def default_states(self, n: int) -> RobotStates:
        """Standing pose: root at DEFAULT_ROOT_HEIGHT, identity rotation, zero DoFs, at rest."""
        return standing_states(n, self.robot.num_dofs, self.device)

    def _default_draws(self, count: int) -> dict:
        """`count` standing poses; the AMP history repeats the pose's (constant) frame."""
        draws = dict(zip(STATE_FIELDS, self.default_states(count).as_tuple()))
        draws.update((name, x.expand(count, *x.shape[1:]))
                     for name, x in zip(KINEMATICS_FIELDS, self.default_kinematics.as_tuple()))
        draws["amp_history"] = self.default_amp_obs.unsqueeze(1).expand(count, self.num_amp_obs_steps, -1)
        draws["policy_obs"] = self.default_policy_obs.expand(count, -1)
        return draws

    def kinematics_of(self, states: RobotStates) -> ArticulationState:
        """Body states and joint quantities `[n]` the simulator will report for `states`."""
        return articulation_state(self.robot, *states.as_tuple())

    def reference_plan(self, env_ids: torch.Tensor, motion_ids: torch.Tensor | None = None,
                       times: torch.Tensor | None = None) -> ResetPlan:
        """Reference-state init of `env_ids` now: clips `motion_ids` (default: sampled by weight)
        at `times` (default: uniform)."""
        n = len(env_ids)
        motion_lib = self._require_motion_lib("reference-state init")
        if motion_ids is None:
            motion_ids = motion_lib.sample_motions(n, generator=self.generator)
        if times is None:
            times = motion_lib.sample_time(motion_ids, generator=self.generator)
        return self.plan_from_draws(env_ids, self._reference_resets(motion_ids, times))

    def _reference_resets(self, motion_ids: torch.Tensor, times: torch.Tensor) -> dict:
        """Reference states of clips `motion_ids [n]` at `times [n]` as `_draw_resets` returns them."""
        n, steps = len(motion_ids), self.num_amp_obs_steps
        # One query for the initial state (k = 0) and the AMP history (k = 1 .. steps - 1).
        offsets = self.control_dt * torch.arange(steps, device=self.device, dtype=times.dtype)
        ms = self.motion_lib.get_motion_state(motion_ids.repeat_interleave(steps),
                                              (times.unsqueeze(-1) - offsets).reshape(-1), body_states=False)
        # Kinematics of every queried frame: the AMP history's, and the new states' (rows k = 0).
        kinematics = articulation_state(self.robot, ms.root_pos, ms.root_rot, ms.root_lin_vel,
                                        ms.root_ang_vel, ms.dof_pos, ms.dof_vel)
        now = slice(None, None, steps)
        kinematics_now = ArticulationState(*(x[now] for x in kinematics.as_tuple()))
        draws = {name: getattr(ms, name)[now] for name in STATE_FIELDS}
        draws.update(zip(KINEMATICS_FIELDS, kinematics_now.as_tuple()))
        draws["policy_obs"] = self.policy_obs_of(kinematics_now)
        draws["amp_history"] = self.amp_obs_from_motion_state(ms, kinematics).reshape(n, steps, self.num_amp_obs_per_step)
        return draws

    def reset_reference(self, env_ids: torch.Tensor, motion_ids: torch.Tensor | None = None,
                        times: torch.Tensor | None = None) -> None:
        """Reset `env_ids` to reference states (sampled, or the given clips and times) now,
        AMP history included; e.g. to inspect or test a clip."""
        plan = self.place_on_terrain(self.reference_plan(env_ids, motion_ids=motion_ids, times=times))
        self.sim.set_robot_state(plan.env_ids, *plan.states.as_tuple(), kinematics=plan.kinematics)
        self._start_episodes(env_ids, plan)

    def _start_episodes(self, env_ids: torch.Tensor, plan: ResetPlan) -> None:
        """Counters, task and AMP history of envs whose humanoids were just reset by `plan`."""
        self.episode_steps[env_ids] = 0
        self.episode_return[env_ids] = 0.0
        self.reset_task(env_ids)
        if len(plan.env_ids):
            amp_ring.write_histories(self.amp_frames, self._amp_slots, self.amp_newest, plan.env_ids,
                                     plan.amp_history)
