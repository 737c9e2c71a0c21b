"""`HumanoidASE`: ASE low-level-controller pre-training with getup.

On top of the AMP humanoid (the ASE agent brings the latents, encoder and diversity terms):

* **Fall pool.** At start-up `fall_pool_size` humanoids (default max(num_envs, 64)) start from
  the standing pose (root 0.89 m up) with uniformly random root rotations and hold one random
  action each (uniform in [-0.5, 0.5]) for `fall_steps` (75 control steps, 2.5 s), all in one
  batched simulator of their own, as in the ASE release. Their final root poses and DoF positions, at rest (zero
  velocities), are the pool. With probability `fall_init_prob` (0.1) a reset starts from a
  random pool state.
* **Recovery episodes.** When an env terminates (a fall), with probability
  `recovery_episode_prob` (0.2) its reset keeps the humanoid where it lies: a new episode starts
  from the fallen state (the agent has seen `terminated`) with its AMP history continuing, and
  early termination and the time limit are suppressed for its first `recovery_steps` (60)
  control steps (as in the release), so the policy gets that long to get up; after that the
  episode runs on like any other (up to `max_episode_length`, or at once when that has passed).
  Resets from the fall pool get the same grace period.
* **Getup reward** (`getup_reward`, off by default, not in the release): during that grace
  period the env's reward is the head's height above the ground as a share of its height in
  the standing pose, clipped to [0, 1] and raised to `getup_reward_power` (1), a dense signal
  for getting up where the dataset holds no getup motion for the discriminator to reward
  (docs/research-notes.md). 0 at every other step.
* **Phases** (`phases`, empty by default; not in the release): entries `{from_epoch: N, key:
  value, ...}` change the settings above (`PHASE_KEYS`) once the trainer has done N epochs
  (`set_training_epoch`), so one run can pre-train as the release does and then learn to get
  up. The settings in effect are `active_cfg`; an env no trainer drives (evaluation) keeps those
  of epoch 0.
* Every other reset uses the configured `state_init` (default Hybrid).
"""

from __future__ import annotations

import torch

from ase_humanoid.envs.config import PHASE_KEYS, HumanoidASEConfig
from ase_humanoid.envs.humanoid import Humanoid
from ase_humanoid.envs.reset_plan import (
    DEFAULT_ROOT_HEIGHT,
    KINEMATICS_FIELDS,
    STATE_FIELDS,
    ResetPlan,
    RobotStates,
    merge_draws,
)
from ase_humanoid.envs.terminations import nonfinite_envs
from ase_humanoid.errors import ConfigError
from ase_humanoid.sim.factory import make_backend
from ase_humanoid.utils import rotations as rot

FALL_ACTION_RANGE = 0.5
"""Random actions of the fall-pool run are uniform in [-this, this]."""
HEAD_BODY = "head"
"""The body whose height the getup reward measures (every robot here has one)."""


def head_body_index(robot, needed_by: str) -> int:
    """Index of `HEAD_BODY` among `robot.body_names`; a ConfigError naming `needed_by` and the
    robot's bodies if it has none."""
    if HEAD_BODY not in robot.body_names:
        raise ConfigError(f"{needed_by} needs a body named '{HEAD_BODY}'; robot {robot.name} has: "
                          f"{', '.join(robot.body_names)}")
    return robot.body_names.index(HEAD_BODY)


def getup_reward(head_height: torch.Tensor, standing_head_height: float, getting_up: torch.Tensor,
                 power: float = 1.0) -> torch.Tensor:
    """`[N]` head height above the ground `[N]` as a share of `standing_head_height`, clipped to
    [0, 1] and raised to `power`, where `getting_up [N]` (bool), else 0."""
    share = (head_height / standing_head_height).clamp(0.0, 1.0) ** power
    return torch.where(getting_up, share, torch.zeros_like(share))


