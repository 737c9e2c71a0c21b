"""Acclaim ASF (skeleton) + AMC (motion) reader -> MotionClip, as used by the CMU mocap database.

ASF: `:units` (length scale, angle deg|rad), `:root` (order of the root's AMC values, axis order
and orientation), `:bonedata` (per bone: direction, length, `axis a b c ORDER`, dof, limits) and
`:hierarchy`. AMC: per frame, a frame number then `bone v1 v2 ...` lines in the bone's dof order.

Skeleton built here: joint "root" plus one joint per bone, located at the bone's start (its
parent bone's end), exactly as the CMU BVH conversions place their joints. Offsets are
direction * length in the ASF's global frame (file units times `scale`), so every joint's rest
frame is aligned with the world and the rest pose has identity local rotations. A bone's motion
in its own axis frame C (from `axis`) is M = R_last(v_last) ... R_first(v_first) over its dofs in
listed order; its local rotation in the world-aligned joint frame is then C M C^-1, so forward
kinematics puts every joint where the Acclaim formulas put the bone starts. The root's AMC
translation is used as is; the ASF root `position` only describes the rest pose.

Units: CMU files say `length 0.45`, meaning 1 unit = 1/0.45 inch = 0.056444 m
(`AsfSkeleton.units_to_m`). Axes stay the file's (CMU: y up).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.files import read_motion_bytes
from ase_humanoid.motion.clip import MotionClip
from ase_humanoid.motion.skeleton import Skeleton
from ase_humanoid.utils import rotations as rot

ROOT = "root"
_INCH = 0.0254


@dataclass
class AsfBone:
    name: str
    direction: tuple[float, float, float] = (0.0, 0.0, 0.0)
    length: float = 0.0
    axis_angles: tuple[float, float, float] = (0.0, 0.0, 0.0)  # in the ASF's angle unit
    axis_order: str = "xyz"
    dof: list[str] = field(default_factory=list)  # e.g. ['rx', 'ry', 'rz']
    parent: str | None = None


@dataclass
class AsfSkeleton:
    """What an ASF file says. `joint_names` lists root then bones, parents before children."""

    path: Path
    length_unit: float  # the `:units length` value
    angle_unit: str  # 'deg' or 'rad'
    root_order: list[str]  # e.g. ['tx', 'ty', 'tz', 'rx', 'ry', 'rz']
    root_axis_order: str
    root_orientation: tuple[float, float, float]
    bones: dict[str, AsfBone]
    joint_names: list[str]

    @property
    def units_to_m(self) -> float:
        """Metres per file length unit (Acclaim: `length L` means 1 unit = 1/L inch)."""
        return _INCH / self.length_unit

    def dof_names(self, joint: str) -> list[str]:
        return self.root_order if joint == ROOT else self.bones[joint].dof

    def skeleton(self, scale: float = 1.0, dtype: torch.dtype = torch.float32) -> Skeleton:
        index = {name: i for i, name in enumerate(self.joint_names)}
        parents, offsets = [-1], [[0.0, 0.0, 0.0]]
        for name in self.joint_names[1:]:
            parent = self.bones[name].parent
            parents.append(index[parent])
            if parent == ROOT:
                offsets.append([0.0, 0.0, 0.0])
            else:
                bone = self.bones[parent]
                offsets.append([d * bone.length * scale for d in bone.direction])
        return Skeleton(self.joint_names, parents, torch.tensor(offsets, dtype=torch.float64).to(dtype))


# ---------------------------------------------------------------------------------------- ASF
def read_asf(path) -> AsfSkeleton:
    path = Path(path)
    lines = _read_lines(path)
    parser = _AsfParser(path)
    for number, line in lines:
        parser.feed(number, line)
    return parser.finish()


def _read_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, stripped text) of the non-empty, non-comment lines."""
    raw = read_motion_bytes(path)
    lines = [(i + 1, line.strip()) for i, line in enumerate(raw.decode("latin-1").splitlines())]
    lines = [(n, line) for n, line in lines if line and not line.startswith("#")]
    if not lines:
        raise MotionFileError(f"{path}: file is empty")
    return lines


