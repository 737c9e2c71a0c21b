"""Write a terrain as a mesh (trimesh) or draw it (matplotlib): the terrain of a config or of a run.

    python tools/terrain.py terrain=mixed --export terrain.obj --preview terrain.png
    python tools/terrain.py terrain=rough terrain.num_rows=5 terrain.seed=3 --preview rough.png
    python tools/terrain.py --run runs/HumanoidAMP_x --export terrain.glb    # the terrain that run used
    python tools/terrain.py terrain=mesh terrain.mesh_file=my_ground.stl --preview sampled.png

Overrides are `terrain=<cfg/terrain/*.yaml name>` and `terrain.<key>=<value>`, as on train.py's
command line. `--export` writes any format trimesh writes (.obj, .stl, .ply, .glb) in the world
frame the simulator uses (z up, metres). `--preview` draws the heights from above with the
tiles' kinds and difficulty levels.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.errors import AseHumanoidError, ConfigError  # noqa: E402
from ase_humanoid.terrain.mesh import MESH_FORMATS  # noqa: E402  (what terrain=mesh reads back)
from ase_humanoid.utils.checks import output_file_problem  # noqa: E402

PREVIEW_FORMATS = (".png", ".svg", ".pdf")


def terrain_values(overrides: list[str], run_dir: str | None) -> dict:
    """The terrain keys: a run's saved config.yaml, else cfg/terrain/<name>.yaml plus overrides."""
    from omegaconf import OmegaConf

    from ase_humanoid.paths import CFG_DIR

    if run_dir is not None:
        path = Path(run_dir) / "config.yaml"
        if not path.is_file():
            raise ConfigError(f"--run {run_dir}: no config.yaml there (is it a run folder?)")
        saved = OmegaConf.load(path)
        node = saved.get("terrain")
        return {"name": "flat"} if node is None else OmegaConf.to_container(node, resolve=True)
    name, keys = "flat", []
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep:
            raise ConfigError(f"override '{override}' is not of the form key=value")
        if key == "terrain":
            name = value
        elif key.startswith("terrain."):
            keys.append(f"{key[len('terrain.'):]}={value}")
        else:
            raise ConfigError(f"override '{override}': only terrain=NAME and terrain.KEY=VALUE are understood here")
    path = CFG_DIR / "terrain" / f"{name}.yaml"
    if not path.is_file():
        valid = sorted(p.stem for p in (CFG_DIR / "terrain").glob("*.yaml"))
        raise ConfigError(f"unknown terrain '{name}'; valid choices: {', '.join(valid)}")
    cfg = OmegaConf.merge(OmegaConf.load(path), OmegaConf.from_dotlist(keys))
    return OmegaConf.to_container(cfg, resolve=True)


def check_output(path: Path, option: str, formats: tuple[str, ...]) -> None:
    """ConfigError unless `path` can take `option`'s file: a known suffix, not a folder, in an
    existing writable folder. Checked before the terrain is built, so a typo costs no work."""
    if path.suffix.lower() not in formats:
        what = f"unknown format {path.suffix!r}" if path.suffix else "no format suffix"
        raise ConfigError(f"{option} '{path}': {what}; give a file ending in {', '.join(formats)}")
    problem = output_file_problem(path)
    if problem is not None:
        raise ConfigError(f"{option} '{path}': {problem}")


def write_output(path: Path, option: str, data: bytes) -> None:
    """`data` into `path`. A write error (a full disk, /dev/full: "No space left on device") is a
    ConfigError naming the file, and the part-written file is removed: a truncated mesh or image
    must not look like a result."""
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as exc:
        if path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
        raise ConfigError(f"{option} '{path}': cannot write it: {exc.strerror or exc}") from exc


def mesh_bytes(terrain, suffix: str) -> bytes:
    """The terrain's surface in the format of `suffix` (.obj is text, the others binary)."""
    from ase_humanoid.terrain.mesh import heightfield_mesh

    data = heightfield_mesh(terrain).export(file_type=suffix.lower()[1:])
    return data.encode() if isinstance(data, str) else data


def draw_preview(terrain, suffix: str) -> bytes:
    """Heights from above (x right, y up), tile outlines, each tile's kind and difficulty, as
    an image in the format of `suffix`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs, ys = terrain.sample_positions()
    width, height = terrain.extent
    fig, ax = plt.subplots(figsize=(min(16, 4 + width / 8), min(16, 3 + height / 8)))
    image = ax.imshow(terrain.heights.T, origin="lower", cmap="terrain",
                      extent=(xs[0], xs[-1], ys[0], ys[-1]), interpolation="nearest")
    fig.colorbar(image, ax=ax, label="height (m)")
    size = terrain.tile_size
    for r in range(terrain.num_rows):
        for c in range(terrain.num_cols):
            x0, y0, _ = terrain.tile_origins[r, c]
            if terrain.name != "mesh":
                ax.add_patch(plt.Rectangle((x0 - size / 2, y0 - size / 2), size, size, fill=False, lw=0.5, ec="k"))
            ax.text(x0, y0, f"{terrain.tile_kinds[r, c]}\n{terrain.tile_difficulty[r, c]:.2f}", ha="center",
                    va="center", fontsize=6)
    ax.set_xlabel("x (m): difficulty levels (rows)")
    ax.set_ylabel("y (m)")
    ax.set_title(f"terrain '{terrain.name}': {terrain.num_rows} x {terrain.num_cols} tiles, "
                 f"heights {terrain.heights.min():.2f} .. {terrain.heights.max():.2f} m")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=suffix.lower()[1:], dpi=120)
    plt.close(fig)
    return buffer.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="terrain=NAME, terrain.KEY=VALUE")
    parser.add_argument("--run", help="a run folder: its config.yaml's terrain")
    parser.add_argument("--export", type=Path, help="write the surface: .obj, .stl, .ply or .glb")
    parser.add_argument("--preview", type=Path, help="draw the heights to a .png (or .svg, .pdf)")
    args = parser.parse_args(argv)
    if args.export is None and args.preview is None:
        parser.error("nothing to do: give --export and/or --preview")
    try:
        from ase_humanoid.terrain import build_terrain

        if args.export is not None:
            check_output(args.export, "--export", MESH_FORMATS)
        if args.preview is not None:
            check_output(args.preview, "--preview", PREVIEW_FORMATS)
        values = terrain_values(args.overrides, args.run)
        terrain = build_terrain(values)
        if terrain is None:
            raise ConfigError("terrain 'flat' is MuJoCo's infinite plane: nothing to export or draw; "
                              "choose terrain=rough|mixed|mesh")
        if args.export is not None:
            write_output(args.export, "--export", mesh_bytes(terrain, args.export.suffix))
            print(f"wrote {args.export} ({terrain.heights.shape[0]} x {terrain.heights.shape[1]} samples)")
        if args.preview is not None:
            write_output(args.preview, "--preview", draw_preview(terrain, args.preview.suffix))
            print(f"wrote {args.preview}")
    except AseHumanoidError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
