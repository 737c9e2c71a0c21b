"""BVH (Biovision hierarchy) reader -> MotionClip on the file's own skeleton.

Conventions read from the file, not assumed: each joint's CHANNELS may list its rotations in any
order (the joint's local rotation is R_first R_second R_third, the usual BVH reading) and may
include position channels. Position channel values replace the joint's OFFSET components on the
axes they name (what Blender and most tools do). A root with position channels gives the clip's
root translation; on other joints position channels must be constant over the clip (many
exporters write them that way), because a MotionClip animates the root translation only.
End Sites carry no motion and are not made into joints.

Positions stay in the file's units times `scale` (CMU BVH conversions: 1 unit = 0.056444 m,
`CMU_UNITS_TO_M`). Axes stay the file's (CMU: y up). Line endings may be LF, CRLF or mixed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.files import read_motion_bytes
from ase_humanoid.motion.clip import PLAUSIBLE_FPS_RANGE, MotionClip
from ase_humanoid.motion.skeleton import Skeleton
from ase_humanoid.utils import rotations as rot

CMU_UNITS_TO_M = 0.056444  # CMU mocap length unit: 1/0.45 inch
_AXES = {"x": 0, "y": 1, "z": 2}
# Tolerance (file units) under which non-root position channels count as constant.
_CONSTANT_POSITION_TOL = 1e-3
# Largest channel value read as data (positions in file units, angles in degrees: a km in cm, or
# thousands of turns): beyond it a value is corruption, and 1e308 would overflow to NaN later,
# in velocities computed far from the file's name.
MAX_CHANNEL_VALUE = 1e6


@dataclass
class _Joint:
    name: str
    parent: int
    offset: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    channels: list[str] = field(default_factory=list)
    first_column: int = 0


def load_bvh(path, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> MotionClip:
    """Read a BVH file. Positions (offsets, root translation) are multiplied by `scale`;
    the clip's fps is 1 / Frame Time (snapped to a whole number when within 1e-4 of one)."""
    path = Path(path)
    text = _read_text(path)
    lines = text.splitlines()
    motion_line = next((i for i, line in enumerate(lines) if line.strip().upper() == "MOTION"), None)
    if motion_line is None:
        raise MotionFileError(f"{path}: no MOTION section (not a BVH file, or truncated inside the hierarchy)")
    joints = _parse_hierarchy(path, *_hierarchy_tokens(lines[:motion_line]))
    num_channels = sum(len(j.channels) for j in joints)
    frames, fps = _parse_motion(path, lines, motion_line, num_channels)
    try:
        return _build_clip(path, joints, frames, fps, scale, dtype)
    except MotionFileError as err:
        raise MotionFileError(f"{path}: {err}") from None


def _read_text(path: Path) -> str:
    return read_motion_bytes(path).decode("latin-1")


# ---------------------------------------------------------------------------------- hierarchy
def _hierarchy_tokens(lines: list[str]) -> tuple[list[str], list[int]]:
    """The hierarchy's whitespace-separated tokens and the 1-based line each one is on."""
    tokens, token_lines = [], []
    for number, line in enumerate(lines, start=1):
        words = line.split()
        tokens += words
        token_lines += [number] * len(words)
    return tokens, token_lines


class _Tokens:
    """Cursor over the hierarchy's whitespace-separated tokens, with errors naming the file."""

    def __init__(self, path: Path, tokens: list[str], token_lines: list[int] | None = None):
        self.path, self.tokens, self.pos = path, tokens, 0
        self.token_lines = token_lines

    def line_of_previous(self) -> str:
        """'line N' of the token just read, for messages ('' when lines are unknown)."""
        if not self.token_lines or self.pos == 0:
            return ""
        return f"line {self.token_lines[self.pos - 1]}: "

    def next(self, what: str) -> str:
        if self.pos >= len(self.tokens):
            raise MotionFileError(f"{self.path}: hierarchy ends early, expected {what}")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expect(self, literal: str) -> None:
        token = self.next(repr(literal))
        if token.upper() != literal.upper():
            raise MotionFileError(f"{self.path}: hierarchy: expected {literal!r}, found {token!r}")

    def number(self, what: str) -> float:
        token = self.next(what)
        try:
            value = float(token)
        except ValueError:
            raise MotionFileError(f"{self.path}: hierarchy: {what} is {token!r}, not a number") from None
        if not np.isfinite(value):
            raise MotionFileError(f"{self.path}: hierarchy: {what} is {token}")
        if abs(value) > MAX_CHANNEL_VALUE:  # as for the frame values: corruption, not a skeleton
            raise MotionFileError(f"{self.path}: hierarchy: {what} is {value:g}; values must be within "
                                  f"+-{MAX_CHANNEL_VALUE:g} (file units)")
        return value