def _floats(path: Path, number: int, tokens: list[str], count: int, what: str) -> list[float]:
    if len(tokens) < count:
        raise MotionFileError(f"{path}: line {number}: {what} needs {count} numbers, found {len(tokens)}")
    try:
        values = [float(t) for t in tokens[:count]]
    except ValueError:
        raise MotionFileError(f"{path}: line {number}: {what} has a value that is not a number: {tokens[:count]}") from None
    if not all(np.isfinite(values)):
        raise MotionFileError(f"{path}: line {number}: {what} is not finite: {values}")
    return values


class _AsfParser:
    """Line-by-line state machine over the ASF sections."""

    def __init__(self, path: Path):
        self.path = path
        self.section = None
        self.length_unit, self.angle_unit = 1.0, "deg"
        self.root_order = ["tx", "ty", "tz", "rx", "ry", "rz"]
        self.root_axis_order, self.root_orientation = "xyz", (0.0, 0.0, 0.0)
        self.bones: dict[str, AsfBone] = {}
        self.current: AsfBone | None = None
        self.children: dict[str, list[str]] = {}
        self.seen_sections: set[str] = set()

    def error(self, number: int, message: str) -> MotionFileError:
        return MotionFileError(f"{self.path}: line {number}: {message}")

    def feed(self, number: int, line: str) -> None:
        if line.startswith(":"):
            words = line[1:].split()
            if not words:
                raise self.error(number, "':' without a section name")
            self.section = words[0].lower()
            self.seen_sections.add(self.section)
            return
        tokens = line.split()
        handler = {"units": self._units, "root": self._root, "bonedata": self._bone, "hierarchy": self._hierarchy}.get(self.section)
        if handler is not None:
            handler(number, tokens)
        elif self.section is None:
            raise self.error(number, f"text before the first ':section' ({line[:40]!r}); not an ASF file")

    def _units(self, number: int, tokens: list[str]) -> None:
        key = tokens[0].lower()
        if key == "length":
            self.length_unit = _floats(self.path, number, tokens[1:], 1, "units length")[0]
            if self.length_unit <= 0:
                raise self.error(number, f"units length must be positive, got {self.length_unit}")
        elif key == "angle":
            unit = tokens[1].lower() if len(tokens) > 1 else ""
            if unit not in ("deg", "rad"):
                raise self.error(number, f"units angle must be deg or rad, got {unit!r}")
            self.angle_unit = unit

    def _root(self, number: int, tokens: list[str]) -> None:
        key = tokens[0].lower()
        if key == "order":
            self.root_order = [t.lower() for t in tokens[1:]]
            bad = [t for t in self.root_order if t not in ("tx", "ty", "tz", "rx", "ry", "rz")]
            if bad:
                raise self.error(number, f"root order has unknown entries {bad}; expected TX TY TZ RX RY RZ")
        elif key == "axis":
            self.root_axis_order = self._axis_order(number, tokens[1] if len(tokens) > 1 else "")
        elif key == "orientation":
            self.root_orientation = tuple(_floats(self.path, number, tokens[1:], 3, "root orientation"))

    def _axis_order(self, number: int, text: str) -> str:
        order = text.lower()
        if sorted(order) != ["x", "y", "z"]:
            raise self.error(number, f"axis order {text!r} must be a permutation of XYZ")
        return order

    def _bone(self, number: int, tokens: list[str]) -> None:
        key = tokens[0].lower()
        if key == "begin":
            self.current = AsfBone(name="")
            return
        bone = self.current
        if bone is None:
            if key.startswith("("):  # limits continuation outside a block: ignore
                return
            raise self.error(number, f"{tokens[0]!r} outside a begin/end bone block")
        if key == "end":
            if not bone.name:
                raise self.error(number, "bone block without a name")
            if bone.name in self.bones or bone.name == ROOT:
                raise self.error(number, f"bone name {bone.name!r} repeats")
            if bone.length < 0:
                raise self.error(number, f"bone {bone.name!r} has negative length {bone.length}")
            self.bones[bone.name] = bone
            self.current = None
        elif key == "name":
            bone.name = tokens[1] if len(tokens) > 1 else ""
        elif key == "direction":
            bone.direction = tuple(_floats(self.path, number, tokens[1:], 3, f"direction of {bone.name!r}"))
        elif key == "length":
            bone.length = _floats(self.path, number, tokens[1:], 1, f"length of {bone.name!r}")[0]
        elif key == "axis":
            bone.axis_angles = tuple(_floats(self.path, number, tokens[1:], 3, f"axis of {bone.name!r}"))
            bone.axis_order = self._axis_order(number, tokens[4] if len(tokens) > 4 else "")
        elif key == "dof":
            bone.dof = [t.lower() for t in tokens[1:]]
            unsupported = [d for d in bone.dof if d not in ("rx", "ry", "rz")]
            if unsupported:
                raise self.error(
                    number, f"bone {bone.name!r} has dof {unsupported}; only rx/ry/rz are supported on bones "
                    "(a MotionClip animates the root translation only)"
                )

    def _hierarchy(self, number: int, tokens: list[str]) -> None:
        key = tokens[0].lower()
        if key in ("begin", "end"):
            return
        parent, children = tokens[0], tokens[1:]
        if ROOT in children:  # the skeleton's top has no parent (finish() would look it up as a bone)
            raise self.error(number, f":hierarchy lists {ROOT!r} as a child of {parent!r}; {ROOT!r} is the top of the "
                                     "skeleton and cannot have a parent")
        self.children.setdefault(parent, []).extend(children)

    def finish(self) -> AsfSkeleton:
        for needed in ("bonedata", "hierarchy"):
            if needed not in self.seen_sections:
                raise MotionFileError(f"{self.path}: no :{needed} section (truncated or not an ASF file)")
        if self.current is not None:
            raise MotionFileError(f"{self.path}: bone block {self.current.name!r} is not closed with 'end' (truncated?)")
        known = set(self.bones) | {ROOT}
        for parent, children in self.children.items():
            for name in [parent, *children]:
                if name not in known:
                    raise MotionFileError(f"{self.path}: :hierarchy names {name!r}, which is not a bone in :bonedata")
        order, stack = [ROOT], list(reversed(self.children.get(ROOT, [])))
        while stack:
            name = stack.pop()
            if name in order:
                raise MotionFileError(f"{self.path}: :hierarchy reaches {name!r} twice (a bone has two parents or a cycle)")
            order.append(name)
            for child in reversed(self.children.get(name, [])):
                self.bones[child].parent = name
                stack.append(child)
        for child in self.children.get(ROOT, []):
            self.bones[child].parent = ROOT
        orphans = sorted(set(self.bones) - set(order))
        if orphans:
            raise MotionFileError(f"{self.path}: bones not reachable from root in :hierarchy: {orphans}")
        return AsfSkeleton(
            path=self.path, length_unit=self.length_unit, angle_unit=self.angle_unit, root_order=self.root_order,
            root_axis_order=self.root_axis_order, root_orientation=self.root_orientation, bones=self.bones,
            joint_names=order,
        )


