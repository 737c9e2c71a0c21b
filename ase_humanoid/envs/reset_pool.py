"""Random draws made ahead in batches and handed out one by one (reference-state resets).

A reference-state reset needs a MotionLib query for the new state and the frames of its AMP
history, the AMP observations of those frames and the new state's body kinematics: a few hundred
small tensor ops whose cost hardly depends on how many envs they serve. A handful of envs reset
every control step, so drawn on demand that cost is paid every step; drawn `size` at a time it
is paid once per `size` resets (at 256 envs on a CPU it was the largest part of the env's own
work per step).

Every entry is an independent draw and is handed out exactly once, so the resets follow the same
distribution as draws made on demand; only the order in which the random generator is used
differs. The undrawn entries are part of the env's checkpoint (`state_dict`), so a resumed run
continues with the same resets.
"""

from __future__ import annotations

from typing import Callable


Batch = dict  # name -> tensor [n, ...]: the fields of one batch of draws


class DrawAhead:
    """Hands out rows of batches made by `draw(count)` (a `Batch` of `count` independent draws).

    `take(n)` returns the next n rows (views of the current batch); when fewer than n are left the
    rest is dropped (they are independent draws, so dropping them biases nothing) and a new batch
    of max(size, n) is drawn.
    """

    def __init__(self, draw: Callable[[int], Batch], size: int, device=None):
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self._draw = draw
        self.size = int(size)
        self.device = device
        self._batch: Batch = {}
        self._count = 0  # rows in the current batch
        self._next = 0  # first row not handed out yet

    @property
    def available(self) -> int:
        return self._count - self._next

    def take(self, n: int) -> Batch:
        """The next `n` draws, each field `[n, ...]`."""
        if n > self.available or not self._batch:
            self._batch = self._draw(max(self.size, n))
            self._count = next(iter(self._batch.values())).shape[0]
            self._next = 0
        rows = slice(self._next, self._next + n)
        self._next += n
        return {name: value[rows] for name, value in self._batch.items()}

    def discard(self) -> None:
        """Drop the draws not handed out yet: the next `take` draws a fresh batch (for when the
        distribution the draws follow has changed)."""
        self._batch = {}
        self._count = self._next = 0

    def state_dict(self) -> dict:
        return {"batch": {name: value[self._next:].clone() for name, value in self._batch.items()}}

    def load_state_dict(self, state: dict) -> None:
        self._batch = {name: value.to(self.device) for name, value in state["batch"].items()}
        self._count = next(iter(self._batch.values())).shape[0] if self._batch else 0
        self._next = 0
