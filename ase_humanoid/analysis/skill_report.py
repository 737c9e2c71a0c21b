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

Layout: this module holds the configs of the two measurement envs, the measurements, the report
and its summary; the measures are pure functions in `skill_measures`, the grid video and path
plot in `skill_media`, the usability verdict in `skill_targets`. Loading a checkpoint is
`evaluate.skill_report`'s job (this room sits below the run's).
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from omegaconf import DictConfig, open_dict

from ase_humanoid.agents.ase import sample_unit_latents
from ase_humanoid.agents.networks import mirror_latents
from ase_humanoid.analysis.skill_measures import (
    LatentRollouts,
    MIN_TRAVEL_M,
    SETTLE_S,
    TURNING_THRESHOLD,
    TURNING_WINDOW_S,
    clip_root_speeds,
    direction_span,
    heading_change,
    is_standing,
    mean_turning_rate,
    mirror_pair_turns,
    speed_by_skill,
    spread,
    standing_thresholds,
    steady_turn_rate,
    travel_directions,
)
from ase_humanoid.analysis.skill_media import write_grid_video, write_path_plot
from ase_humanoid.envs.humanoid_ase import head_body_index
from ase_humanoid.envs.motion_quality import MotionQuality, clip_coverage, majority_clips, short_clip_names
from ase_humanoid.errors import ConfigError
from ase_humanoid.utils import rotations as rot


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
