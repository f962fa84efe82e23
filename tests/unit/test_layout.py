"""The layout's one rule: `schemas` is the contract both sides depend on, and it depends on neither;
the connector and Spark's side know each other only through it. Checked on every import statement of
the source (those inside functions too) and on the crates' dependencies."""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"schemas": {"connector", "spark"}, "connector": {"spark"}, "spark": {"connector"}}
CRATES = {"schemas/native": "ringtail-contract", "connector/native": "ringtail-commitlog",
          "spark/native": "ringtail-events"}
CRATE_FORBIDDEN = {"ringtail-contract": {"ringtail-commitlog", "ringtail-events"},
                   "ringtail-commitlog": {"ringtail-events"}, "ringtail-events": {"ringtail-commitlog"}}


def imported(tree: ast.AST, package: str = "") -> list[tuple[int, str]]:
    """Every import in a module of `package` (which resolves its relative imports): (line, what it
    imports, as a dotted name)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def package_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).parts[:-1])


def offences(package: str) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, name in imported(ast.parse(path.read_text(), str(path)), package_of(path)):
            if name.split(".")[0] in FORBIDDEN[package]:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_only_what_the_layout_allows(package):
    assert offences(package) == []


def test_the_check_sees_an_import_inside_a_function_and_a_relative_one():
    tree = ast.parse("def f():\n    from connector.commitlog import Change\n    import spark.job\n"
                     "from ..job.sinks import Sink\n")
    assert imported(tree, "spark.mirror") == [(4, "spark.job.sinks.Sink"), (2, "connector.commitlog.Change"),
                                                    (3, "spark.job")]


@pytest.mark.parametrize("directory", sorted(CRATES))
def test_a_crate_depends_only_on_what_the_layout_allows(directory):
    manifest = tomllib.loads((ROOT / directory / "Cargo.toml").read_text())
    assert manifest["package"]["name"] == CRATES[directory]
    depends = set(manifest.get("dependencies", {}))
    assert depends & CRATE_FORBIDDEN[CRATES[directory]] == set()


def modules() -> dict[str, set[str]]:
    """The import graph between the packages' modules (a package is its `__init__.py`), imports inside
    functions and relative ones too."""
    files = {}
    for package in FORBIDDEN:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        for _, imported_name in imported(ast.parse(path.read_text(), str(path)), package_of(path)):
            module = imported_name if imported_name in files else imported_name.rpartition(".")[0]
            if module in files and module != name:
                graph.setdefault(name, set()).add(module)
    return graph


def units(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph between the packages' parts: a subpackage, or a module at a package's top."""
    def unit(module: str) -> str:
        return ".".join(module.split(".")[:2])

    out: dict[str, set[str]] = {}
    for source, targets in graph.items():
        out.setdefault(unit(source), set()).update(unit(t) for t in targets if unit(t) != unit(source))
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each circle of the graph once, as the path that closes it."""
    found, done = [], set()

    def walk(node: str, path: list[str]) -> None:
        for after in sorted(graph.get(node, ())):
            if after in path:
                circle = path[path.index(after):]
                if frozenset(circle) not in done:
                    done.add(frozenset(circle))
                    found.append(circle + [after])
            elif len(path) < 12:
                walk(after, path + [after])

    for start in sorted(graph):
        walk(start, [start])
    return found


def test_no_two_modules_and_no_two_parts_of_the_house_import_each_other_even_by_a_detour():
    graph = modules()
    assert "spark.delivery.pipeline" in graph["spark.server.delivery"]
    assert "schemas.change" in graph["connector.commitlog.reader"]
    assert circles(graph) == []
    assert circles(units(graph)) == []


def test_a_circle_is_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
