"""The package's modules import one another without a cycle (issue 38): `reporting` reads what `experiments` trained,
never the other way round. Every import counts, at the top of a module or inside a function."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "delta_repro"


def import_graph(pkg: Path = PKG) -> dict[str, set[str]]:
    "{module: the package modules it imports}, from the source, every `import` and `from ... import` anywhere in it."
    names = {p.stem for p in pkg.glob("*.py") if p.stem != "__init__"}
    graph = {}
    for p in pkg.glob("*.py"):
        if p.stem in ("__init__", "_modidx"): continue
        deps = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if node.level == 1: mod = f"delta_repro.{mod}" if mod else "delta_repro"
                if mod == "delta_repro": deps |= {a.name for a in node.names if a.name in names}
                elif mod.startswith("delta_repro."): deps.add(mod.split(".")[1])
            elif isinstance(node, ast.Import):
                deps |= {a.name.split(".")[1] for a in node.names if a.name.startswith("delta_repro.")}
        graph[p.stem] = deps - {p.stem}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    "The import cycles of `graph` (depth-first search), each as the list of modules around it."
    found, state = [], {}
    def visit(m, path):
        state[m] = "open"
        for d in sorted(graph.get(m, ())):
            if state.get(d) == "open": found.append(path[path.index(d):] + [d])
            elif d not in state: visit(d, path + [d])
        state[m] = "done"
    for m in sorted(graph):
        if m not in state: visit(m, [m])
    return found


def test_no_import_cycle_between_the_package_modules():
    g = import_graph()
    assert "experiments" in g and "reporting" in g and "experiments" in g["reporting"]  # the graph was read
    assert not cycles(g), cycles(g)


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]
    assert not cycles({"a": {"b"}, "b": set()})
