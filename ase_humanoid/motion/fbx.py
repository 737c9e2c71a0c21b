"""FBX skeletal animation reader (through the `ufbx` package) -> MotionClip.

The skeleton is the subtree of the first bone node (a node whose attribute is a bone and whose
parent is not) or of the node named `root_joint`, joints in depth-first order. The animation is
evaluated with ufbx at the file's frame rate from the start to the end of its default take; each
joint gets ufbx's local transform (pre/post rotations included). Ancestors of the skeleton root
(e.g. the CMU files' scene node with rotation -90 deg about x and scale 100) are folded into the
root's world transform and into the bone offsets, so forward kinematics of the clip reproduces the
world joint positions ufbx reports, in ufbx's world units (times `scale`). Only uniform scale is
supported; bones must not have animated translation (a MotionClip animates the root only).

Units of the CMU takes shipped here: ufbx world = CMU units x 100 (the root node's scale), so
1 world unit = 0.00056444 m (`CMU_FBX_UNITS_TO_M`). The files' own unit setting says centimetres
(`scene.settings.unit_meters = 0.01`), which is not what the data is in. World axes: y up.

ufbx 0.0.5 note: element wrappers are cached per scene and a wrapper freed early leaves a dangling
cache entry (crashes on the next access to that element), so every wrapper taken from the scene
is kept alive until the scene is released.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ase_humanoid.errors import MotionFileError
from ase_humanoid.motion.clip import MotionClip
from ase_humanoid.motion.files import check_motion_path
from ase_humanoid.motion.skeleton import Skeleton
from ase_humanoid.utils import rotations as rot

CMU_FBX_UNITS_TO_M = 0.00056444
_SCALE_TOL = 1e-4  # relative: scale components must agree this well to count as uniform
_OFFSET_TOL = 1e-4  # relative to the largest offset: bone translation must stay this constant


def load_fbx(
    path,
    root_joint: str | None = None,
    scale: float = 1.0,
    fps: float | None = None,
    dtype: torch.dtype = torch.float32,
) -> MotionClip:
    """Read the animation of an FBX skeleton. fps: sampling rate (default: the file's)."""
    path = Path(path)
    try:
        import ufbx
    except ImportError:  # pragma: no cover - ufbx is a dependency
        raise MotionFileError(f"{path}: reading FBX needs the 'ufbx' package (pip install ufbx)") from None
    check_motion_path(path)  # not a folder, FIFO or device: ufbx would block or read forever
    if path.stat().st_size == 0:
        raise MotionFileError(f"{path}: file is empty")
    try:
        scene = ufbx.load_file(str(path))
    except (ufbx.UfbxError, RuntimeError, OSError) as err:  # RuntimeError: ufbx's internal panics
        raise MotionFileError(f"{path}: ufbx cannot read it: {err}") from None
    try:
        return _read_scene(ufbx, scene, path, root_joint, scale, fps, dtype)
    except MotionFileError as err:
        raise MotionFileError(f"{path}: {err}") from None


def _read_scene(ufbx, scene, path, root_joint, scale, fps, dtype) -> MotionClip:
    node_list = scene.nodes
    nodes = [node_list[i] for i in range(len(node_list))]  # kept alive: see module note
    parents_of = [node.parent for node in nodes]
    parent_ids = [-1 if p is None else p.typed_id for p in parents_of]
    names = [node.name for node in nodes]
    is_bone = [node.attrib_type == ufbx.ElementType.BONE for node in nodes]

    root = _find_root(names, parent_ids, is_bone, root_joint)
    joints = _depth_first(root, parent_ids)
    ancestors = []
    node = parent_ids[root]
    while node >= 0:
        ancestors.append(node)
        node = parent_ids[node]
    chain = list(reversed(ancestors)) + joints  # every node whose transform matters, parents first

    fps = float(fps or scene.settings.frames_per_second)
    if not np.isfinite(fps) or fps <= 0:
        raise MotionFileError(f"frame rate is {fps}; pass fps=")
    anim = scene.anim
    begin, end = float(anim.time_begin), float(anim.time_end)
    num_frames = int(round((end - begin) * fps)) + 1
    if end < begin or num_frames < 1:
        raise MotionFileError(f"animation time range {begin} .. {end} s holds no frames")
    times = begin + np.arange(num_frames) / fps

    # [T, N, 10]: translation xyz, rotation xyzw, scale xyz of each node in `chain`, local.
    samples = np.empty((num_frames, len(chain), 10), dtype=np.float64)
    for t, time in enumerate(times):
        for n, index in enumerate(chain):
            tr = ufbx.evaluate_transform(anim, nodes[index], float(time))
            tl, rq, sc = tr.translation, tr.rotation, tr.scale
            samples[t, n] = (tl.x, tl.y, tl.z, rq.x, rq.y, rq.z, rq.w, sc.x, sc.y, sc.z)
    if not np.isfinite(samples).all():
        raise MotionFileError("animation evaluates to NaN or inf")
    return _clip_from_samples(torch.from_numpy(samples), chain, len(ancestors), parent_ids, names, fps, scale, dtype)


def _find_root(names, parent_ids, is_bone, root_joint) -> int:
    if root_joint is not None:
        if root_joint not in names:
            raise MotionFileError(f"no node named {root_joint!r}; nodes: {[n for n in names if n]}")
        return names.index(root_joint)
    for index, bone in enumerate(is_bone):
        if bone and not (parent_ids[index] >= 0 and is_bone[parent_ids[index]]):
            return index
    raise MotionFileError("no skeleton: the file has no bone (LimbNode) nodes; pass root_joint=")


def _depth_first(root: int, parent_ids: list[int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for index, parent in enumerate(parent_ids):
        children.setdefault(parent, []).append(index)
    order, stack = [], [root]
    while stack:
        index = stack.pop()
        order.append(index)
        stack.extend(reversed(children.get(index, [])))
    return order


def _clip_from_samples(samples, chain, num_ancestors, parent_ids, names, fps, scale, dtype) -> MotionClip:
    translation, rotation, scales = samples[..., :3], rot.quat_normalize(samples[..., 3:7]), samples[..., 7:]
    spread = (scales - scales[..., :1]).abs().amax(-1) / scales[..., 0].abs().clamp_min(1e-12)
    if (spread > _SCALE_TOL).any():
        n = int(torch.nonzero(spread > _SCALE_TOL)[0, 1])
        raise MotionFileError(f"node {names[chain[n]]!r} has non-uniform scale {scales[0, n].tolist()}; only uniform scale is supported")
    uniform = scales[..., 0]  # [T, N]

    # World transforms along the chain (uniform scale): p_w = p_parent + R_parent (s_parent t).
    slot = {index: n for n, index in enumerate(chain)}
    world_pos, world_rot, world_scale = [], [], []
    for n, index in enumerate(chain):
        parent = parent_ids[index]
        if parent in slot:
            p = slot[parent]
            world_pos.append(world_pos[p] + rot.quat_rotate(world_rot[p], world_scale[p].unsqueeze(-1) * translation[:, n]))
            world_rot.append(rot.quat_mul(world_rot[p], rotation[:, n]))
            world_scale.append(world_scale[p] * uniform[:, n])
        else:
            world_pos.append(translation[:, n])
            world_rot.append(rotation[:, n])
            world_scale.append(uniform[:, n])

    joint_slots = list(range(num_ancestors, len(chain)))
    joint_ids = [chain[n] for n in joint_slots]
    offsets = torch.zeros(len(joint_slots), samples.shape[0], 3, dtype=samples.dtype)
    for j, n in enumerate(joint_slots[1:], start=1):
        p = slot[parent_ids[chain[n]]]
        offsets[j] = world_scale[p].unsqueeze(-1) * translation[:, n]
    offsets = offsets.transpose(0, 1)  # [T, J, 3]
    drift = (offsets - offsets[:1]).norm(dim=-1).amax(0)  # [J]
    limit = _OFFSET_TOL * max(float(offsets[0].norm(dim=-1).max()), 1e-9)
    if (drift > limit).any():
        j = int(torch.nonzero(drift > limit)[0, 0])
        raise MotionFileError(
            f"bone {names[joint_ids[j]]!r} has animated translation (moves by {float(drift[j]):.4g}); "
            "a MotionClip animates the root translation only"
        )
    offsets = offsets[0].clone()
    root_slot = joint_slots[0]
    offsets[0] = world_pos[root_slot][0]

    local_rotation = rotation[:, joint_slots].clone()
    local_rotation[:, 0] = world_rot[root_slot]
    skeleton = Skeleton([names[i] for i in joint_ids], _local_parents(joint_ids, parent_ids), (offsets * scale).to(dtype))
    return MotionClip(skeleton, local_rotation.to(dtype), (world_pos[root_slot] * scale).to(dtype), fps)


def _local_parents(joint_ids: list[int], parent_ids: list[int]) -> list[int]:
    position = {index: j for j, index in enumerate(joint_ids)}
    return [-1] + [position[parent_ids[index]] for index in joint_ids[1:]]
