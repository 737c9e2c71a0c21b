"""A user's mesh (OBJ, STL, PLY, GLB, read with trimesh) as a terrain, and a terrain as a mesh.

`terrain_from_mesh_file` checks the file (exists, known format, not huge, loads, has triangles,
vertices finite and within +-MAX_COORDINATE_M, manifold edges) and casts one vertical ray per
heightfield sample from above: the height is the highest surface the ray hits
(`top_surface_heights`, vectorised over triangles, no ray-tracing library needed). Samples no
triangle covers take the mesh's lowest height. `heightfield_mesh` turns any Terrain into
triangles for export (`tools/terrain.py --export`). Every problem with the file raises
ModelError naming it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ase_humanoid.errors import ModelError
from ase_humanoid.terrain.config import MAX_HEIGHTFIELD_SAMPLES, TerrainConfig
from ase_humanoid.terrain.grid import Terrain

MESH_FORMATS = (".obj", ".stl", ".ply", ".glb")
MAX_MESH_FILE_BYTES = 512 * 1024 * 1024
# Largest |coordinate| of a vertex, metres (after terrain.mesh_scale): 10 km is far beyond any
# ground a character walks on, while a vertex at 1e30 (an export bug, a unit mix-up) would make
# a heightfield of absurd extent or turn every height into inf.
MAX_COORDINATE_M = 1e4
RASTER_CHUNK = 4_000_000  # (triangle, sample) candidate pairs per vectorised batch


def _trimesh():
    try:
        import trimesh
    except ImportError as exc:  # pragma: no cover - trimesh is a dependency
        raise ModelError("mesh terrain needs trimesh (pip install trimesh)") from exc
    return trimesh


def load_terrain_mesh(path, max_faces: int = 2_000_000, scale: float = 1.0, up_axis: str = "z"):
    """The triangles of mesh file `path` as `(vertices [V, 3] float64, faces [F, 3] int)` in metres,
    z up. ModelError naming the file if it is missing, not a mesh format, over
    MAX_MESH_FILE_BYTES or `max_faces`, unreadable, empty, with a vertex that is non-finite or
    beyond MAX_COORDINATE_M, or non-manifold (an edge shared by more than two triangles: no
    single surface to stand on)."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"terrain mesh file not found: {path}")
    if path.suffix.lower() not in MESH_FORMATS:
        raise ModelError(f"terrain mesh file {path}: unknown format {path.suffix!r}; valid: {', '.join(MESH_FORMATS)}")
    size = path.stat().st_size
    if size > MAX_MESH_FILE_BYTES:
        raise ModelError(f"terrain mesh file {path} is too large ({size / 2**20:,.0f} MiB, at most "
                         f"{MAX_MESH_FILE_BYTES / 2**20:,.0f} MiB): simplify it first")
    if size == 0:
        raise ModelError(f"terrain mesh file {path} is empty (0 bytes)")
    mesh = _read_mesh(path)
    check_vertex_coordinates(path, np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), dtype=np.float64), scale)
    if hasattr(mesh, "process"):
        mesh.process()  # merge duplicate vertices (an STL's triangles share none), after the check
    vertices = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), dtype=np.float64)
    faces = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), dtype=np.int64)
    if faces.ndim != 2 or len(faces) == 0 or len(vertices) == 0:
        raise ModelError(f"terrain mesh file {path} holds no triangles")
    if len(faces) > max_faces:
        raise ModelError(f"terrain mesh file {path} has {len(faces):,} triangles, more than "
                         f"terrain.max_mesh_faces={max_faces:,}: simplify it (a heightfield needs far fewer)")
    bad_edges = non_manifold_edge_count(faces)
    if bad_edges:
        raise ModelError(f"terrain mesh file {path} is non-manifold: {bad_edges} edge(s) shared by more than "
                         "two triangles; repair it (e.g. remove duplicate or internal faces)")
    vertices = vertices * scale
    if up_axis == "y":  # rotate +90 degrees about x: y -> z, z -> -y
        vertices = np.stack([vertices[:, 0], -vertices[:, 2], vertices[:, 1]], axis=1)
    return vertices, faces


