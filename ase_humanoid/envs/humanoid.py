"""The batched humanoid environment every task builds on (AMP pre-training as it stands).

One `Humanoid` holds `num_envs` worlds of one simulator backend. A control step (30 Hz):
actions in [-1, 1] -> PD targets (the robot's ASE mapping) -> `control_substeps` physics steps
(120 Hz) -> state tensors -> observations, reward, terminations and the AMP observation history
as pure batched functions (`observations.py`, `terminations.py`) -> envs that are done are reset
inside the step (auto-reset), so the observation returned for them is the first of their new
episode and the last one of the old episode is in `info["final_obs"]`.

Resets (`state_init`): `Default` standing pose, `Start` / `Random` reference-state init from the
MotionLib at t = 0 / a uniform time, `Hybrid` = Random with probability `hybrid_init_prob`,
otherwise Default. After a reference-state init the AMP history (`amp_history.py`) holds the
clip at t - k dt (k = 0 .. steps - 1); after any other reset it repeats the new state's frame.
All resets of a step are planned first (`ResetPlan` in `reset_plan.py`: states, their body
kinematics, policy observations and AMP histories) and written with one `set_robot_state` call
(`humanoid_resets.py`; the observations are in `humanoid_observations.py`, both mixins of
`Humanoid`).
The resets of the `state_init` mixture are drawn `reset_pool_size` at a time ahead of use
(`reset_pool.py`): the same distribution, a fraction of the cost per step.

Terrain (`terrain` config key, `envs/terrain_placement.py`): every world holds the same
heightfield; env i spawns on its tile (`env_origins`), resets are moved there and lifted clear of
the ground, the root height in the observations and the fall heights are measured from the
ground under the body, and `height_scan` appends the ground around the root. On flat ground
(`terrain` None or flat) none of this runs.

Extension points for task subclasses (see `ase_humanoid/envs/tasks/`):
  `prop_specs()`          extra free bodies (strike target, projectiles) -> `PropSpec` list
  `task_obs_size`         length of the task observation appended to the humanoid's
  `compute_task_obs(ids)` the task observation `[n, task_obs_size]`
  `compute_task_reward()` reward `[N]` (0 here: the AMP agent adds the style reward)
  `compute_task_termination()` extra terminations `[N]` bool
  `reset_task(ids)`       new goals for envs being reset (called after their humanoid reset)
  `pre_physics_step(actions)` / `post_physics_step()`  per-step task updates
  `markers(env_id)`       render-only markers (`Marker`) for the viewer
"""

from __future__ import annotations

import gymnasium
import numpy as np
import torch

from ase_humanoid.envs import observations as obs_fn
from ase_humanoid.envs import terminations as term_fn
from ase_humanoid.envs import amp_history as amp_ring
from ase_humanoid.envs import terrain_placement as terrain_fn
from ase_humanoid.envs.config import HumanoidEnvConfig, make_config
from ase_humanoid.envs.humanoid_observations import HumanoidObservations
from ase_humanoid.envs.humanoid_resets import HumanoidResets
from ase_humanoid.envs.reset_pool import DrawAhead
from ase_humanoid.errors import ConfigError
from ase_humanoid.robots.description import load_robot, load_robot_config, robot_names
from ase_humanoid.sim.base import PHYSICS_DT, PropSpec
from ase_humanoid.sim.factory import make_backend
from ase_humanoid.terrain import FlatGround, HeightMap, build_terrain, height_scan_offsets, terrain_config
from ase_humanoid.utils.render import Marker  # render-only shapes (kind, pos, size, rgba, mat)