class HumanoidASE(Humanoid):
    """ASE pre-training environment with a fall pool and recovery episodes (see module docstring)."""

    config_class = HumanoidASEConfig

    def __init__(self, cfg=None, **overrides):
        super().__init__(cfg, **overrides)
        self.recovery_counter = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        pool_size = self.cfg.fall_pool_size or max(self.num_envs, 64)
        self.fall_root_pos, self.fall_root_rot, self.fall_dof_pos = self._generate_fall_pool(pool_size)
        fall_states = self._fall_states(torch.arange(self.fall_pool_size, device=self.device))
        self.fall_kinematics = self.kinematics_of(fall_states)
        self.fall_amp_obs = self.amp_obs_from_states(fall_states, self.fall_kinematics)
        self.fall_policy_obs = self.policy_obs_of(self.fall_kinematics)
        self.phase_configs = self.cfg.phase_configs()
        self.active_cfg = self._settings_after(0)
        self.head_body_id = self.standing_head_height = None
        if self.uses_getup_reward:
            self.head_body_id = head_body_index(self.robot, "task.env.getup_reward")
            self.standing_head_height = float(self.default_kinematics.body_pos[0, self.head_body_id, 2])

    def _generate_fall_pool(self, pool_size: int):
        """Simulate `pool_size` random falls in one batched run; returns root_pos [P, 3],
        root_rot [P, 4] and dof_pos [P, D] of the final (finite) states."""
        cfg, robot, dev, g = self.cfg, self.robot, self.device, self.generator
        sim = make_backend(cfg.sim, robot, pool_size, device=dev, num_threads=cfg.num_threads)
        try:
            root_pos = torch.zeros(pool_size, 3, device=dev)
            root_pos[:, 2] = DEFAULT_ROOT_HEIGHT  # the standing pose's, as the release
            # Normalised Gaussian 4-vectors are uniformly distributed rotations.
            root_rot = rot.quat_normalize(torch.randn(pool_size, 4, generator=g, device=dev))
            zeros3 = torch.zeros(pool_size, 3, device=dev)
            dofs = torch.zeros(pool_size, robot.num_dofs, device=dev)
            sim.set_robot_state(torch.arange(pool_size, device=dev), root_pos, root_rot, zeros3,
                                zeros3, dofs, dofs)
            # one random action per humanoid, held for the whole fall (as the release)
            actions = FALL_ACTION_RANGE * (2.0 * torch.rand(pool_size, robot.num_dofs, generator=g, device=dev) - 1.0)
            sim.set_pd_targets(robot.action_to_pd_target(actions))
            for _ in range(cfg.fall_steps):
                sim.step(cfg.control_substeps)
            s = sim.state
            good = ~nonfinite_envs(s.root_pos, s.root_rot, s.dof_pos)
            if not bool(good.any()):
                raise RuntimeError("every fall-pool simulation became non-finite")
            return s.root_pos[good].clone(), rot.quat_normalize(s.root_rot[good]), s.dof_pos[good].clone()
        finally:
            sim.close()

    @property
    def fall_pool_size(self) -> int:
        return int(self.fall_root_pos.shape[0])

    # ---- phases ---------------------------------------------------------------------------------

    @property
    def uses_getup_reward(self) -> bool:
        """Whether the getup reward is on at any time of the run (the agent must weigh it)."""
        return self.cfg.getup_reward or any(config.getup_reward for _, config in self.phase_configs)

    def _settings_after(self, epochs_done: int) -> HumanoidASEConfig:
        started = [config for start, config in self.phase_configs if start <= epochs_done]
        return started[-1] if started else self.cfg

    def set_training_epoch(self, epochs_done: int) -> str | None:
        """Called by the trainer before each epoch's rollout: the settings of the phase that
        `epochs_done` epochs have reached. Returns a line naming what changed when they change,
        else None. When a phase starts exactly here, the resets drawn ahead under the old
        settings are dropped (only then, so that a run resumed later continues with exactly the
        draws it saved)."""
        settings = self._settings_after(epochs_done)
        if settings is self.active_cfg:
            return None
        changed = {key: getattr(settings, key) for key in PHASE_KEYS
                   if getattr(settings, key) != getattr(self.active_cfg, key)}
        self.active_cfg = settings
        starts_here = any(start == epochs_done for start, _ in self.phase_configs)
        if starts_here and self.reset_draws is not None:
            self.reset_draws.discard()
        return (f"from epoch {epochs_done + 1} (task.env.phases): "
                + ", ".join(f"{key} {value}" for key, value in changed.items()))

    # ---- recovery bookkeeping -----------------------------------------------------------------

    def post_physics_step(self) -> None:
        super().post_physics_step()
        self.recovery_counter = (self.recovery_counter - 1).clamp_min(0)

    def compute_task_reward(self) -> torch.Tensor:
        """`[N]`: the getup reward during the grace period of getup episodes (`getup_reward`), else 0."""
        cfg = self.active_cfg
        if not cfg.getup_reward:
            return super().compute_task_reward()
        state = self.sim.state
        head = self.head_body_id
        head_height = state.body_pos[:, head, 2] - self.ground_under_bodies(state)[:, head]
        return getup_reward(head_height, self.standing_head_height, self.recovery_counter > 0,
                            cfg.getup_reward_power)

    def compute_terminated(self) -> torch.Tensor:
        """Falls, except during the grace period of recovery / fall-pool episodes."""
        return super().compute_terminated() & (self.recovery_counter == 0)

    def compute_truncated(self) -> torch.Tensor:
        """Time limit, except during the grace period (as the release's getup env)."""
        return super().compute_truncated() & (self.recovery_counter == 0)

    # ---- resets -------------------------------------------------------------------------------

    def plan_reset(self, env_ids: torch.Tensor) -> ResetPlan:
        cfg = self.active_cfg
        # Recovery: only envs that fell (finite state) this step may continue where they lie;
        # their humanoid state and AMP history are left as they are.
        can_recover = self.terminated_buf[env_ids] & ~self.nonfinite_buf[env_ids]
        recover = can_recover & self._bernoulli(len(env_ids), cfg.recovery_episode_prob)
        self.recovery_counter[env_ids[recover]] = cfg.recovery_steps

        others = env_ids[~recover]
        draws = self.take_resets(len(others))
        self.recovery_counter[others] = torch.where(draws["from_fall_pool"], cfg.recovery_steps, 0)
        return self.plan_from_draws(others, draws)

    def _draw_resets(self, count: int) -> dict:
        """The `state_init` draws, each replaced with probability `fall_init_prob` by a random
        fall-pool state at rest; field `from_fall_pool [count]` bool says which."""
        from_pool = self._bernoulli(count, self.active_cfg.fall_init_prob)
        pool_rows, other_rows = from_pool.nonzero().flatten(), (~from_pool).nonzero().flatten()
        pick = torch.randint(0, self.fall_pool_size, (len(pool_rows),), generator=self.generator, device=self.device)
        fall = dict(zip(STATE_FIELDS, self._fall_states(pick).as_tuple()))
        fall.update(zip(KINEMATICS_FIELDS, self.fall_kinematics.index_select(pick).as_tuple()))
        fall["amp_history"] = self.fall_amp_obs[pick].unsqueeze(1).expand(-1, self.num_amp_obs_steps, -1)
        fall["policy_obs"] = self.fall_policy_obs[pick]
        draws = merge_draws(count, [(other_rows, super()._draw_resets(len(other_rows))), (pool_rows, fall)])
        draws["from_fall_pool"] = from_pool
        return draws

    def _fall_states(self, pool_ids: torch.Tensor) -> RobotStates:
        """Fall-pool entries `pool_ids`, at rest."""
        zeros3 = torch.zeros(len(pool_ids), 3, device=self.device)
        dof_pos = self.fall_dof_pos[pool_ids]
        return RobotStates(self.fall_root_pos[pool_ids], self.fall_root_rot[pool_ids], zeros3, zeros3,
                           dof_pos, torch.zeros_like(dof_pos))