def _read_mesh(path: Path):
    """The file's mesh as trimesh reads it, unprocessed: processing drops the triangles of a NaN
    vertex without a word (a hole in the ground, or "no triangles" for a small file), so the
    vertices are checked first, in the file's order."""
    trimesh = _trimesh()
    try:
        return trimesh.load_mesh(str(path), file_type=path.suffix.lower()[1:], process=False)
    except Exception as exc:  # trimesh raises many types for broken files
        raise ModelError(f"terrain mesh file {path} could not be read as {path.suffix}: {type(exc).__name__}: {exc}") from exc


def check_vertex_coordinates(path: Path, vertices: np.ndarray, scale: float) -> None:
    """ModelError naming the file and the first vertex (counting from 1, in the file's order)
    whose coordinates in metres are NaN, infinite or beyond +-MAX_COORDINATE_M."""
    with np.errstate(over="ignore", invalid="ignore"):
        metres = vertices * scale
        bad = ~(np.abs(metres) <= MAX_COORDINATE_M).all(axis=-1)  # NaN compares False: bad
    if bad.any():
        index = int(np.argmax(bad))
        where = ", ".join(f"{v:g}" for v in vertices[index])
        raise ModelError(f"terrain mesh file {path}: vertex {index + 1} (counting from 1) is ({where}) "
                         f"({int(bad.sum()):,} of {len(vertices):,} vertices are out of range): coordinates must be "
                         f"finite and within +-{MAX_COORDINATE_M:g} m (after terrain.mesh_scale={scale:g})")


def non_manifold_edge_count(faces: np.ndarray) -> int:
    """Number of edges (vertex pairs) used by more than two triangles of `faces [F, 3]`."""
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return int((counts > 2).sum())


def top_surface_heights(vertices: np.ndarray, faces: np.ndarray, origin: tuple[float, float], scale: float,
                        shape: tuple[int, int]) -> np.ndarray:
    """Vertical ray casting: for each sample (i, j) at origin + (i, j) * scale, the highest z of
    the triangles above it; `[nx, ny]`, NaN where no triangle covers the sample.

    Each triangle is tested against the samples of its xy bounding box (barycentric
    coordinates), in batches of RASTER_CHUNK candidate pairs."""
    nx, ny = shape
    tri = vertices[faces]  # [F, 3 corners, 3]
    lo = np.ceil((tri[:, :, :2].min(axis=1) - origin) / scale - 1e-9).astype(np.int64)
    hi = np.floor((tri[:, :, :2].max(axis=1) - origin) / scale + 1e-9).astype(np.int64)
    lo = np.maximum(lo, 0)
    hi = np.minimum(hi, [nx - 1, ny - 1])
    width = np.maximum(hi - lo + 1, 0)  # [F, 2] samples along x, y
    counts = width[:, 0] * width[:, 1]
    best = np.full(nx * ny, -np.inf)
    starts = np.concatenate([[0], np.cumsum(counts)])
    first = 0
    while first < len(faces):  # build time: a few batches
        last = int(np.searchsorted(starts, starts[first] + RASTER_CHUNK, side="right")) - 1
        last = max(last, first + 1)
        _raster_batch(tri[first:last], lo[first:last], width[first:last], counts[first:last], origin, scale, ny, best)
        first = last
    heights = best.reshape(nx, ny)
    heights[~np.isfinite(heights)] = np.nan
    return heights


def _raster_batch(tri, lo, width, counts, origin, scale, ny, best) -> None:
    """Candidate (triangle, sample) pairs of one batch; keeps the highest hit per sample in `best`."""
    total = int(counts.sum())
    if total == 0:
        return
    owner = np.repeat(np.arange(len(tri)), counts)
    local = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    wy = width[owner, 1]
    i = lo[owner, 0] + local // wy
    j = lo[owner, 1] + local % wy
    p = np.stack([origin[0] + i * scale, origin[1] + j * scale], axis=1)
    a, b, c = tri[owner, 0], tri[owner, 1], tri[owner, 2]
    e0, e1, ep = b[:, :2] - a[:, :2], c[:, :2] - a[:, :2], p - a[:, :2]
    det = e0[:, 0] * e1[:, 1] - e0[:, 1] * e1[:, 0]
    ok = np.abs(det) > 1e-12  # vertical triangles are seen edge-on: their neighbours answer
    det = np.where(ok, det, 1.0)
    u = (ep[:, 0] * e1[:, 1] - ep[:, 1] * e1[:, 0]) / det
    v = (e0[:, 0] * ep[:, 1] - e0[:, 1] * ep[:, 0]) / det
    eps = 1e-9
    hit = ok & (u >= -eps) & (v >= -eps) & (u + v <= 1 + eps)
    z = a[:, 2] + u * (b[:, 2] - a[:, 2]) + v * (c[:, 2] - a[:, 2])
    np.maximum.at(best, (i * ny + j)[hit], z[hit])


