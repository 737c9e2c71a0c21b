"""Motion quality that does not trust the discriminator.

A discriminator's reward says how well the agent fools *that* discriminator; it drifts as the
discriminator learns and can be gamed. This metric asks the data directly: how far (cm) are the
simulated key bodies (hands, feet, ...) from where they are in the *nearest frame* of the motion
dataset, with both poses put root-relative in their heading frame (so where the character stands
and which way it faces do not matter)? A walking character scores a few cm, a fallen or
flailing one tens of cm. Next to it: the mean horizontal root speed (m/s) of the probed envs.

The nearest frame also says *which clip* a pose resembles most: a world's "skill" is the clip
whose frames are nearest most often (`clip_of_frames`, `majority_clips`), and the number of
distinct skills among worlds (`clip_coverage`) says how much of the dataset a policy reproduces
(an ASE controller whose latents all walk covers one clip). `ase_humanoid/analysis/skill_report.py` builds its
skill report from these.

`MotionQuality` holds the dataset's pose features; `MotionQualityProbe` measures a subset of a
running env's worlds step by step (the runner does this every few epochs, evaluation every step).
"""

from __future__ import annotations

import os

import torch

from ase_humanoid.utils import rotations as rot

CHUNK_FRAMES = 4096  # reference frames compared per block (bounds memory for large datasets)


def key_body_pose_features(root_pos: torch.Tensor, root_rot: torch.Tensor,
                           key_body_pos: torch.Tensor) -> torch.Tensor:
    """Key-body positions relative to the root, in the root's heading frame.

    root_pos [n, 3], root_rot [n, 4] (xyzw), key_body_pos [n, K, 3] -> [n, K, 3].
    """
    heading_inv = rot.calc_heading_quat_inv(root_rot)  # [n, 4]
    rel = key_body_pos - root_pos.unsqueeze(1)
    return rot.quat_rotate(heading_inv.unsqueeze(1).expand(-1, rel.shape[1], -1), rel)