def _parse_hierarchy(path: Path, tokens: list[str], token_lines: list[int] | None = None) -> list[_Joint]:
    cursor = _Tokens(path, tokens, token_lines)
    cursor.expect("HIERARCHY")
    cursor.expect("ROOT")
    joints: list[_Joint] = []
    _parse_joint(cursor, joints, parent=-1)
    if cursor.pos != len(tokens):
        raise MotionFileError(f"{path}: hierarchy: unexpected {tokens[cursor.pos]!r} after the root joint (one ROOT per file)")
    column = 0
    for joint in joints:
        joint.first_column = column
        column += len(joint.channels)
    return joints


# Deepest joint chain accepted. Real skeletons nest a few dozen levels; the limit keeps a
# hostile file from exhausting Python's recursion (a RecursionError instead of a clear error).
MAX_HIERARCHY_DEPTH = 256


def _parse_joint(cursor: _Tokens, joints: list[_Joint], parent: int, depth: int = 1) -> None:
    if depth > MAX_HIERARCHY_DEPTH:
        raise MotionFileError(f"{cursor.path}: hierarchy: joints nest deeper than {MAX_HIERARCHY_DEPTH} levels "
                              "(a skeleton has a few dozen); is the file corrupt?")
    name_parts = []
    while (token := cursor.next("a joint name and '{'")) != "{":
        name_parts.append(token)
    joint = _Joint(name=" ".join(name_parts), parent=parent)
    if not joint.name:
        raise MotionFileError(f"{cursor.path}: hierarchy: a joint has no name")
    if any(j.name == joint.name for j in joints):
        raise MotionFileError(f"{cursor.path}: hierarchy: joint name {joint.name!r} repeats")
    index = len(joints)
    joints.append(joint)
    while True:
        keyword = cursor.next(f"'}}' closing joint {joint.name!r}")
        upper = keyword.upper()
        if upper == "}":
            return
        if upper == "OFFSET":
            joint.offset = [cursor.number(f"OFFSET of {joint.name!r}") for _ in range(3)]
        elif upper == "CHANNELS":
            count_token = cursor.next(f"channel count of {joint.name!r}")
            if not count_token.isdigit():
                raise MotionFileError(f"{cursor.path}: hierarchy: channel count of {joint.name!r} is {count_token!r}")
            joint.channels = [cursor.next(f"channel {k + 1} of {joint.name!r}") for k in range(int(count_token))]
            for channel in joint.channels:
                if _channel_kind(channel) is None:
                    raise MotionFileError(
                        f"{cursor.path}: hierarchy: joint {joint.name!r} has channel {channel!r}; expected "
                        f"[XYZ]position / [XYZ]rotation (CHANNELS says {count_token})"
                    )
            _check_distinct_channels(cursor, joint)
        elif upper == "JOINT":
            _parse_joint(cursor, joints, parent=index, depth=depth + 1)
        elif upper == "END":
            cursor.expect("Site")
            cursor.expect("{")
            cursor.expect("OFFSET")
            for _ in range(3):
                cursor.number(f"End Site OFFSET under {joint.name!r}")
            cursor.expect("}")
        elif _channel_kind(keyword) is not None:
            raise MotionFileError(
                f"{cursor.path}: hierarchy: joint {joint.name!r} lists more channel names than its "
                f"CHANNELS count {len(joint.channels)} ({keyword!r} left over)"
            )
        else:
            raise MotionFileError(f"{cursor.path}: hierarchy: unexpected {keyword!r} in joint {joint.name!r}")


def _check_distinct_channels(cursor: _Tokens, joint: _Joint) -> None:
    """A channel named twice (`Zrotation Zrotation`) would apply one axis twice and drop another:
    the file is corrupt, not a convention to guess at."""
    kinds = [_channel_kind(c) for c in joint.channels]
    for k, kind in enumerate(kinds):
        if kind in kinds[:k]:
            raise MotionFileError(
                f"{cursor.path}: hierarchy: {cursor.line_of_previous()}joint {joint.name!r} lists channel "
                f"{joint.channels[k]!r} twice (CHANNELS {' '.join(joint.channels)}); each of "
                "X/Y/Z position and rotation may appear once"
            )


def _channel_kind(channel: str) -> tuple[str, int] | None:
    """'Zrotation' -> ('rotation', 2); None when not a BVH channel name."""
    lower = channel.lower()
    if len(lower) == 9 and lower[1:] == "position" and lower[0] in _AXES:
        return "position", _AXES[lower[0]]
    if len(lower) == 9 and lower[1:] == "rotation" and lower[0] in _AXES:
        return "rotation", _AXES[lower[0]]
    return None