def terrain_from_mesh(vertices: np.ndarray, faces: np.ndarray, scale: float, source: str = "mesh") -> Terrain:
    """A one-tile Terrain covering the mesh's xy extent, sampled every `scale` metres."""
    low, high = vertices[:, :2].min(axis=0), vertices[:, :2].max(axis=0)
    extent = high - low
    if (extent < 2 * scale).any():
        raise ModelError(f"terrain mesh {source} covers {extent[0]:.3g} x {extent[1]:.3g} m on the ground, "
                         f"less than two heightfield samples of {scale} m: check its up axis and scale")
    shape = tuple(int(s) for s in np.floor(extent / scale + 1e-9).astype(int) + 1)
    if shape[0] * shape[1] > MAX_HEIGHTFIELD_SAMPLES:
        raise ModelError(f"terrain mesh {source} covers {extent[0]:,.0f} x {extent[1]:,.0f} m: {shape[0] * shape[1]:,} "
                         f"heightfield samples of {scale} m, more than {MAX_HEIGHTFIELD_SAMPLES:,}; use a larger "
                         "terrain.horizontal_scale or terrain.mesh_scale")
    heights = top_surface_heights(vertices, faces, (float(low[0]), float(low[1])), scale, shape)
    if np.isnan(heights).all():
        raise ModelError(f"terrain mesh {source}: no triangle faces up or down (all vertical); check its up axis")
    heights = np.where(np.isnan(heights), np.nanmin(heights), heights)
    ci, cj = shape[0] // 2, shape[1] // 2
    centre = (low[0] + ci * scale, low[1] + cj * scale, heights[ci, cj])
    return Terrain(
        heights=heights.astype(np.float32),
        horizontal_scale=scale,
        origin=(float(low[0]), float(low[1])),
        tile_origins=np.array([[centre]], dtype=np.float64),
        tile_kinds=np.array([["mesh"]]),
        tile_difficulty=np.zeros((1, 1)),
        tile_size=float(extent.max()),
        name="mesh",
    )


def terrain_from_mesh_file(path, cfg: TerrainConfig) -> Terrain:
    """`cfg.mesh_file`-style loading: read, check, scale and sample the mesh at `path`."""
    vertices, faces = load_terrain_mesh(path, cfg.max_mesh_faces, cfg.mesh_scale, cfg.mesh_up_axis)
    return terrain_from_mesh(vertices, faces, cfg.horizontal_scale, source=str(path))


def heightfield_mesh(terrain: Terrain):
    """The terrain's surface as a `trimesh.Trimesh`: one vertex per sample, two triangles per
    cell."""
    trimesh = _trimesh()
    nx, ny = terrain.heights.shape
    xs, ys = terrain.sample_positions()
    grid_x, grid_y = np.meshgrid(xs, ys, indexing="ij")
    vertices = np.stack([grid_x, grid_y, terrain.heights.astype(np.float64)], axis=-1).reshape(-1, 3)
    index = np.arange(nx * ny).reshape(nx, ny)
    a, b = index[:-1, :-1].ravel(), index[1:, :-1].ravel()  # (i, j), (i + 1, j)
    c, d = index[:-1, 1:].ravel(), index[1:, 1:].ravel()  # (i, j + 1), (i + 1, j + 1)
    faces = np.concatenate([np.stack([a, b, d], axis=1), np.stack([a, d, c], axis=1)])  # counter-clockwise from above
    return trimesh.Trimesh(vertices=vertices, faces=faces, process=False)
