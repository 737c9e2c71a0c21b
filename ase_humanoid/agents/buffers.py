"""Rollout storage and the AMP demo / replay sample buffers, all preallocated on one device."""

from __future__ import annotations

import torch


def indices_without_replacement(count: int, n: int, generator: torch.Generator,
                                device: torch.device) -> torch.Tensor:
    """`[n]` row indices into `count` rows: random permutations of range(count) laid end to end
    and cut at n, so no row repeats before every row has been drawn once."""
    passes = -(-n // count)
    keys = torch.rand((passes, count), generator=generator, device=device)
    return keys.argsort(dim=1).reshape(-1)[:n]


class RolloutBuffer:
    """Per-step tensors of one rollout: `data[name]` is `[horizon, num_envs, *shape]`.

    `add(**tensors)` writes step `step` (each tensor `[num_envs, *shape]`) and advances it;
    `reset()` starts a new rollout over the same storage.
    """

    def __init__(self, horizon: int, num_envs: int, specs: dict[str, tuple[tuple[int, ...], torch.dtype]],
                 device: torch.device):
        self.horizon = horizon
        self.num_envs = num_envs
        self.data = {name: torch.zeros((horizon, num_envs, *shape), dtype=dtype, device=device)
                     for name, (shape, dtype) in specs.items()}
        self.step = 0

    @property
    def full(self) -> bool:
        return self.step >= self.horizon

    def add(self, **tensors: torch.Tensor) -> None:
        if self.full:
            raise RuntimeError(f"rollout buffer already holds horizon_length={self.horizon} steps; "
                               "call update() before recording more transitions")
        missing = set(self.data) - set(tensors)
        if missing:
            raise KeyError(f"rollout step is missing {sorted(missing)}")
        for name, value in tensors.items():
            self.data[name][self.step] = value
        self.step += 1

    def reset(self) -> None:
        self.step = 0

    def flat(self, name: str) -> torch.Tensor:
        """`data[name]` as `[horizon * num_envs, *shape]` (time-major)."""
        t = self.data[name]
        return t.reshape(-1, *t.shape[2:])


class SampleBuffer:
    """Fixed-capacity ring of samples `[capacity, dim]`: stores overwrite the oldest entries.

    Used for the AMP demo buffer (refreshed from the motion data) and as the storage of the
    replay buffer.
    """

    def __init__(self, capacity: int, dim: int, device: torch.device, dtype=torch.float32):
        self.capacity = capacity
        self.samples = torch.zeros((capacity, dim), dtype=dtype, device=device)
        self.head = 0  # next slot to write
        self.count = 0  # filled slots, <= capacity
        self.total_stored = 0  # samples ever stored

    def __len__(self) -> int:
        return self.count

    @property
    def is_full(self) -> bool:
        return self.count >= self.capacity

    def store(self, x: torch.Tensor) -> None:
        """Append `x [n, dim]`; when n > capacity only the last `capacity` rows are kept."""
        slots, keep = self._advance(x.shape[0])
        self.samples[slots] = x[keep:].to(self.samples.dtype)

    def _advance(self, n: int) -> tuple[torch.Tensor, int]:
        """Reserve slots for n new rows: (slots [m], index of the first row kept), m = min(n, capacity)."""
        self.total_stored += n
        keep = max(0, n - self.capacity)
        m = n - keep
        slots = (self.head + torch.arange(m, device=self.samples.device)) % self.capacity
        self.head = (self.head + m) % self.capacity
        self.count = min(self.count + m, self.capacity)
        return slots, keep

    def sample(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """`[n, dim]` drawn uniformly with replacement from the filled slots."""
        if self.count == 0:
            raise RuntimeError("cannot sample from an empty buffer")
        idx = torch.randint(0, self.count, (n,), generator=generator, device=self.samples.device)
        return self.samples[idx]

    def sample_indices_without_replacement(self, n: int, generator: torch.Generator) -> torch.Tensor:
        """`[n]` indices of filled slots, each used once before any repeats (rows: `samples[idx]`)."""
        if self.count == 0:
            raise RuntimeError("cannot sample from an empty buffer")
        return indices_without_replacement(self.count, n, generator, self.samples.device)

    def state_dict(self, include_samples: bool = True) -> dict:
        state = {"head": self.head, "count": self.count, "total_stored": self.total_stored,
                 "capacity": self.capacity, "dim": self.samples.shape[1]}
        if include_samples:
            state["samples"] = self.samples[: self.count].clone()
        return state

    def load_state_dict(self, state: dict) -> None:
        if "journal" in state:  # the samples live in a journal file only the runner can locate
            raise ValueError("this buffer state refers to a replay journal (run_dir/replay/); load the "
                             "checkpoint through Runner.load_state_dict / train.py resume=true")
        if state["capacity"] != self.capacity or state["dim"] != self.samples.shape[1]:
            raise ValueError(f"buffer of capacity {state['capacity']} x {state['dim']} does not fit "
                             f"{self.capacity} x {self.samples.shape[1]}")
        if "samples" in state:
            self.head, self.count = state["head"], state["count"]
            self.samples[: self.count] = state["samples"].to(self.samples.device)
        else:  # contents were not saved: start empty
            self.head, self.count = 0, 0
        self.total_stored = state["total_stored"]


class DemoKeyBuffer(SampleBuffer):
    """The AMP demo buffer, checkpointed as the keys its samples are a function of.

    Each demo sample is the AMP observation of the motion data at (motion id, start time), so a
    checkpoint stores those keys (12 bytes a sample instead of amp_obs_dim floats) and loading
    recomputes the samples with `samples_from_keys`, bit for bit (the motion library's
    evaluation is elementwise, so it does not depend on how the keys are batched).

    Args:
        samples_from_keys: (motion_ids [n] long, start_times [n]) -> [n, dim].
    """

    RECOMPUTE_CHUNK = 8192  # keys per call when recomputing after a load (bounds memory)

    def __init__(self, capacity: int, dim: int, device: torch.device, samples_from_keys):
        super().__init__(capacity, dim, device)
        self.samples_from_keys = samples_from_keys
        self.motion_ids = torch.zeros(capacity, dtype=torch.long, device=device)
        self.start_times: torch.Tensor | None = None  # dtype of the first keys stored
        self.has_keys = True  # False after loading an older checkpoint that saved samples

    def store_with_keys(self, x: torch.Tensor, motion_ids: torch.Tensor, start_times: torch.Tensor) -> None:
        """Append samples `x [n, dim]` and their keys `motion_ids [n]`, `start_times [n]`."""
        if self.start_times is None:
            self.start_times = torch.zeros(self.capacity, dtype=start_times.dtype, device=self.samples.device)
        slots, keep = self._advance(x.shape[0])
        self.samples[slots] = x[keep:].to(self.samples.dtype)
        self.motion_ids[slots] = motion_ids[keep:].to(self.motion_ids.device)
        self.start_times[slots] = start_times[keep:].to(self.start_times.device)

    def store(self, x: torch.Tensor) -> None:
        self.has_keys = False  # samples without keys: checkpoints must hold the samples
        super().store(x)

    def state_dict(self, include_samples: bool = True) -> dict:
        if not (include_samples and self.has_keys and self.start_times is not None):
            return super().state_dict(include_samples)
        state = super().state_dict(include_samples=False)
        state["motion_ids"] = self.motion_ids[: self.count].clone()
        state["start_times"] = self.start_times[: self.count].clone()
        return state

    def load_state_dict(self, state: dict) -> None:
        if "motion_ids" not in state:
            super().load_state_dict(state)
            if "samples" in state:
                self.has_keys = False
            return
        super().load_state_dict({k: v for k, v in state.items() if k not in ("motion_ids", "start_times")})
        count = int(state["count"])
        ids, times = state["motion_ids"], state["start_times"]
        if ids.shape != (count,) or times.shape != (count,):
            raise ValueError(f"demo keys of shape {tuple(ids.shape)} / {tuple(times.shape)} do not match "
                             f"count {count}")
        device = self.samples.device
        self.start_times = torch.zeros(self.capacity, dtype=times.dtype, device=device)
        self.motion_ids[:count] = ids.to(device)
        self.start_times[:count] = times.to(device)
        for lo in range(0, count, self.RECOMPUTE_CHUNK):
            hi = min(count, lo + self.RECOMPUTE_CHUNK)
            self.samples[lo:hi] = self.samples_from_keys(self.motion_ids[lo:hi], self.start_times[lo:hi])
        self.head, self.count, self.has_keys = int(state["head"]), count, True


class ReplayBuffer(SampleBuffer):
    """AMP replay of past agent observations.

    Until the buffer is full every sample is stored; afterwards each new sample is kept with
    probability `keep_prob` (overwriting the oldest), so the buffer spans many past policies.
    """

    def __init__(self, capacity: int, dim: int, keep_prob: float, device: torch.device):
        super().__init__(capacity, dim, device)
        self.keep_prob = keep_prob

    def insert(self, x: torch.Tensor, generator: torch.Generator) -> int:
        """Offer `x [n, dim]`; returns how many rows were stored."""
        if self.is_full:
            keep = torch.rand(x.shape[0], generator=generator, device=x.device) < self.keep_prob
            x = x[keep]
        self.store(x)
        return x.shape[0]