def nearest_frames(features: torch.Tensor, reference: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Nearest reference frame and the mean key-body distance (m) to it.

    features [n, K, 3], reference [F, K, 3] -> (frame index [n] long into reference, error [n]).
    The nearest frame is the one with the smallest summed squared distance over the key bodies;
    the error is the mean Euclidean distance of the key bodies at that frame.
    """
    n = features.shape[0]
    flat = features.reshape(n, -1)
    best_d2 = torch.full((n,), float("inf"), device=features.device, dtype=features.dtype)
    best_frame = torch.zeros(n, dtype=torch.long, device=features.device)
    for start in range(0, reference.shape[0], CHUNK_FRAMES):
        block = reference[start:start + CHUNK_FRAMES].reshape(-1, flat.shape[1])
        # squared distances by one matmul: |a|^2 - 2 a.b + |b|^2 (only the argmin uses them)
        d2 = flat.square().sum(-1, keepdim=True) - 2.0 * flat @ block.T + block.square().sum(-1)  # [n, f]
        value, index = d2.min(dim=1)
        better = value < best_d2
        best_d2 = torch.where(better, value, best_d2)
        best_frame = torch.where(better, index + start, best_frame)
    nearest = reference.index_select(0, best_frame)  # [n, K, 3]
    return best_frame, (features - nearest).norm(dim=-1).mean(-1)


def nearest_frame_error(features: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Mean key-body distance (m) to the nearest reference frame: features [n, K, 3],
    reference [F, K, 3] -> [n] (see `nearest_frames`)."""
    return nearest_frames(features, reference)[1]


def clip_of_frames(frames: torch.Tensor, clip_starts: torch.Tensor) -> torch.Tensor:
    """Clip index `[n]` of packed frame indices `frames [n]`, given each clip's first frame
    `clip_starts [M]` (ascending, MotionLib.motion_start)."""
    return torch.searchsorted(clip_starts, frames, right=True) - 1


def majority_clips(clip_counts: torch.Tensor) -> torch.Tensor:
    """Each row's most frequent clip: clip_counts [n, M] (how often each clip held the nearest
    frame) -> [n] long; ties go to the lower clip index."""
    return clip_counts.argmax(dim=-1)


def clip_coverage(skill_clips: torch.Tensor, num_clips: int) -> tuple[int, torch.Tensor]:
    """(number of distinct clips in `skill_clips [n]`, latents per clip `[num_clips]` long)."""
    counts = torch.bincount(skill_clips.long().flatten(), minlength=num_clips)
    return int((counts > 0).sum()), counts


def short_clip_names(names: list[str]) -> list[str]:
    """Clip names without the prefix they all share up to an underscore
    (`amp_humanoid_walk` -> `walk`), for labels; unchanged when there is none."""
    if len(names) < 2:
        return [name.rpartition("_")[2] or name for name in names]
    cut = os.path.commonprefix(names).rfind("_") + 1
    return [name[cut:] or name for name in names]


class MotionQuality:
    """Pose features of every frame of a MotionLib, for `key_body_error` / `nearest`.

    `key_body_ids`: the bodies compared (the env's AMP key bodies). Frames come from the
    library's packed per-frame body positions (`motion_lib.body_pos [F, B, 3]`); `clip_names`
    [M] and `clip_starts` [M] (first packed frame of each clip) name the clip of a frame.
    """

    def __init__(self, motion_lib, key_body_ids: torch.Tensor):
        self.key_body_ids = torch.as_tensor(key_body_ids, dtype=torch.long, device=motion_lib.device)
        key_pos = motion_lib.body_pos.index_select(1, self.key_body_ids)
        self.reference = key_body_pose_features(motion_lib.root_pos, motion_lib.root_rot, key_pos)  # [F, K, 3]
        self.clip_names = list(motion_lib.motion_names)
        self.clip_starts = motion_lib.motion_start.clone()

    @property
    def num_clips(self) -> int:
        return len(self.clip_names)

    def nearest(self, root_pos: torch.Tensor, root_rot: torch.Tensor,
                body_pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(clip of the nearest dataset frame `[n]` long, key-body error (m) `[n]`) of simulated
        states: root_pos [n, 3], root_rot [n, 4], body_pos [n, B, 3] (all bodies; the key bodies
        are picked here)."""
        key_pos = body_pos.index_select(1, self.key_body_ids.to(body_pos.device))
        features = key_body_pose_features(root_pos, root_rot, key_pos)
        frames, error = nearest_frames(features, self.reference.to(features.device, features.dtype))
        return clip_of_frames(frames, self.clip_starts.to(frames.device)), error

    def key_body_error(self, root_pos: torch.Tensor, root_rot: torch.Tensor,
                       body_pos: torch.Tensor) -> torch.Tensor:
        """Per-env error (m) `[n]` of simulated states (arguments as `nearest`)."""
        return self.nearest(root_pos, root_rot, body_pos)[1]


MAX_PLAUSIBLE_ROOT_SPEED = 50.0  # m/s; the fastest clip here moves at 3.4


class MotionQualityProbe:
    """Accumulates motion quality over control steps on the first `num_envs` worlds of `env`.

    Call `observe(done)` after each `env.step` (done [N] bool: envs whose episode ended this
    step; their state is already a fresh reset and is skipped), then `pop_means()` for the
    quality numbers and `pop_skill_stats()` for how the worlds differ (each pops its own sums).
    """

    def __init__(self, env, num_envs: int = 32):
        self.env = env
        self.quality = MotionQuality(env.motion_lib, env.key_body_ids)
        self.env_ids = torch.arange(min(num_envs, env.num_envs), device=env.device)
        self._error_sum = 0.0
        self._speed_sum = 0.0
        self._count = 0
        self._reset_skill_sums()

    def _reset_skill_sums(self) -> None:
        n, dev = len(self.env_ids), self.env.device
        self._clip_counts = torch.zeros(n, self.quality.num_clips, dtype=torch.long, device=dev)  # [n, M]
        self._world_speed_sum = torch.zeros(n, device=dev)
        self._world_count = torch.zeros(n, device=dev)
        self._enc_z_sum = 0.0
        self._enc_z_count = 0

    @staticmethod
    def available(env) -> bool:
        """Whether `env` has what the probe reads (a motion library and key bodies)."""
        return getattr(env, "motion_lib", None) is not None and hasattr(env, "key_body_ids")

    @torch.no_grad()
    def observe(self, done: torch.Tensor | None = None, enc_z: torch.Tensor | None = None) -> None:
        """`done [N]` bool (see class docstring); `enc_z [len(env_ids)]`: an ASE agent's
        enc(amp_obs) . z of the probed worlds this step (optional)."""
        rows = torch.arange(len(self.env_ids), device=self.env_ids.device)  # probe rows
        if done is not None:
            rows = rows[~done.to(rows.device).index_select(0, self.env_ids)]
        if rows.numel() == 0:
            return
        ids = self.env_ids.index_select(0, rows)
        state = self.env.sim.state
        root_pos, root_rot = state.root_pos.index_select(0, ids), state.root_rot.index_select(0, ids)
        clip, error = self.quality.nearest(root_pos, root_rot, state.body_pos.index_select(0, ids))
        speed = state.root_lin_vel.index_select(0, ids)[:, :2].norm(dim=-1)
        # a world blowing up passes through huge finite states before the env resets it as
        # non-finite: left out here too, so one such world cannot swamp the batch's means
        finite = torch.isfinite(error) & torch.isfinite(speed) & (speed < MAX_PLAUSIBLE_ROOT_SPEED)
        self._error_sum += float(error[finite].sum())
        self._speed_sum += float(speed[finite].sum())
        self._count += int(finite.sum())
        rows, clip, speed = rows[finite], clip[finite], speed[finite]
        self._clip_counts.index_put_((rows, clip), torch.ones_like(clip), accumulate=True)
        self._world_speed_sum.index_add_(0, rows, speed)
        self._world_count.index_add_(0, rows, torch.ones_like(speed))
        if enc_z is not None:
            enc_z = enc_z.to(rows.device).index_select(0, rows)
            enc_z = enc_z[torch.isfinite(enc_z)]
            self._enc_z_sum += float(enc_z.sum())
            self._enc_z_count += int(enc_z.numel())

    def pop_means(self) -> dict[str, float]:
        """`quality/key_body_error_cm`, `quality/root_speed` (m/s) since the last call ({} if
        nothing was observed)."""
        if self._count == 0:
            return {}
        out = {"quality/key_body_error_cm": 100.0 * self._error_sum / self._count,
               "quality/root_speed": self._speed_sum / self._count}
        self._error_sum, self._speed_sum, self._count = 0.0, 0.0, 0
        return out

    def pop_clip_shares(self, top: int = 6) -> dict[str, float]:
        """`quality/nearest_clip/<clip>`: the share of observed frames whose nearest dataset frame
        lies in that clip, for the `top` clips with the largest nonzero shares (which clips a policy looks
        like; a policy that stands still in one clip's poses shows up here), and resets those
        counts ({} if nothing was observed). Call before `pop_skill_stats`, which resets them too."""
        per_clip = self._clip_counts.sum(dim=0).double()  # [M]
        total = float(per_clip.sum())
        self._clip_counts.zero_()
        if total == 0:
            return {}
        shares = per_clip / total
        names = short_clip_names(self.quality.clip_names)
        order = torch.argsort(shares, descending=True, stable=True)[:top]
        return {f"quality/nearest_clip/{names[i]}": float(shares[i]) for i in order.tolist() if shares[i] > 0}

    def pop_skill_stats(self) -> dict[str, float]:
        """How the probed worlds differ since the last call ({} if nothing was observed):
        `skills/clip_coverage` (distinct clips among the worlds' majority nearest clips),
        `skills/root_speed_std` (std across worlds of each world's mean root speed, m/s) and,
        when `enc_z` was given, `skills/enc_z` (its mean)."""
        seen = self._world_count > 0
        if not bool(seen.any()):
            self._reset_skill_sums()
            return {}
        coverage, _ = clip_coverage(majority_clips(self._clip_counts[seen]), self.quality.num_clips)
        world_speed = self._world_speed_sum[seen] / self._world_count[seen]
        out = {"skills/clip_coverage": float(coverage),
               "skills/root_speed_std": float(world_speed.std(unbiased=False))}
        if self._enc_z_count:
            out["skills/enc_z"] = self._enc_z_sum / self._enc_z_count
        self._reset_skill_sums()
        return out
