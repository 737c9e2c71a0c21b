"""The skill report's measures: pure functions of rollout tensors (K latents, T steps), shapes
in their docstrings, and the per-latent sums they are taken from (`LatentRollouts`). What they mean is in `analysis.skill_report`'s docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ase_humanoid.utils import rotations as rot


STANDING_FRACTION = 0.8
"""Getup success: root and head at least this share of their standing-pose heights. For the AMP
humanoid: root 0.8 x 0.89 = 0.71 m, head 0.8 x 1.35 = 1.08 m; the walk clip's median heights
(0.82 m, 1.28 m) and even its lowest head height (1.22 m) pass, a character on its knees does not."""
TURNING_WINDOW_S = 0.5
"""Turning rates are heading changes over windows this long: step by step, the pelvis's yaw swing
within a stride counts as turning (the walk clip: 0.59 rad/s step by step, 0.33 over 0.5 s)."""
MIN_TRAVEL_M = 1.0
"""A latent has a direction of travel only if its root ends at least this far from its start."""
SETTLE_S = 2.0
"""`steady_turn_rate` leaves out the first this many seconds: setting off from standing."""
TURNING_THRESHOLD = 0.1
"""rad/s: a latent whose steady turn rate is beyond this turns (right below -it, left above it)."""


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
