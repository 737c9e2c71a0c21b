"""An ASE controller's skill repertoire, measured without trusting its discriminator.

`benchmarks/ase_skills.py CHECKPOINT` prints this report and `train.py task=HumanoidASE
test=true` appends it. K random unit latents (seeded) are each held fixed for a whole rollout in
an env of their own, every env starting from the standing pose; the rollouts are then compared
with the motion data and with each other:

* fall rate: share of latents whose env's early-termination fall criterion fired. Steps from a
  fall on are left out of everything below (the env has reset that character).
* key-body distance (cm) to the nearest dataset frame (`envs/motion_quality.py`).
* skill of a latent: the clip holding its nearest frame most often; clip coverage: how many
  clips are the skill of at least one latent, and how many latents each clip got.
* spread across latents of mean horizontal root speed (m/s), turning rate |d heading / dt|
  (rad/s, over 0.5 s windows) and root height (m): a controller whose latents all do the same
  thing has ~0 spread.
* directions of travel: where each latent's net displacement points relative to its start
  heading, and the smallest arc holding them all (`span_rad`); and the signed turning rate once
  under way (`steady_turn_rate`, rad/s, + = left, after the first `SETTLE_S` seconds). A
  high-level policy steers by switching latents every few steps, so what it needs is latents
  that turn different ways while walking, not only ones that set off in different directions.
* speed by skill: for each clip, its own mean horizontal root speed in the data next to the
  mean and fastest root speed of the latents whose skill it is (a "walk" latent that steps in
  place at 0.2 m/s matches the walk clip's poses, not its 1.5 m/s).
* enc . z: the agent's encoder on the rollout's AMP observations against the latent that
  acted (as in training); 1 = the latent can be read back from the motion, ~0 = it cannot.
* getup: episodes started from the env's fall pool (fallen states at rest), early termination
  off, one fixed latent each; success = root and head both reach `STANDING_FRACTION` of their
  heights in the standing pose at some step within `getup_steps`.

Layout: pure functions (shapes in their docstrings), the configs of the two measurement envs,
the measurements, the report and its outputs (summary, grid video, root-path plot). Loading a
checkpoint is `evaluate.skill_report`'s job (this module sits below evaluate.py).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, open_dict

from ase_humanoid.agents.ase import sample_unit_latents
from ase_humanoid.agents.networks import mirror_latents
from ase_humanoid.envs.humanoid_ase import head_body_index
from ase_humanoid.envs.motion_quality import MotionQuality, clip_coverage, majority_clips, short_clip_names
from ase_humanoid.errors import ConfigError
from ase_humanoid.utils import rotations as rot

STANDING_FRACTION = 0.8
"""Getup success: root and head at least this share of their standing-pose heights. For the AMP
humanoid: root 0.8 x 0.89 = 0.71 m, head 0.8 x 1.35 = 1.08 m; the walk clip's median heights
(0.82 m, 1.28 m) and even its lowest head height (1.22 m) pass, a character on its knees does not."""

TILE_WIDTH, TILE_HEIGHT = 160, 120  # one character's tile in the grid video
TILE_CAMERA_DISTANCE = 3.0  # m; closer than the 640x480 evaluation video's 4 m, tiles are small
TILE_SHADOW_MAP = 512  # px; the scene's 4096 costs ~0.2 s a tile on a software (llvmpipe) EGL
VIDEO_FRAME_STRIDE = 2  # control steps per video frame: 15 fps halves the rendering, still smooth
TURNING_WINDOW_S = 0.5
"""Turning rates are heading changes over windows this long: step by step, the pelvis's yaw swing
within a stride counts as turning (the walk clip: 0.59 rad/s step by step, 0.33 over 0.5 s)."""
MIN_TRAVEL_M = 1.0
"""A latent has a direction of travel only if its root ends at least this far from its start."""
SETTLE_S = 2.0
"""`steady_turn_rate` leaves out the first this many seconds: setting off from standing."""
TURNING_THRESHOLD = 0.1
"""rad/s: a latent whose steady turn rate is beyond this turns (right below -it, left above it)."""


START_CHOICES = ("standing", "reference")


@dataclass
class SkillOptions:
    """What to measure. `steps`: control steps per fixed-latent rollout (30 per second);
    `getup_episodes` None: one per latent; `video` / `paths`: files to write, or None; `start`:
    "standing" (every rollout from the standing pose) or "reference" (from a random frame of the
    dataset, moving as the clip does there: can a latent keep up a motion it did not start?)."""

    num_latents: int = 64
    steps: int = 300
    seed: int = 0
    getup_episodes: int | None = None
    getup_steps: int = 90
    video: str | None = None
    video_tiles: int = 16
    paths: str | None = None
    start: str = "standing"
    # the second half of the latents the mirror images of the first (agents.networks.mirror_latents):
    # a left-right symmetric controller turns each pair opposite ways
    mirror_pairs: bool = False

    def __post_init__(self):
        if self.start not in START_CHOICES:
            raise ConfigError(f"skill report start '{self.start}': choose one of {', '.join(START_CHOICES)}")
        if self.num_latents < 1 or self.steps < 1 or self.getup_steps < 1:
            raise ConfigError(f"skill report: latents, steps and getup steps must be >= 1, got "
                              f"{self.num_latents}, {self.steps}, {self.getup_steps}")
        if self.mirror_pairs and self.num_latents % 2:
            raise ConfigError(f"skill report: mirror pairs need an even number of latents, got {self.num_latents}")
        if self.getup_episodes is None:
            self.getup_episodes = self.num_latents
        if self.getup_episodes < 0:
            raise ConfigError(f"skill report: getup episodes must be >= 0, got {self.getup_episodes}")


# ---------------------------------------------------------------------------- pure functions

def heading_change(heading_before: torch.Tensor, heading_after: torch.Tensor) -> torch.Tensor:
    """Signed change (rad) `[n]` between two headings `[n]` (rad), the short way round (from 3.1
    to -3.1 rad is a small turn, not almost a full one)."""
    return rot.normalize_angle(heading_after - heading_before)


def mean_turning_rate(heading_steps: torch.Tensor, steps_used: torch.Tensor, window: int,
                      dt: float) -> torch.Tensor:
    """Mean |turning rate| (rad/s) `[K]` over sliding windows of `window` control steps of `dt`
    seconds. heading_steps `[T, K]`: signed heading change of each step (rad, short way round),
    of which the first `steps_used [K]` count. A latent with fewer valid steps than `window`
    gets one window over all of them; none: NaN."""
    total_steps, k = heading_steps.shape
    heading = torch.cat([heading_steps.new_zeros(1, k), heading_steps.cumsum(0)])  # [T + 1, K] unwrapped
    w = max(1, min(window, total_steps))
    rates = (heading[w:] - heading[:-w]).abs() / (w * dt)  # [T + 1 - w, K], window ending at state w + row
    ends = torch.arange(w, total_steps + 1, device=heading.device).unsqueeze(1)
    valid = ends <= steps_used.unsqueeze(0)
    count = valid.sum(0)
    windowed = (rates * valid).sum(0) / count.clamp_min(1)
    used = steps_used.long().clamp(0, total_steps)
    one_window = heading[used, torch.arange(k, device=heading.device)].abs() / (used.clamp_min(1) * dt)
    return torch.where(count > 0, windowed, torch.where(used > 0, one_window, math.nan))


def travel_directions(root_xy: torch.Tensor, start_heading: torch.Tensor,
                      min_distance: float = MIN_TRAVEL_M) -> torch.Tensor:
    """Direction `[K]` (rad, [-pi, pi), + = to the left) of each latent's net displacement, from
    its first to its last recorded root position (`root_xy [T + 1, K, 2]`, NaN from a fall on),
    relative to its heading at the start (`start_heading [K]`); NaN where the root ended less
    than `min_distance` m from its start."""
    steps = torch.arange(root_xy.shape[0], device=root_xy.device)[:, None]
    last = torch.where(torch.isfinite(root_xy[..., 0]), steps, 0).amax(dim=0)  # [K]
    displacement = root_xy[last, torch.arange(root_xy.shape[1], device=root_xy.device)] - root_xy[0]
    angle = rot.normalize_angle(torch.atan2(displacement[:, 1], displacement[:, 0]) - start_heading)
    return torch.where(displacement.norm(dim=-1) >= min_distance, angle, math.nan)


def steady_turn_rate(heading_steps: torch.Tensor, steps_used: torch.Tensor, skip: int, dt: float) -> torch.Tensor:
    """Signed mean turning rate `[K]` (rad/s, + = left) after the first `skip` control steps, from
    the per-step heading changes `heading_steps [T, K]` (0 from a fall on) and the steps before a
    fall `steps_used [K]`; NaN for a latent that fell within `skip` steps."""
    steps = (steps_used - skip).clamp_min(0)
    total = heading_steps[skip:].sum(dim=0)
    return torch.where(steps > 0, total / (steps.clamp_min(1) * dt), math.nan)


def direction_span(directions: torch.Tensor) -> float:
    """The smallest arc (rad) holding every finite direction of `directions [K]`: 0 when all
    point the same way, near 2 pi when they point every way; NaN when none is finite."""
    angles = directions[torch.isfinite(directions)].double().sort().values
    if angles.numel() == 0:
        return math.nan
    gaps = torch.cat([angles.diff(), (angles[:1] + 2 * math.pi) - angles[-1:]])
    return float(2 * math.pi - gaps.max())


def mirror_pair_turns(steady_turn: torch.Tensor) -> dict:
    """How far latent k and its mirror image k + K/2 turn opposite ways, from steady turn rates
    `[K]`: `mean_abs_turn` (rad/s) against `mean_abs_asymmetry` = mean |t_k + t_k+K/2| (0 for a
    left-right symmetric controller), over the pairs where neither fell early."""
    half = steady_turn.numel() // 2
    first, second = steady_turn[:half], steady_turn[half:]
    both = torch.isfinite(first) & torch.isfinite(second)
    if not bool(both.any()):
        return {"pairs": 0, "mean_abs_turn": None, "mean_abs_asymmetry": None}
    pairs = torch.cat([first[both], second[both]])
    return {"pairs": int(both.sum()), "mean_abs_turn": float(pairs.abs().mean()),
            "mean_abs_asymmetry": float((first[both] + second[both]).abs().mean())}


def standing_thresholds(standing_body_pos: torch.Tensor, head_id: int,
                        fraction: float = STANDING_FRACTION) -> tuple[float, float]:
    """(root, head) height thresholds (m): `fraction` of their heights in the standing pose,
    body positions `[B, 3]` (body 0 the root)."""
    return fraction * float(standing_body_pos[0, 2]), fraction * float(standing_body_pos[head_id, 2])


def is_standing(root_height: torch.Tensor, head_height: torch.Tensor, root_min: float,
                head_min: float) -> torch.Tensor:
    """`[n]` bool: root height `[n]` >= root_min and head height `[n]` >= head_min (m)."""
    return (root_height >= root_min) & (head_height >= head_min)


def spread(values: torch.Tensor) -> dict[str, float]:
    """Mean, std (population) and range of `values [K]` (NaN rows ignored; NaN if none)."""
    values = values[torch.isfinite(values)].double()
    if values.numel() == 0:
        return {"mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan}
    return {"mean": float(values.mean()), "std": float(values.std(unbiased=False)),
            "min": float(values.min()), "max": float(values.max())}


def clip_root_speeds(root_lin_vel: torch.Tensor, num_frames: torch.Tensor) -> torch.Tensor:
    """Mean horizontal root speed `[M]` (m/s) of each clip from the packed per-frame root
    velocities `[F, 3]` of M clips of `num_frames [M]` frames each (MotionLib's layout)."""
    clip_of_frame = torch.repeat_interleave(torch.arange(len(num_frames), device=num_frames.device), num_frames)
    speed = root_lin_vel[:, :2].double().norm(dim=-1)  # [F]
    total = torch.zeros(len(num_frames), dtype=torch.float64, device=speed.device).index_add_(0, clip_of_frame, speed)
    return total / num_frames.double()


def speed_by_skill(latent_speed: torch.Tensor, skills: torch.Tensor, clip_speed: torch.Tensor,
                   clip_names: list[str], fell: torch.Tensor | None = None) -> dict[str, dict]:
    """Per clip: `clip_m_s` (the clip's own mean root speed), `latents` (how many latents have it
    as their skill) and, when any, the `mean_m_s` and `max_m_s` of those latents' mean root
    speeds. With `fell [K]` bool also `fell` (how many of them fell) and, when any stayed up,
    `up_mean_m_s` / `up_max_m_s` over those alone: a latent that runs and falls is fast until it
    falls, and would otherwise hide that the ones that stay up are slow.
    latent_speed `[K]` (NaN: no steps), skills `[K]` clip ids, clip_speed `[M]`."""
    out = {}
    for clip, name in enumerate(clip_names):
        is_clip = skills == clip
        measured = is_clip & torch.isfinite(latent_speed)
        speeds = latent_speed[measured].double()
        entry = {"clip_m_s": float(clip_speed[clip]), "latents": int(is_clip.sum())}
        if speeds.numel():
            entry.update(mean_m_s=float(speeds.mean()), max_m_s=float(speeds.max()))
        if fell is not None:
            entry["fell"] = int((is_clip & fell).sum())
            up = latent_speed[measured & ~fell].double()
            if up.numel():
                entry.update(up_mean_m_s=float(up.mean()), up_max_m_s=float(up.max()))
        out[name] = entry
    return out


def tile_grid(tiles: np.ndarray, columns: int) -> np.ndarray:
    """Tiles `[n, H, W, 3]` row by row into one image `[rows * H, columns * W, 3]` (rows =
    ceil(n / columns)); places without a tile stay black."""
    n, height, width, channels = tiles.shape
    rows = -(-n // columns)
    grid = np.zeros((rows * height, columns * width, channels), dtype=tiles.dtype)
    for i in range(n):
        r, c = divmod(i, columns)
        grid[r * height:(r + 1) * height, c * width:(c + 1) * width] = tiles[i]
    return grid


# ---------------------------------------------------------------------------- measurement envs

def skill_config(cfg: DictConfig, options: SkillOptions) -> DictConfig:
    """A copy of a `test=true` config (task HumanoidASE) for the fixed-latent rollouts: one env
    per latent, every episode from the standing pose (or, with options.start "reference", from
    random reference-motion states; no fall-pool or recovery starts), no time-out before the
    rollout ends, seed `options.seed`."""
    if cfg.task.name != "HumanoidASE":
        raise ConfigError(f"the skill report needs task=HumanoidASE (its fall pool), got task={cfg.task.name}")
    out = copy.deepcopy(cfg)
    with open_dict(out):
        out.num_envs = options.num_latents
        out.seed = options.seed
        out.video = None
        out.viewer = False
        env = out.task.env
        env.state_init = "Default" if options.start == "standing" else "Random"
        env.fall_init_prob = 0.0
        env.recovery_episode_prob = 0.0
        env.phases = []  # the training's schedule of these settings must not override them
        env.enable_early_termination = True  # the fall criterion is what we count
        env.fall_pool_size = 1  # unused here: one state spares simulating a whole pool
        env.max_episode_length = options.steps + 1
    return out


def getup_config(cfg: DictConfig, options: SkillOptions) -> DictConfig:
    """A copy of `skill_config`'s result (after `evaluate.load_policy` has written the
    checkpoint's AMP history length into it) for the getup episodes: every reset from the fall
    pool, early termination off, no time-out within `getup_steps`."""
    out = copy.deepcopy(cfg)
    with open_dict(out):
        env = out.task.env
        env.fall_init_prob = 1.0
        env.fall_pool_size = None  # the env's default, max(num_envs, 64) fallen states
        env.enable_early_termination = False
        env.max_episode_length = options.getup_steps + 1
    return out


# ---------------------------------------------------------------------------- measurements

@dataclass
class LatentRollouts:
    """Per-latent sums of `roll_out_latents` over the steps before a fall (K latents, M clips,
    T steps)."""

    clip_counts: torch.Tensor  # [K, M] steps whose nearest dataset frame lay in each clip
    steps_used: torch.Tensor  # [K] steps before a fall
    error_sum: torch.Tensor  # [K] key-body distance to the nearest frame, m
    speed_sum: torch.Tensor  # [K] horizontal root speed, m/s
    heading_steps: torch.Tensor  # [T, K] signed heading change per step, rad (0 from a fall on)
    height_sum: torch.Tensor  # [K] root height, m
    enc_z_sum: torch.Tensor  # [K] enc(amp_obs) . z
    fall_step: torch.Tensor  # [K] long: control step at which the fall criterion fired, -1: none
    root_xy: torch.Tensor  # [T + 1, K, 2] root path (NaN from a fall on)
    start_heading: torch.Tensor  # [K] root heading at the start, rad
    qpos: np.ndarray | None  # [T + 1, n, nq] MuJoCo qpos of the first n envs (frozen at a fall), for video


def _zeros(k: int, device) -> torch.Tensor:
    return torch.zeros(k, dtype=torch.float64, device=device)


@torch.no_grad()
def roll_out_latents(env, agent, latents: torch.Tensor, steps: int, quality: MotionQuality,
                     record_envs: int = 0) -> LatentRollouts:
    """Run env i with the fixed latent `latents[i]` ([K, D], K = env.num_envs) for `steps`
    control steps from `env.reset()`, deterministic actions; `record_envs`: keep the qpos of
    the first that many envs for a video."""
    k, dev = env.num_envs, env.device
    out = LatentRollouts(torch.zeros(k, quality.num_clips, dtype=torch.long, device=dev), _zeros(k, dev),
                         _zeros(k, dev), _zeros(k, dev), torch.zeros(steps, k, dtype=torch.float64, device=dev),
                         _zeros(k, dev), _zeros(k, dev), torch.full((k,), -1, dtype=torch.long, device=dev),
                         torch.full((steps + 1, k, 2), math.nan, device=dev), _zeros(k, dev), None)
    qpos = [] if record_envs else None
    obs = env.reset()
    state = env.sim.state
    out.root_xy[0] = state.root_pos[:, :2]
    heading = rot.calc_heading(state.root_rot)
    out.start_heading = heading.clone()
    alive = torch.ones(k, dtype=torch.bool, device=dev)
    if qpos is not None:
        qpos.append(np.stack([env.render_state(i) for i in range(record_envs)]))
    for t in range(1, steps + 1):
        obs, _, terminated, truncated, info = env.step(agent.action_mean(obs, latents))
        out.fall_step[terminated & alive] = t
        alive &= ~(terminated | truncated)  # a done env's state is already its next episode's
        state = env.sim.state
        clip, error = quality.nearest(state.root_pos, state.root_rot, state.body_pos)
        new_heading = rot.calc_heading(state.root_rot)
        turn = heading_change(heading, new_heading) * alive
        heading = new_heading
        enc_z = (agent.encode(info["amp_obs"]) * latents).sum(-1)
        used = alive.double()
        rows = alive.nonzero().squeeze(-1)
        out.clip_counts[rows, clip[rows]] += 1
        out.steps_used += used
        out.error_sum += used * error.double().nan_to_num()
        out.speed_sum += used * state.root_lin_vel[:, :2].norm(dim=-1).double().nan_to_num()
        out.heading_steps[t - 1] = turn.double().nan_to_num()
        out.height_sum += used * state.root_pos[:, 2].double().nan_to_num()
        out.enc_z_sum += used * enc_z.double().nan_to_num()
        out.root_xy[t, alive] = state.root_pos[alive, :2]
        if qpos is not None:
            now = np.stack([env.render_state(i) for i in range(record_envs)])
            frozen = ~alive[:record_envs].cpu().numpy()
            now[frozen] = qpos[-1][frozen]
            qpos.append(now)
    out.qpos = np.stack(qpos) if qpos is not None else None
    return out


@dataclass
class GetupResult:
    """What `measure_getup` found, E episodes."""

    stood_up: torch.Tensor  # [E] bool, one per episode
    seconds_to_stand: torch.Tensor  # [E] first standing step in seconds (NaN: never)
    root_min: float  # thresholds used, m
    head_min: float
    start_head_height: torch.Tensor  # [E] m, in the fallen start state
    best_head_height: torch.Tensor  # [E] m, the highest the head got: how far up a failed getup came


@torch.no_grad()
def measure_getup(env, agent, latents: torch.Tensor, episodes: int, steps: int) -> GetupResult:
    """`episodes` getup episodes of `steps` control steps, run env.num_envs at a time from
    `env.reset()` (an env built by `getup_config`: fall-pool starts, no early termination);
    episode e holds latent e mod K. Success: `is_standing` at some step after the start."""
    k, dev = env.num_envs, env.device
    head = head_body_index(env.robot, "the getup measurement")
    root_min, head_min = standing_thresholds(env.default_kinematics.body_pos[0], head)
    stood, seconds, start_head, best_head = [], [], [], []
    for start in range(0, episodes, k):
        obs = env.reset()
        first_step = torch.full((k,), -1, dtype=torch.long, device=dev)
        alive = torch.ones(k, dtype=torch.bool, device=dev)
        head_start = env.sim.state.body_pos[:, head, 2].clone()
        head_best = head_start.clone()
        for t in range(1, steps + 1):
            obs, _, terminated, truncated, _ = env.step(agent.action_mean(obs, latents))
            alive &= ~(terminated | truncated)  # only a non-finite state ends one here
            body_pos = env.sim.state.body_pos
            up = is_standing(body_pos[:, 0, 2], body_pos[:, head, 2], root_min, head_min) & alive
            first_step[up & (first_step < 0)] = t
            head_best = torch.where(alive, torch.maximum(head_best, body_pos[:, head, 2]), head_best)
        n = min(k, episodes - start)
        stood.append(first_step[:n] > 0)
        seconds.append(torch.where(first_step[:n] > 0, first_step[:n] * env.dt, math.nan))
        start_head.append(head_start[:n])
        best_head.append(head_best[:n])
    empty = torch.zeros(0, device=dev)
    return GetupResult(torch.cat(stood) if stood else empty.bool(), torch.cat(seconds) if seconds else empty,
                       root_min, head_min, torch.cat(start_head) if start_head else empty,
                       torch.cat(best_head) if best_head else empty)


# ---------------------------------------------------------------------------- the report

def measure_skills(env, agent, getup_env, options: SkillOptions) -> dict:
    """The skill report (a JSON-ready dict, see `build_report`) of ASE `agent` on `env`
    (`skill_config`, num_envs = options.num_latents) and `getup_env` (`getup_config`); writes
    options.video / options.paths when given."""
    if not hasattr(agent, "encode") or not hasattr(agent, "latent_dim"):
        raise ConfigError(f"the skill report needs an ASE checkpoint, got a {type(agent).__name__}")
    t0 = time.perf_counter()
    generator = torch.Generator(device=env.device).manual_seed(options.seed)
    latents = sample_unit_latents(options.num_latents, agent.latent_dim, generator, env.device)
    if options.mirror_pairs:
        half = options.num_latents // 2
        latents[half:] = mirror_latents(latents[:half])
    quality = MotionQuality(env.motion_lib, env.key_body_ids)
    record = min(options.video_tiles, options.num_latents) if options.video else 0
    rollouts = roll_out_latents(env, agent, latents, options.steps, quality, record)
    getup = measure_getup(getup_env, agent, latents, options.getup_episodes, options.getup_steps)
    clip_speed = clip_root_speeds(env.motion_lib.root_lin_vel, env.motion_lib.motion_num_frames)
    report = build_report(rollouts, getup, quality.clip_names, options, env.dt, clip_speed)
    if options.video:
        report["video"] = str(write_grid_video(options.video, env.mj_model, rollouts, report, env.dt))
    if options.paths:
        report["paths"] = str(write_path_plot(options.paths, rollouts, report))
    report["seconds_taken"] = time.perf_counter() - t0
    return report


def _per_latent_mean(total: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    return torch.where(count > 0, total / count.clamp_min(1), math.nan)


def _plain(values: torch.Tensor) -> list:
    """Tensor `[K]` -> list of floats, NaN as None (JSON has no NaN)."""
    return [None if math.isnan(v) else v for v in values.double().tolist()]


def build_report(rollouts: LatentRollouts, getup: GetupResult, clip_names: list[str],
                 options: SkillOptions, dt: float, clip_speed: torch.Tensor) -> dict:
    """Numbers of the report from the measurements (see the module docstring); per-latent lists
    under `per_latent`, in latent order. `clip_speed [M]`: each clip's mean root speed (m/s)."""
    used = rollouts.steps_used
    skills = majority_clips(rollouts.clip_counts)  # [K]
    coverage, counts = clip_coverage(skills, len(clip_names))
    speed = _per_latent_mean(rollouts.speed_sum, used)
    turn = mean_turning_rate(rollouts.heading_steps, used, round(TURNING_WINDOW_S / dt), dt)
    height = _per_latent_mean(rollouts.height_sum, used)
    enc_z = _per_latent_mean(rollouts.enc_z_sum, used)
    error_cm = 100.0 * _per_latent_mean(rollouts.error_sum, used)
    fell = rollouts.fall_step >= 0
    directions = travel_directions(rollouts.root_xy, rollouts.start_heading)
    moved = torch.isfinite(directions)
    steady_turn = steady_turn_rate(rollouts.heading_steps, used, round(SETTLE_S / dt), dt)
    total_used = float(used.sum())
    return {
        "latents": options.num_latents,
        "seconds": options.steps * dt,
        "seed": options.seed,
        "start": options.start,
        "fall_rate": float(fell.double().mean()),
        "key_body_error_cm": 100.0 * float(rollouts.error_sum.sum()) / total_used if total_used else None,
        "clip_coverage": coverage,
        "num_clips": len(clip_names),
        "clip_counts": dict(zip(clip_names, counts.tolist())),
        "root_speed": spread(speed),
        "speed_by_skill": speed_by_skill(speed, skills, clip_speed, clip_names, fell),
        "turn_rate": spread(turn),
        "travel_direction": {**spread(directions), "span_rad": direction_span(directions),
                             "moved": int(moved.sum()), "min_distance_m": MIN_TRAVEL_M},
        "steady_turn_rate": {**spread(steady_turn), "after_s": SETTLE_S,  # spread skips NaN
                             "right": int((steady_turn < -TURNING_THRESHOLD).sum()),
                             "left": int((steady_turn > TURNING_THRESHOLD).sum()),
                             "threshold": TURNING_THRESHOLD},
        "mirror_pairs": mirror_pair_turns(steady_turn) if options.mirror_pairs else None,
        "root_height": spread(height),
        "enc_z": float(rollouts.enc_z_sum.sum()) / total_used if total_used else None,
        "getup": {
            "episodes": int(getup.stood_up.numel()),
            "success_rate": float(getup.stood_up.double().mean()) if getup.stood_up.numel() else None,
            "seconds": options.getup_steps * dt,
            "mean_seconds_to_stand": spread(getup.seconds_to_stand)["mean"] if bool(getup.stood_up.any()) else None,
            "root_threshold_m": getup.root_min,
            "head_threshold_m": getup.head_min,
            # how far up the episodes came, standing or not (the head's height, m)
            "start_head_height_m": float(getup.start_head_height.mean()) if getup.stood_up.numel() else None,
            "best_head_height_m": float(getup.best_head_height.mean()) if getup.stood_up.numel() else None,
            "stood_up": getup.stood_up.tolist(),
        },
        "per_latent": {
            "skill": [clip_names[i] for i in skills.tolist()],
            "root_speed": _plain(speed),
            "turn_rate": _plain(turn),
            "travel_direction": _plain(directions),
            "steady_turn_rate": _plain(steady_turn),
            "root_height": _plain(height),
            "key_body_error_cm": _plain(error_cm),
            "enc_z": _plain(enc_z),
            "fell": fell.tolist(),
            "fall_time_s": [t * dt if t >= 0 else None for t in rollouts.fall_step.tolist()],
        },
    }


def format_summary(report: dict) -> str:
    """A few human-readable lines of the report."""
    k = report["latents"]
    short = dict(zip(report["clip_counts"], short_clip_names(list(report["clip_counts"]))))
    # the clips some latent does, most latents first (a dataset of 80 clips would fill the screen)
    ranked = sorted(((count, name) for name, count in report["clip_counts"].items() if count > 0), reverse=True)
    clips = ", ".join(f"{short[name]} {count}" for count, name in ranked) or "none"

    def ranged(key: str, unit: str) -> str:
        s = report[key]
        return f"{s['mean']:.2f} +- {s['std']:.2f} {unit} [{s['min']:.2f}, {s['max']:.2f}]"

    getup = report["getup"]
    getup_line = "getup: no episodes"
    if getup["episodes"]:
        stood = sum(getup["stood_up"])
        getup_line = (f"getup: {stood}/{getup['episodes']} fallen starts stand within {getup['seconds']:.1f} s "
                      f"({getup['success_rate']:.2f}; root >= {getup['root_threshold_m']:.2f} m and head >= "
                      f"{getup['head_threshold_m']:.2f} m); head from {getup['start_head_height_m']:.2f} m "
                      f"up to {getup['best_head_height_m']:.2f} m on average")
    error = report["key_body_error_cm"]
    enc_z = report["enc_z"]
    lines = [
        f"skills: {k} fixed latents x {report['seconds']:.1f} s from "
        f"{'standing' if report.get('start', 'standing') == 'standing' else 'reference-motion states'} "
        f"(seed {report['seed']})",
        f"  falls: {sum(report['per_latent']['fell'])}/{k} latents (fall rate {report['fall_rate']:.2f}); "
        f"key-body distance to the dataset {error:.1f} cm" if error is not None else "  no steps measured",
        f"  clip coverage: {report['clip_coverage']} of {report['num_clips']} clips are a latent's skill: {clips}",
        f"  across latents: root speed {ranged('root_speed', 'm/s')}; turning {ranged('turn_rate', 'rad/s')}; "
        f"root height {ranged('root_height', 'm')}",
        f"  {travel_text(report['travel_direction'])}",
        f"  {steady_turn_text(report['steady_turn_rate'])}",
        *mirror_pairs_lines(report.get("mirror_pairs")),
        "  root speed by skill, latents (clip): " + "; ".join(
            f"{short[name]} {skill_speed_text(entry)}"
            for name, entry in report["speed_by_skill"].items() if "mean_m_s" in entry),
        f"  encoder: enc(amp_obs) . z = {enc_z:.3f} (1: latent recoverable from the motion, 0: not)"
        if enc_z is not None else "  encoder: no steps measured",
        f"  {getup_line}",
    ]
    return "\n".join(lines)


def travel_text(travel: dict) -> str:
    """'directions of travel (52 latents that moved >= 1 m): span 115 deg, -15 to +100 deg ...'."""
    if not travel["moved"]:
        return f"directions of travel: no latent moved {travel['min_distance_m']:.0f} m"
    return (f"directions of travel ({travel['moved']} latents that moved >= {travel['min_distance_m']:.0f} m): "
            f"span {math.degrees(travel['span_rad']):.0f} deg, {math.degrees(travel['min']):+.0f} to "
            f"{math.degrees(travel['max']):+.0f} deg from the start heading (+: left)")


def steady_turn_text(turn: dict) -> str:
    if math.isnan(turn["mean"]):
        return "turning once under way: no latent stayed up"
    text = (f"turning once under way (after {turn['after_s']:.0f} s, + left): {turn['mean']:+.2f} +- "
            f"{turn['std']:.2f} rad/s [{turn['min']:+.2f}, {turn['max']:+.2f}]")
    if "right" in turn:  # reports before 2026-12-07 lack the counts
        text += f"; {turn['right']} latents turn right, {turn['left']} left (beyond {turn['threshold']:g} rad/s)"
    return text


def mirror_pairs_lines(pairs: dict | None) -> list[str]:
    if not pairs:
        return []
    if not pairs["pairs"]:
        return ["  mirror pairs: every pair had a latent fall early"]
    return [f"  mirror pairs ({pairs['pairs']}): turning {pairs['mean_abs_turn']:.2f} rad/s on average, "
            f"|turn + mirror's turn| {pairs['mean_abs_asymmetry']:.2f} (0 = symmetric)"]


def skill_speed_text(entry: dict) -> str:
    """'0.45 up to 0.90 m/s (1.51)', plus what the latents that fell leave of it."""
    text = f"{entry['mean_m_s']:.2f} up to {entry['max_m_s']:.2f} m/s ({entry['clip_m_s']:.2f})"
    if entry.get("fell"):
        up = (f"the {entry['latents'] - entry['fell']} up {entry['up_mean_m_s']:.2f} up to "
              f"{entry['up_max_m_s']:.2f}" if "up_mean_m_s" in entry else "none up")
        text += f" [{entry['fell']} of {entry['latents']} fell; {up}]"
    return text


USABLE_TARGETS = {"fall_rate": 0.10, "key_body_error_cm": 10.0, "clip_coverage": 8, "getup_success_rate": 0.70}
"""What makes a controller usable for the hierarchical tasks (issue 54): at most this fall rate
and key-body distance (cm), at least this many clips covered (all of them, in a dataset of
fewer), a latent for each kind of skill in `SKILL_KINDS` the dataset holds, and at least this
getup success."""
# Kinds of skill a usable controller covers, by words in the clips' names; a kind the dataset
# has no clip of is not asked for.
SKILL_KINDS = {"run": ("run", "jog"), "turn": ("turn", "veer"), "strike": ("punch", "kick", "boxing", "sword")}
LOCOMOTION_WORDS = ("walk", "run", "jog")


def covered_and_locomotion_clips(report: dict) -> tuple[set[str], list[str]]:
    """The clips that are some latent's skill, and the dataset's locomotion clips."""
    covered = {name for name, count in report["clip_counts"].items() if count > 0}
    locomotion = [name for name in report["clip_counts"] if any(w in name for w in LOCOMOTION_WORDS)]
    return covered, locomotion


def skill_kinds_covered(report: dict) -> dict[str, bool]:
    """{kind: some latent's skill is a clip of that kind}, for the kinds of SKILL_KINDS the
    dataset holds."""
    covered = {name for name, count in report["clip_counts"].items() if count > 0}
    kinds = {}
    for kind, words in SKILL_KINDS.items():
        of_kind = [name for name in report["clip_counts"] if any(w in name for w in words)]
        if of_kind:
            kinds[kind] = any(name in covered for name in of_kind)
    return kinds


def coverage_target(report: dict) -> int:
    return min(USABLE_TARGETS["clip_coverage"], len(report["clip_counts"]))


def usability(report: dict) -> dict[str, bool]:
    """Which of `USABLE_TARGETS` (and the skill kinds) `report` meets."""
    t = USABLE_TARGETS
    error, getup = report["key_body_error_cm"], report["getup"]["success_rate"]
    kinds = skill_kinds_covered(report)
    return {
        "fall_rate": report["fall_rate"] <= t["fall_rate"],
        "key_body_error_cm": error is not None and error <= t["key_body_error_cm"],
        "clip_coverage": report["clip_coverage"] >= coverage_target(report),
        "skill_kinds": bool(kinds) and all(kinds.values()),
        "getup_success_rate": getup is not None and getup >= t["getup_success_rate"],
    }


def format_usability(report: dict) -> str:
    """One line per target: measured, target, met or not; then the verdict (never advice)."""
    met, t = usability(report), USABLE_TARGETS
    getup = report["getup"]["success_rate"]
    error = report["key_body_error_cm"]
    kinds = skill_kinds_covered(report)
    rows = [
        ("fall rate", f"{report['fall_rate']:.2f} (target <= {t['fall_rate']:.2f})", met["fall_rate"]),
        ("key-body distance", f"{error:.1f} cm (target <= {t['key_body_error_cm']:.0f} cm)" if error is not None
         else "not measured", met["key_body_error_cm"]),
        ("clips covered", f"{report['clip_coverage']} of {len(report['clip_counts'])} (target >= "
                          f"{coverage_target(report)})", met["clip_coverage"]),
        ("kinds of skill", ", ".join(f"{kind} {'yes' if ok else 'no'}" for kind, ok in kinds.items())
         or "none in the dataset", met["skill_kinds"]),
        ("getup in 3 s", f"{getup:.2f} (target >= {t['getup_success_rate']:.2f})" if getup is not None
         else "not measured",
         met["getup_success_rate"]),
    ]
    lines = ["usable controller? (the targets of docs/research-notes.md, ASE pre-training)"]
    lines += [f"  {name}: {value}: {'met' if ok else 'NOT met'}" for name, value, ok in rows]
    lines.append("  verdict: usable for the hierarchical tasks" if all(met.values()) else
                 f"  verdict: not yet ({sum(not ok for ok in met.values())} of {len(met)} targets missed)")
    return "\n".join(lines)


def is_usable(report: dict) -> bool:
    return all(usability(report).values())


# ---------------------------------------------------------------------------- video and plot

def tile_labels(report: dict, count: int) -> list[str]:
    """`"<latent> <skill>"` for the first `count` latents."""
    names = report["per_latent"]["skill"][:count]
    short = dict(zip(report["clip_counts"], short_clip_names(list(report["clip_counts"]))))
    return [f"z{i} {short[name]}" for i, name in enumerate(names)]


def tile_renderer(mj_model):
    """An OffscreenRenderer for one small tile, cheap enough for thousands of frames on a CPU:
    a small shadow map, no multisampling, reflections or skybox (14 ms a tile instead of 190 ms
    with software EGL on 2 busy cores), the camera closer than for a full-size video."""
    import mujoco

    from ase_humanoid.utils.render import OffscreenRenderer

    model = copy.deepcopy(mj_model)  # the env's model keeps its settings
    model.vis.quality.shadowsize = TILE_SHADOW_MAP
    model.vis.quality.offsamples = 0
    renderer = OffscreenRenderer(model, width=TILE_WIDTH, height=TILE_HEIGHT)
    for flag in (mujoco.mjtRndFlag.mjRND_REFLECTION, mujoco.mjtRndFlag.mjRND_SKYBOX):
        renderer.renderer.scene.flags[flag] = False
    renderer.camera.distance = TILE_CAMERA_DISTANCE
    return renderer


def write_grid_video(path: str | Path, mj_model, rollouts: LatentRollouts, report: dict, dt: float) -> Path:
    """One tile per recorded latent (a camera following its character, labelled with the latent
    and its skill; frozen from a fall on), tiles in a square-ish grid, as .mp4 or .gif; a frame
    every VIDEO_FRAME_STRIDE control steps of `dt` seconds."""
    from ase_humanoid.utils.render import write_video

    qpos = rollouts.qpos  # [T + 1, n, nq]
    n = qpos.shape[1]
    columns = math.ceil(math.sqrt(n))
    labels = tile_labels(report, n)
    fall_step = rollouts.fall_step[:n].tolist()
    renderer = tile_renderer(mj_model)
    try:
        frames = []
        for t in range(0, qpos.shape[0], VIDEO_FRAME_STRIDE):
            tiles = [renderer.render(qpos[t, i], text=[labels[i] + (" fell" if 0 <= fall_step[i] <= t else "")])
                     for i in range(n)]
            frames.append(tile_grid(np.stack(tiles), columns))
    finally:
        renderer.close()
    return write_video(path, frames, fps=1.0 / (VIDEO_FRAME_STRIDE * dt))


def write_path_plot(path: str | Path, rollouts: LatentRollouts, report: dict) -> Path:
    """Top-down root paths (x-y, m) of every latent, coloured by its skill clip (legend: clip and
    number of latents); an x marks where a latent fell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["clip_counts"])
    colours = {name: plt.get_cmap("tab10")(i % 10) for i, name in enumerate(names)}
    short = dict(zip(names, short_clip_names(names)))
    xy = rollouts.root_xy.cpu().numpy()  # [T + 1, K, 2]
    fig, ax = plt.subplots(figsize=(7, 7))
    for i, skill in enumerate(report["per_latent"]["skill"]):
        path_i = xy[:, i][np.isfinite(xy[:, i]).all(-1)]
        ax.plot(path_i[:, 0], path_i[:, 1], color=colours[skill], lw=1.0, alpha=0.8)
        if report["per_latent"]["fell"][i] and len(path_i):
            ax.plot(path_i[-1, 0], path_i[-1, 1], "x", color=colours[skill], ms=6)
    for name in names:
        if report["clip_counts"][name]:
            ax.plot([], [], color=colours[name], label=f"{short[name]} ({report['clip_counts'][name]})")
    ax.plot(0, 0, "ko", ms=4)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.set_title(f"root paths of {report['latents']} latents, {report['seconds']:.0f} s (x: fell)")
    ax.legend(title="skill (latents)", loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