class Humanoid(HumanoidObservations, HumanoidResets):
    """Batched humanoid environment with AMP observations; reward 0 (see module docstring).

    `Humanoid(cfg=None, **overrides)`: `cfg` a `HumanoidEnvConfig` (or subclass) or a mapping of
    its keys; keyword arguments override single keys. Unknown keys raise `ConfigError`.
    """

    config_class = HumanoidEnvConfig
    task_obs_size = 0

    def __init__(self, cfg=None, **overrides):
        self.cfg = make_config(self.config_class, cfg, overrides)
        cfg = self.cfg
        self.device = torch.device(cfg.device)
        self.num_envs = cfg.num_envs
        self.control_dt = cfg.control_substeps * PHYSICS_DT
        self.max_episode_length = cfg.max_episode_length
        self.generator = torch.Generator(device=self.device)
        if cfg.seed is None:
            self.generator.seed()
        else:
            self.generator.manual_seed(cfg.seed)

        robot = load_robot(cfg.robot, key_bodies=cfg.key_bodies, contact_bodies=cfg.contact_bodies,
                           pd_damping=cfg.pd_damping)
        self.robot = robot.to(device=self.device)
        self.motion_lib = None
        if cfg.motion_file is not None:
            from ase_humanoid.motion.motion_lib import MotionLib

            self.motion_lib = MotionLib(cfg.motion_file, robot, device=self.device)

        # None: MuJoCo's plane, and nothing below changes what flat-ground runs compute.
        self.terrain_config = terrain_config(cfg.terrain)
        self.terrain = build_terrain(self.terrain_config)
        self.ground = FlatGround(self.device) if self.terrain is None else HeightMap(self.terrain, self.device)
        self._ground_lookup = (None, None)  # (SimState, its ground_under_bodies): one lookup per state
        self.setup_task()
        self.sim = make_backend(cfg.sim, self.robot, self.num_envs, props=self.prop_specs(),
                                device=self.device, num_threads=cfg.num_threads, terrain=self.terrain)
        self._init_buffers()
        self._needs_reset = True
        # Optional callable run after every control step (video recording, viewers); hierarchical
        # envs step several control steps per decision, and each one is seen here.
        self.step_callback = None

    # ---- construction -------------------------------------------------------------------------

    def _init_buffers(self):
        robot, n, dev = self.robot, self.num_envs, self.device
        self.key_body_ids = torch.tensor(robot.key_body_ids, dtype=torch.long, device=dev)
        non_contact = torch.ones(robot.num_bodies, dtype=torch.bool, device=dev)
        non_contact[robot.contact_body_ids] = False
        self.non_contact_mask = non_contact  # [B]
        self.termination_heights = self._termination_heights()  # [B]

        self.num_amp_obs_steps = self.cfg.num_amp_obs_steps
        self.num_amp_obs_per_step = obs_fn.amp_obs_size(robot, len(robot.key_body_ids))
        self.scan_offsets = None  # [P, 2] height-scan points in the heading frame
        if self.cfg.height_scan:
            self.scan_offsets = height_scan_offsets(tuple(self.cfg.height_scan_size), self.cfg.height_scan_spacing, dev)
        self.num_scan_obs = 0 if self.scan_offsets is None else self.scan_offsets.shape[0]
        self.num_obs = obs_fn.policy_obs_size(robot.num_bodies) + self.num_scan_obs + self.task_obs_size
        self._init_terrain_tiles()
        self.num_actions = robot.num_dofs

        self.episode_steps = torch.zeros(n, dtype=torch.long, device=dev)
        self.episode_return = torch.zeros(n, dtype=torch.float32, device=dev)
        self.terminated_buf = torch.zeros(n, dtype=torch.bool, device=dev)
        self.nonfinite_buf = torch.zeros(n, dtype=torch.bool, device=dev)
        # AMP frames as a ring over the step axis (see amp_history.py), newest at slot amp_newest.
        self.amp_frames = torch.zeros(n, self.num_amp_obs_steps, self.num_amp_obs_per_step, device=dev)
        self.amp_newest = 0
        self._amp_slots = amp_ring.ring_slots(self.num_amp_obs_steps, dev)  # [newest slot, age] -> slot
        self.nonfinite_resets = 0  # cumulative count of envs reset for a non-finite state
        # Cumulative count of env steps whose action held a NaN/inf (replaced by 0, see step);
        # a tensor so that counting costs no device sync.
        self.nonfinite_actions = torch.zeros((), dtype=torch.long, device=dev)
        # PD targets of the last action (the humanoid holds its pose until the first action)
        self.pd_targets = torch.zeros(n, robot.num_dofs, device=dev)

        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (self.num_obs,), np.float32)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (self.num_actions,), np.float32)
        self.amp_observation_space = gymnasium.spaces.Box(
            -np.inf, np.inf, (self.num_amp_obs_steps * self.num_amp_obs_per_step,), np.float32)
        # The standing pose's AMP frame and kinematics never change: computed once for every
        # Default reset.
        default = self.default_states(1)
        self.default_kinematics = self.kinematics_of(default)  # [1]
        self.default_amp_obs = self.amp_obs_from_states(default, self.default_kinematics)  # [1, P]
        self.default_policy_obs = self.policy_obs_of(self.default_kinematics)  # [1, 15 B - 2]
        self.reset_draws = None
        if self.cfg.reset_pool_size > 0:
            self.reset_draws = DrawAhead(self._draw_resets, self.cfg.reset_pool_size, self.device)

    def _init_terrain_tiles(self) -> None:
        """Each env's tile: `terrain_levels [N]` (row) and `terrain_columns [N]`, its spawn point
        `env_origins [N, 3]` and kind `env_tile_kinds [N]`; None on flat ground. Without a
        curriculum the envs spread over every tile; with it they start on levels 0 .. max_init_level."""
        self.env_origins = self.env_tile_kinds = self.terrain_levels = self.terrain_columns = None
        if self.terrain is None:
            return
        tcfg = self.terrain_config
        self.terrain_tile_origins = torch.as_tensor(self.terrain.tile_origins, dtype=torch.float32, device=self.device)
        ids = torch.arange(self.num_envs, device=self.device)
        rows, cols = self.terrain.num_rows, self.terrain.num_cols
        self.terrain_columns = ids % cols
        if tcfg.curriculum:
            self.terrain_levels = torch.randint(0, tcfg.max_init_level + 1, (self.num_envs,), device=self.device,
                                                generator=self.generator)
        else:
            self.terrain_levels = (ids // cols) % rows
        # Episodes ended and falls per tile kind since the last terrain_metrics() call.
        self.terrain_kind_names = sorted(set(self.terrain.tile_kinds.reshape(-1).tolist()))
        kind_of = {name: k for k, name in enumerate(self.terrain_kind_names)}
        self.terrain_tile_kinds = torch.tensor([[kind_of[name] for name in row] for row in self.terrain.tile_kinds.tolist()],
                                               dtype=torch.long, device=self.device)  # [rows, cols]
        self.terrain_counts = torch.zeros(len(self.terrain_kind_names), 2, device=self.device)  # episodes, falls
        self._locate_env_tiles()

    def _locate_env_tiles(self) -> None:
        """`env_origins [N, 3]` and `env_tile_kinds [N]` of the tiles `terrain_levels` and
        `terrain_columns` name."""
        self.env_origins = self.terrain_tile_origins[self.terrain_levels, self.terrain_columns]
        self.env_tile_kinds = self.terrain_tile_kinds[self.terrain_levels, self.terrain_columns]

    def _termination_heights(self) -> torch.Tensor:
        """Per-body heights `[B]`; `termination_height` overrides the robot's default height."""
        heights = self.robot.termination_heights.clone().to(self.device)
        if self.cfg.termination_height is not None:
            specific = {}
            if str(self.cfg.robot) in robot_names():
                specific = load_robot_config(str(self.cfg.robot)).get("termination_heights") or {}
            for b, name in enumerate(self.robot.body_names):
                if name not in specific:
                    heights[b] = self.cfg.termination_height
        return heights

    # ---- task hooks (overridden by task envs) -------------------------------------------------

    def setup_task(self) -> None:
        """Read task settings; runs after robot and MotionLib exist, before the simulator."""

    def prop_specs(self) -> list[PropSpec]:
        """Extra free bodies in every world."""
        return []

    def compute_task_obs(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Task observation `[n, task_obs_size]` of `env_ids` (all envs if None)."""
        n = self.num_envs if env_ids is None else len(env_ids)
        return torch.zeros(n, 0, device=self.device)

    def compute_task_reward(self) -> torch.Tensor:
        """Task reward `[N]`; the AMP humanoid has none (the agent adds the style reward)."""
        return torch.zeros(self.num_envs, device=self.device)

    def compute_task_termination(self) -> torch.Tensor | None:
        """Extra terminations `[N]` bool from the task, or None."""
        return None

    def reset_task(self, env_ids: torch.Tensor) -> None:
        """New task goals for `env_ids`, whose humanoids have just been reset."""

    def pre_physics_step(self, actions: torch.Tensor) -> None:
        """Runs before the physics of a control step, after the PD targets are set."""

    def post_physics_step(self) -> None:
        """Runs after the physics of a control step, before observations and rewards."""

    def markers(self, env_id: int) -> list[Marker]:
        """Render-only markers of env `env_id` for the viewer."""
        return []

    # ---- public API ---------------------------------------------------------------------------

    def update_terrain_levels(self, done_ids: torch.Tensor, fell: torch.Tensor) -> None:
        """legged_gym's curriculum for the envs `done_ids [k]` that finished: a level up after an
        episode without a fall (`fell [N]` bool) that left the spawn platform, a level down after a
        fall; past the last level an env goes to a random level. Their spawn points follow."""
        levels = terrain_fn.next_terrain_levels(
            self.terrain_levels[done_ids], fell[done_ids], self.sim.state.root_pos[done_ids],
            self.env_origins[done_ids], self.terrain_config.platform_size / 2, self.terrain.num_rows, self.generator)
        self.terrain_levels = self.terrain_levels.index_copy(0, done_ids, levels)
        self._locate_env_tiles()

    def count_terrain_episodes(self, done_ids: torch.Tensor, fell: torch.Tensor) -> None:
        """Add the episodes of `done_ids [k]` that ended (and those that fell, `fell [N]`) to the
        counts of their tiles' kinds."""
        fell_now = fell[done_ids].float()  # [k]
        self.terrain_counts.index_add_(0, self.env_tile_kinds[done_ids], torch.stack([torch.ones_like(fell_now),
                                                                                      fell_now], dim=-1))

    def terrain_metrics(self) -> dict[str, float]:
        """`terrain/level` (mean level of the envs) and `terrain/fall_rate/<kind>` (share of the
        episodes ended on each tile kind since the last call that ended in a fall; counts then
        cleared); {} on flat ground."""
        if self.terrain is None:
            return {}
        out = {"terrain/level": float(self.terrain_levels.float().mean())}
        for name, (episodes, falls) in zip(self.terrain_kind_names, self.terrain_counts.tolist()):
            if episodes > 0:
                out[f"terrain/fall_rate/{name}"] = falls / episodes
        self.terrain_counts.zero_()
        return out

    @property
    def mj_model(self):
        """The MuJoCo model of one world (floor + humanoid + props), for viewers."""
        return self.sim.mj_model

    @property
    def dt(self) -> float:
        """Seconds per control step."""
        return self.control_dt

    @property
    def control_freq(self) -> float:
        """Policy decisions per second (30 Hz; hierarchical envs divide by their llc_steps)."""
        return 1.0 / self.control_dt

    def render_state(self, env_id: int) -> np.ndarray:
        """MuJoCo qpos `[nq]` (wxyz quaternions) of world `env_id`, for `mj_model`."""
        return self.sim.qpos_for_render(env_id)

    def reseed(self, seed: int) -> None:
        """Restart the env's random generator from `seed` (gymnasium's `reset(seed=...)`).

        Resets drawn ahead with the old generator are dropped, so what follows depends on
        `seed` alone (pools built at construction, such as HumanoidASE's fall states, stay)."""
        self.generator.manual_seed(int(seed))
        if self.reset_draws is not None:
            self.reset_draws = DrawAhead(self._draw_resets, self.cfg.reset_pool_size, self.device)

    def reset(self) -> torch.Tensor:
        """Reset every env; returns observations `[N, num_obs]`."""
        all_ids = torch.arange(self.num_envs, device=self.device)
        self.terminated_buf.zero_()
        self.nonfinite_buf.zero_()
        self.reset_envs(all_ids)
        self._needs_reset = False
        return self.compute_observations()

    def step(self, actions: torch.Tensor):
        """Advance one control step.

        actions `[N, num_actions]` in [-1, 1] (clipped). Returns obs `[N, num_obs]`, reward `[N]`,
        terminated `[N]` bool (fell, or non-finite state), truncated `[N]` bool (timeout), info:
          amp_obs `[N, steps * per_step]` newest first, state after this step (before any reset)
          terminate  same as terminated
          final_obs  `[N, num_obs]` observation after this step before any reset (bootstrap)
          episode    {"return": [k], "length": [k]} of the k episodes that ended
          nonfinite  `[N]` bool, envs reset because their state became non-finite
          nonfinite_resets / nonfinite_resets_step  cumulative / this step's count of those
        Action rows holding NaN/inf are counted in `nonfinite_actions` and replaced by zeros: a
        NaN control makes MuJoCo zero every control of that world without saying so.
        """
        if self._needs_reset:
            self.reset()
        actions = torch.as_tensor(actions, device=self.device, dtype=torch.float32)
        if actions.shape != (self.num_envs, self.num_actions):
            raise ValueError(f"actions must have shape [{self.num_envs}, {self.num_actions}], "
                             f"got {list(actions.shape)}")
        finite = torch.isfinite(actions)
        self.nonfinite_actions += (~finite.all(dim=-1)).sum()
        actions = torch.where(finite, actions, torch.zeros_like(actions))
        self.simulate(actions)
        self.episode_steps += 1
        self.post_physics_step()

        state = self.sim.state
        nonfinite = term_fn.nonfinite_envs(state.root_pos, state.root_rot, state.root_lin_vel,
                                           state.root_ang_vel, state.dof_pos, state.dof_vel,
                                           state.contact_forces)
        # Policy and AMP observations of the state after the physics, in one call.
        humanoid_obs, amp_now = self._humanoid_and_amp_obs(state)
        task_obs = self.compute_task_obs() if self.task_obs_size else None
        reward = self.compute_task_reward()
        terminated = self.compute_terminated()
        num_nonfinite = int(nonfinite.sum())
        if num_nonfinite:
            reward = torch.where(nonfinite, torch.zeros_like(reward), reward)
            amp_now = torch.nan_to_num(amp_now, nan=0.0, posinf=0.0, neginf=0.0)
            terminated = terminated | nonfinite
            self.nonfinite_resets += num_nonfinite
        truncated = self.compute_truncated() & ~terminated
        self.terminated_buf = terminated
        self.nonfinite_buf = nonfinite

        self.amp_newest = amp_ring.push_frame(self.amp_frames, self.amp_newest, amp_now)
        self.episode_return += reward
        info = {
            "amp_obs": obs_fn.flatten_amp_history(self.amp_history),  # a new tensor
            "terminate": terminated,
            "nonfinite": nonfinite,
            "nonfinite_resets": self.nonfinite_resets,
            "nonfinite_resets_step": num_nonfinite,
        }
        if num_nonfinite:
            humanoid_obs = torch.nan_to_num(humanoid_obs, nan=0.0, posinf=0.0, neginf=0.0)
        scan = self.height_scan_obs() if self.scan_offsets is not None else None
        final_obs = self._with_task_obs(humanoid_obs, task_obs, scan=scan)
        info["final_obs"] = final_obs
        obs = final_obs
        done_ids = (terminated | truncated).nonzero(as_tuple=False).flatten()
        if done_ids.numel():
            info["episode"] = {"return": self.episode_return[done_ids].clone(),
                               "length": self.episode_steps[done_ids].clone()}
            if self.terrain is not None:
                self.count_terrain_episodes(done_ids, terminated)
                if self.terrain_config.curriculum:
                    self.update_terrain_levels(done_ids, terminated)
                    info["terrain_level"] = self.terrain_levels.float().mean()
            plan = self.reset_envs(done_ids)
            # The first observation of the new episodes: the plan's (envs left out of it, i.e.
            # recovery episodes, keep their state and so their observation) and new task goals.
            if len(plan.env_ids):
                humanoid_obs = humanoid_obs.index_copy(0, plan.env_ids, self._plan_policy_obs(plan))
                if scan is not None:
                    scan = scan.index_copy(0, plan.env_ids, self.height_scan_obs(plan.env_ids))
            if self.task_obs_size:
                task_obs = task_obs.index_copy(0, done_ids, self.compute_task_obs(done_ids))
            obs = self._with_task_obs(humanoid_obs, task_obs, scan=scan)
        else:
            empty = torch.zeros(0, device=self.device)
            info["episode"] = {"return": empty, "length": empty.long()}
        if self.step_callback is not None:
            self.step_callback()
        return obs, reward, terminated, truncated, info

    @property
    def amp_history(self) -> torch.Tensor:
        """The AMP observation history `[N, steps, per_step]`, newest first (a new tensor)."""
        return amp_ring.newest_first(self.amp_frames, self.amp_newest)

    def fetch_amp_obs_demo(self, num_samples: int) -> torch.Tensor:
        """Demo AMP observations `[n, steps * per_step]` from the MotionLib (newest first).

        Samples clips by their weights and times uniform in [ (steps - 1) dt, length ], then the
        states at t - k dt (k = 0 .. steps - 1) through the same observation functions as the env.
        """
        return self.amp_obs_demo_from_keys(*self.sample_amp_obs_demo_keys(num_samples))

    def sample_amp_obs_demo_keys(self, num_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The random part of `fetch_amp_obs_demo`: (motion_ids [n] long, start_times [n])."""
        motion_lib = self._require_motion_lib("demo AMP observations")
        motion_ids = motion_lib.sample_motions(num_samples, generator=self.generator)
        # The newest frame lies in [window, length], so the whole window t - k dt is inside the
        # clip (as the ASE release): no clamped, repeated first frames, and the clip's last
        # `window` seconds are reachable as the newest frame.
        window = self.control_dt * (self.num_amp_obs_steps - 1)
        newest = motion_lib.sample_time(motion_ids, truncate_time=window, generator=self.generator) + window
        return motion_ids, newest

    def amp_obs_demo_from_keys(self, motion_ids: torch.Tensor, start_times: torch.Tensor) -> torch.Tensor:
        """The deterministic part: demo AMP observations `[n, steps * per_step]` ending at
        `start_times [n]` of clips `motion_ids [n]` (AMP checkpoints store these keys)."""
        self._require_motion_lib("demo AMP observations")
        steps, n = self.num_amp_obs_steps, motion_ids.shape[0]
        offsets = self.control_dt * torch.arange(steps, device=self.device, dtype=start_times.dtype)
        times = start_times.unsqueeze(-1) - offsets  # [n, steps]
        amp = self.amp_obs_from_motion(motion_ids.unsqueeze(-1).expand(-1, steps).reshape(-1),
                                       times.reshape(-1))
        return amp.reshape(n, steps * self.num_amp_obs_per_step)

    def collect_reference_motions(self, num_samples: int) -> torch.Tensor:
        """skrl's name for `fetch_amp_obs_demo`."""
        return self.fetch_amp_obs_demo(num_samples)

    def close(self) -> None:
        self.sim.close()

    # ---- physics, terminations ----------------------------------------------------------------

    def simulate(self, actions: torch.Tensor) -> None:
        """Actions -> PD targets -> `control_substeps` physics steps."""
        self.pd_targets = self.robot.action_to_pd_target(actions)
        self.sim.set_pd_targets(self.pd_targets)
        self.pre_physics_step(actions)
        self.sim.step(self.cfg.control_substeps)

    def compute_terminated(self) -> torch.Tensor:
        """Terminations `[N]` bool: a fall (when early termination is on) or the task's own."""
        if self.cfg.enable_early_termination:
            s = self.sim.state
            heights = None if self.terrain is None else terrain_fn.body_heights_above(s.body_pos,
                                                                                      self.ground_under_bodies(s))
            terminated = term_fn.fall_termination(s.contact_forces, s.body_pos, self.termination_heights,
                                                  self.non_contact_mask, self.episode_steps, body_heights=heights)
        else:
            terminated = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        task = self.compute_task_termination()
        return terminated if task is None else terminated | task

    def compute_truncated(self) -> torch.Tensor:
        """Time-outs `[N]` bool: the episode has run `max_episode_length` control steps."""
        return term_fn.timeout(self.episode_steps, self.max_episode_length)

    # ---- helpers ------------------------------------------------------------------------------

    def _bernoulli(self, n: int, prob: float) -> torch.Tensor:
        """`[n]` bool, each True with probability `prob` (env's own generator)."""
        return torch.rand(n, generator=self.generator, device=self.device) < prob

    def _require_motion_lib(self, purpose: str):
        if self.motion_lib is None:
            raise ConfigError(f"env config key 'motion_file': a motion file is needed for {purpose}; "
                              "set motion_file to a clip (.npy) or dataset YAML")
        return self.motion_lib

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_envs={self.num_envs}, robot={self.robot.name}, "
                f"sim={self.cfg.sim}, obs={self.num_obs}, actions={self.num_actions}, "
                f"amp_obs={self.num_amp_obs_steps}x{self.num_amp_obs_per_step})")
