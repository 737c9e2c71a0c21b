"""The package's modules import each other without circles.

The graph is read from the source with `ast` (nothing is imported): an edge a -> b for every
`import ase_humanoid...` / `from ase_humanoid... import ...` in module a, at module level or
inside a function (a lazy import hides a circle from the interpreter, not from the design).
`from pkg import name` counts as an edge to `pkg` and, when `name` is a submodule, to it too.
Packages importing their own submodules (`sim/__init__.py` re-exporting `sim.base`) are ordinary
edges; the implicit "importing a.b runs a/__init__" is not an edge, or every re-exporting package
would be a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "ase_humanoid"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / PACKAGE


def module_names(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under `package_dir` (a package named after it)."""
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imported_names(module: str, path: Path) -> set[str]:
    """Every dotted name `module` imports (absolute or relative, at any depth of the file), plus
    `pkg.name` for each `from pkg import name` (a submodule when such a module exists)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
    return names


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the package modules it imports (itself excluded)."""
    modules = module_names(package_dir)
    return {m: {n for n in imported_names(m, p) if n in modules and n != m} for m, p in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle `[a, b, ..., a]`, or None (depth-first search, iterative)."""
    state = {}  # module -> "open" while on the current path, "done" once fully explored
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = "open"
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = "done"
                stack.pop()
            elif state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = "open"
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


# The package's layers, bottom first (docs/architecture.md "Layers"): a module imports only from
# its own top-level part or from parts of a lower layer. The package root (`ase_humanoid/__init__`)
# is the public face above all of them and nothing inside imports it.
LAYERS = (
    ("errors", "paths"),
    ("utils",),
    ("terrain",),
    ("robots",),
    ("sim", "motion"),
    ("envs", "agents"),
    ("integrations",),
    ("runner", "policy_export", "config", "run_dir"),
    ("builders",),
    ("analysis", "checkpoint_config"),
    ("evaluate", "gym_entry"),
    ("app",),
)


def top_level_part(module: str) -> str:
    """`ase_humanoid.envs.tasks.strike` -> `envs`; the package root -> `ase_humanoid`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_violations(graph: dict[str, set[str]], layers) -> list[str]:
    """Edges `a -> b` between different top-level parts where b's layer is not below a's (parts
    missing from `layers` are reported too)."""
    rank = {part: i for i, names in enumerate(layers) for part in names}
    rank[PACKAGE] = len(layers)
    bad = []
    for a, targets in sorted(graph.items()):
        for b in sorted(targets):
            pa, pb = top_level_part(a), top_level_part(b)
            if pa == pb:
                continue
            if pa not in rank or pb not in rank:
                bad.append(f"{a} -> {b} (a part missing from LAYERS: {pa if pa not in rank else pb})")
            elif rank[pb] >= rank[pa]:
                bad.append(f"{a} -> {b}")
    return bad


def test_package_has_no_import_cycle():
    graph = import_graph(PACKAGE_DIR)
    cycle = find_cycle(graph)
    assert cycle is None, "import circle in ase_humanoid: " + " -> ".join(cycle)


def test_modules_import_only_from_lower_layers():
    assert layer_violations(import_graph(PACKAGE_DIR), LAYERS) == []


def test_layer_check_reports_an_upward_import():
    graph = {"ase_humanoid.envs.gym_vector": {"ase_humanoid.builders", "ase_humanoid.envs"},
             "ase_humanoid.config": {"ase_humanoid"}, "ase_humanoid.builders": {"ase_humanoid.envs.humanoid"}}
    assert layer_violations(graph, LAYERS) == ["ase_humanoid.config -> ase_humanoid",
                                               "ase_humanoid.envs.gym_vector -> ase_humanoid.builders"]


def test_graph_sees_lazy_and_package_imports():
    """The walker is not vacuous: it finds the edges the layering relies on, lazy ones included."""
    graph = import_graph(PACKAGE_DIR)
    assert len(graph) > 50
    assert "ase_humanoid.builders" in graph["ase_humanoid.app"]
    assert "ase_humanoid.builders" in graph["ase_humanoid.evaluate"]  # a function-level import
    assert "ase_humanoid.sim.mujoco_cpu" in graph["ase_humanoid.sim.factory"]  # also function-level
    assert "ase_humanoid.robots.tree" in graph["ase_humanoid.robots.articulation"]
    assert "ase_humanoid.app" not in graph["ase_humanoid.evaluate"]
    assert "ase_humanoid.robots.kinematics" not in graph["ase_humanoid.robots.articulation"]
    assert not any(m.startswith("ase_humanoid.sim.") and m != "ase_humanoid.sim.base"
                   for m in graph["ase_humanoid.sim.base"])


def test_find_cycle_reports_a_lazy_circle(tmp_path):
    """A circle closed only by a function-level relative import is found and named."""
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from toy.b import helper\n")
    (pkg / "b.py").write_text("def helper():\n    from .c import thing\n    return thing\n")
    (pkg / "c.py").write_text("import toy.a\nthing = 1\n")
    (pkg / "d.py").write_text("from toy import c\n")
    graph = import_graph(pkg)
    assert graph["toy.d"] == {"toy", "toy.c"}
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1]
    assert set(cycle) == {"toy.a", "toy.b", "toy.c"}
    (pkg / "c.py").write_text("thing = 1\n")
    assert find_cycle(import_graph(pkg)) is None
