"""Motion quality that does not trust the discriminator.

A discriminator's reward says how well the agent fools *that* discriminator; it drifts as the
discriminator learns and can be gamed. This metric asks the data directly: how far (cm) are the
simulated key bodies (hands, feet, ...) from where they are in the *nearest frame* of the motion
dataset, with both poses put root-relative in their heading frame (so where the character stands
and which way it faces do not matter)? A walking character scores a few cm, a fallen or
flailing one tens of cm. Next to it: the mean horizontal root speed (m/s) of the probed envs.

`MotionQuality` holds the dataset's pose features; `MotionQualityProbe` measures a subset of a
running env's worlds step by step (the runner does this every few epochs, evaluation every step).
"""

from __future__ import annotations

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


def nearest_frame_error(features: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Mean key-body distance (m) to the nearest reference frame.

    features [n, K, 3], reference [F, K, 3] -> [n]. The nearest frame is the one with the
    smallest summed squared distance over the key bodies; the error is the mean Euclidean
    distance of the key bodies at that frame.
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
    return (features - nearest).norm(dim=-1).mean(-1)


class MotionQuality:
    """Pose features of every frame of a MotionLib, for `key_body_error`.

    `key_body_ids`: the bodies compared (the env's AMP key bodies). Frames come from the
    library's packed per-frame body positions (`motion_lib.body_pos [F, B, 3]`).
    """

    def __init__(self, motion_lib, key_body_ids: torch.Tensor):
        self.key_body_ids = torch.as_tensor(key_body_ids, dtype=torch.long, device=motion_lib.device)
        key_pos = motion_lib.body_pos.index_select(1, self.key_body_ids)
        self.reference = key_body_pose_features(motion_lib.root_pos, motion_lib.root_rot, key_pos)  # [F, K, 3]

    def key_body_error(self, root_pos: torch.Tensor, root_rot: torch.Tensor,
                       body_pos: torch.Tensor) -> torch.Tensor:
        """Per-env error (m) `[n]` of simulated states: root_pos [n, 3], root_rot [n, 4],
        body_pos [n, B, 3] (all bodies; the key bodies are picked here)."""
        key_pos = body_pos.index_select(1, self.key_body_ids.to(body_pos.device))
        features = key_body_pose_features(root_pos, root_rot, key_pos)
        return nearest_frame_error(features, self.reference.to(features.device, features.dtype))


class MotionQualityProbe:
    """Accumulates motion quality over control steps on the first `num_envs` worlds of `env`.

    Call `observe(done)` after each `env.step` (done [N] bool: envs whose episode ended this
    step; their state is already a fresh reset and is skipped), then `pop_means()`.
    """

    def __init__(self, env, num_envs: int = 32):
        self.env = env
        self.quality = MotionQuality(env.motion_lib, env.key_body_ids)
        self.env_ids = torch.arange(min(num_envs, env.num_envs), device=env.device)
        self._error_sum = 0.0
        self._speed_sum = 0.0
        self._count = 0

    @staticmethod
    def available(env) -> bool:
        """Whether `env` has what the probe reads (a motion library and key bodies)."""
        return getattr(env, "motion_lib", None) is not None and hasattr(env, "key_body_ids")

    @torch.no_grad()
    def observe(self, done: torch.Tensor | None = None) -> None:
        ids = self.env_ids
        if done is not None:
            ids = ids[~done.to(ids.device).index_select(0, ids)]
        if ids.numel() == 0:
            return
        state = self.env.sim.state
        root_pos, root_rot = state.root_pos.index_select(0, ids), state.root_rot.index_select(0, ids)
        error = self.quality.key_body_error(root_pos, root_rot, state.body_pos.index_select(0, ids))
        speed = state.root_lin_vel.index_select(0, ids)[:, :2].norm(dim=-1)
        finite = torch.isfinite(error) & torch.isfinite(speed)
        self._error_sum += float(error[finite].sum())
        self._speed_sum += float(speed[finite].sum())
        self._count += int(finite.sum())

    def pop_means(self) -> dict[str, float]:
        """`quality/key_body_error_cm`, `quality/root_speed` (m/s) since the last call ({} if
        nothing was observed)."""
        if self._count == 0:
            return {}
        out = {"quality/key_body_error_cm": 100.0 * self._error_sum / self._count,
               "quality/root_speed": self._speed_sum / self._count}
        self._error_sum, self._speed_sum, self._count = 0.0, 0.0, 0
        return out