# ------------------------------------------------------------------------------------- motion
def _parse_motion(path: Path, lines: list[str], motion_line: int, num_channels: int) -> tuple[np.ndarray, float]:
    """Frames [N, num_channels] (float64, as in the file) and fps."""
    body = [(i, line) for i, line in enumerate(lines[motion_line + 1:], start=motion_line + 2) if line.strip()]
    if len(body) < 2:
        raise MotionFileError(f"{path}: MOTION section lacks 'Frames:' and 'Frame Time:' lines")
    num_frames = _header_value(path, body[0], "Frames:", int)
    frame_time = _header_value(path, body[1], "Frame Time:", float)
    if num_frames < 1:
        raise MotionFileError(f"{path}: declares {num_frames} frames")
    if not np.isfinite(frame_time) or frame_time <= 0:
        raise MotionFileError(f"{path}: Frame Time is {frame_time}, expected a positive number of seconds")
    low, high = PLAUSIBLE_FPS_RANGE
    if not low <= 1.0 / frame_time <= high:  # 1e-300 s would be 1e300 fps: velocities overflow
        raise MotionFileError(f"{path}: Frame Time is {frame_time:g} s ({1.0 / frame_time:g} fps); expected a frame "
                              f"rate from {low:g} to {high:g} fps (Frame Time {1 / high:g} to {1 / low:g} s)")
    data = body[2:]
    if len(data) < num_frames:
        raise MotionFileError(f"{path}: truncated: declares {num_frames} frames, holds {len(data)}")
    if len(data) > num_frames:
        raise MotionFileError(f"{path}: declares {num_frames} frames but holds {len(data)} frame lines")
    rows = [line.split() for _, line in data]
    for frame, row in enumerate(rows):
        if len(row) != num_channels:
            raise MotionFileError(
                f"{path}: frame {frame + 1} (line {data[frame][0]}) has {len(row)} values, the hierarchy "
                f"declares {num_channels} channels (truncated or corrupt file)"
            )
    try:
        frames = np.array(rows, dtype=np.float64)
    except ValueError as err:
        raise MotionFileError(f"{path}: frame data holds a value that is not a number ({err})") from None
    bad = ~np.isfinite(frames)
    if bad.any():
        frame, channel = np.argwhere(bad)[0]
        raise MotionFileError(f"{path}: frame {frame + 1} (line {data[frame][0]}) channel {channel + 1} is {frames[frame, channel]}")
    huge = np.abs(frames) > MAX_CHANNEL_VALUE
    if huge.any():
        frame, channel = np.argwhere(huge)[0]
        raise MotionFileError(f"{path}: frame {frame + 1} (line {data[frame][0]}) channel {channel + 1} is "
                              f"{frames[frame, channel]:g}; values must be within +-{MAX_CHANNEL_VALUE:g} (positions "
                              "in file units, angles in degrees): a corrupt file?")
    fps = 1.0 / frame_time
    if abs(fps - round(fps)) < 1e-4 * fps:
        fps = float(round(fps))
    return frames, fps


def _header_value(path: Path, numbered_line: tuple[int, str], label: str, kind):
    number, line = numbered_line
    stripped = line.strip()
    if not stripped.lower().startswith(label.lower()):
        raise MotionFileError(f"{path}: line {number}: expected {label!r}, found {stripped[:40]!r}")
    try:
        return kind(stripped[len(label):].strip())
    except ValueError:
        raise MotionFileError(f"{path}: line {number}: {label} value {stripped[len(label):].strip()!r} is not a number") from None


# -------------------------------------------------------------------------------------- build
def _build_clip(path, joints: list[_Joint], frames: np.ndarray, fps: float, scale: float, dtype) -> MotionClip:
    num_frames = frames.shape[0]
    values = torch.from_numpy(frames)
    offsets = torch.tensor([j.offset for j in joints], dtype=torch.float64)
    local_rotation = rot.quat_identity((num_frames, len(joints)), dtype=torch.float64)
    root_translation = offsets[0].expand(num_frames, 3).clone()

    rotation_groups: dict[str, list[tuple[int, list[int]]]] = {}
    for index, joint in enumerate(joints):
        order, rotation_columns = "", []
        for k, channel in enumerate(joint.channels):
            kind, axis = _channel_kind(channel)
            column = joint.first_column + k
            if kind == "rotation":
                order += "xyz"[axis]
                rotation_columns.append(column)
            elif index == 0:
                root_translation[:, axis] = values[:, column]
            else:
                track = values[:, column]
                if (track - track[0]).abs().max() > _CONSTANT_POSITION_TOL:
                    raise MotionFileError(
                        f"joint {joint.name!r} has an animated {channel} channel; a MotionClip animates the "
                        "root translation only"
                    )
                offsets[index, axis] = track[0]
        if order:
            rotation_groups.setdefault(order, []).append((index, rotation_columns))

    # One batched conversion per distinct channel order (usually one for the whole file).
    for order, members in rotation_groups.items():
        joint_ids = [m[0] for m in members]
        columns = torch.tensor([m[1] for m in members])  # [G, K]
        angles = torch.deg2rad(values[:, columns])  # [T, G, K]
        local_rotation[:, joint_ids] = rot.quat_from_euler(angles, order)

    skeleton = Skeleton([j.name for j in joints], [j.parent for j in joints], (offsets * scale).to(dtype))
    return MotionClip(skeleton, local_rotation.to(dtype), (root_translation * scale).to(dtype), fps)