# ---------------------------------------------------------------------------------------- AMC
def read_amc_values(path, asf: AsfSkeleton) -> tuple[dict[str, np.ndarray], str]:
    """Per joint, its AMC values [T, len(dof)] (file order, file units), and the angle unit."""
    path = Path(path)
    lines = _read_lines(path)
    angle_unit = asf.angle_unit
    frames: list[dict[str, list[str]]] = []
    frame_lines: list[int] = []
    first_frame = 0  # number of the first frame in the file (usually 1)
    for number, line in lines:
        if line.startswith(":"):
            keyword = line[1:].strip().lower()
            if keyword == "degrees":
                angle_unit = "deg"
            elif keyword == "radians":
                angle_unit = "rad"
            continue
        tokens = line.split()
        if len(tokens) == 1 and tokens[0].isdigit():
            frame_number = int(tokens[0])
            if frames and frame_number != first_frame + len(frames):
                raise MotionFileError(
                    f"{path}: line {number}: frame number {frame_number} breaks the sequence "
                    f"(expected {first_frame + len(frames)})"
                )
            if not frames:
                first_frame = frame_number
            frames.append({})
            frame_lines.append(number)
            continue
        if not frames:
            raise MotionFileError(f"{path}: line {number}: bone values before the first frame number")
        name = tokens[0]
        if name not in asf.bones and name != ROOT:
            raise MotionFileError(f"{path}: line {number}: unknown joint {name!r} (not in {asf.path.name})")
        dof = asf.dof_names(name)
        if len(tokens) - 1 != len(dof):
            raise MotionFileError(
                f"{path}: line {number}: {name!r} has {len(tokens) - 1} values, its dof in {asf.path.name} is {dof}"
            )
        if name in frames[-1]:
            raise MotionFileError(f"{path}: line {number}: {name!r} appears twice in frame {len(frames)}")
        frames[-1][name] = tokens[1:]
    if not frames:
        raise MotionFileError(f"{path}: no frames")
    animated = [name for name in asf.joint_names if asf.dof_names(name)]
    values = {}
    for name in animated:
        try:
            rows = [frame[name] for frame in frames]
        except KeyError:
            missing = next(i for i, frame in enumerate(frames) if name not in frame)
            raise MotionFileError(
                f"{path}: frame {missing + 1} (line {frame_lines[missing]}) has no values for {name!r} (truncated file?)"
            ) from None
        try:
            array = np.array(rows, dtype=np.float64)
        except ValueError:
            raise MotionFileError(f"{path}: values of {name!r} include something that is not a number") from None
        if not np.isfinite(array).all():
            frame = int(np.argwhere(~np.isfinite(array))[0, 0])
            raise MotionFileError(f"{path}: frame {frame + 1} (line {frame_lines[frame]}): {name!r} has NaN or inf")
        values[name] = array
    return values, angle_unit


def load_asf_amc(amc_path, asf_path, scale: float = 1.0, fps: float = 120.0, dtype: torch.dtype = torch.float32) -> MotionClip:
    """Read an AMC motion on its ASF skeleton. AMC files carry no frame rate: CMU's is 120 fps.
    Positions are file units times `scale` (CMU: scale=read_asf(...).units_to_m for metres)."""
    asf = read_asf(asf_path)
    values, angle_unit = read_amc_values(amc_path, asf)
    to_rad = np.pi / 180.0 if angle_unit == "deg" else 1.0
    axis_to_rad = np.pi / 180.0 if asf.angle_unit == "deg" else 1.0
    num_frames = next(iter(values.values())).shape[0] if values else 1
    names = asf.joint_names

    local_rotation = rot.quat_identity((num_frames, len(names)), dtype=torch.float64)
    root_translation = torch.zeros(num_frames, 3, dtype=torch.float64)
    groups: dict[str, list[int]] = {}
    for j, name in enumerate(names):
        dof = asf.dof_names(name)
        rotation_dof = "".join(d[1] for d in dof if d.startswith("r"))
        if rotation_dof:
            groups.setdefault(rotation_dof, []).append(j)
        if name == ROOT:
            for k, d in enumerate(dof):
                if d.startswith("t"):
                    root_translation[:, "xyz".index(d[1])] = torch.from_numpy(values[ROOT][:, k])

    # Dof motion M per joint, batched by dof pattern: first listed axis applied first.
    for pattern, joint_ids in groups.items():
        angles = torch.stack(
            [torch.from_numpy(_rotation_values(values[names[j]], asf.dof_names(names[j]))) for j in joint_ids], dim=1
        ) * to_rad  # [T, G, K]
        local_rotation[:, joint_ids] = rot.quat_from_euler(angles.flip(-1), pattern[::-1])

    axis_frames = _axis_frames(asf, axis_to_rad)  # [J, 4]
    local_rotation = rot.quat_mul(rot.quat_mul(axis_frames, local_rotation), rot.quat_conjugate(axis_frames))
    skeleton = asf.skeleton(scale, dtype)
    try:
        return MotionClip(skeleton, local_rotation.to(dtype), (root_translation * scale).to(dtype), fps)
    except MotionFileError as err:
        raise MotionFileError(f"{amc_path}: {err}") from None


def _rotation_values(values: np.ndarray, dof: list[str]) -> np.ndarray:
    return values[:, [k for k, d in enumerate(dof) if d.startswith("r")]]


def _axis_frames(asf: AsfSkeleton, to_rad: float) -> torch.Tensor:
    """Each joint's axis frame C [J, 4] (world from bone axis), first listed axis applied first."""
    frames = []
    for name in asf.joint_names:
        if name == ROOT:
            angles, order = asf.root_orientation, asf.root_axis_order
        else:
            angles, order = asf.bones[name].axis_angles, asf.bones[name].axis_order
        radians = torch.tensor(angles, dtype=torch.float64) * to_rad
        frames.append(rot.quat_from_euler(radians.flip(-1), order[::-1]))
    return torch.stack(frames)
