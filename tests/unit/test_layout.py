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
CRATES = {"schemas/native": "ringtail-contract", "connector/native": "ringtail-commitlog", "spark/native": "ringtail-events"}
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


def units() -> dict[str, set[str]]:
    """The import graph between the packages' parts: a subpackage, or a module at a package's top."""
    def unit(parts: list[str]) -> str:
        return ".".join(parts[:2]).removesuffix(".py")

    graph: dict[str, set[str]] = {}
    for package in FORBIDDEN:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).parts
            source = unit(list(relative)) if len(relative) > 1 else package
            for _, name in imported(ast.parse(path.read_text(), str(path)), package_of(path)):
                parts = name.split(".")
                if parts[0] in FORBIDDEN and len(parts) > 1:
                    target = unit(parts)
                    where = ROOT / target.replace(".", "/")
                    if target != source and (where.is_dir() or where.with_suffix(".py").is_file()):
                        graph.setdefault(source, set()).add(target)
    return graph


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


def test_no_two_parts_of_the_house_import_each_other_even_by_a_detour():
    graph = units()
    assert "spark.delivery" in graph["spark.server"] and "schemas.change" in graph["connector.commitlog"]
    assert circles(graph) == []


def test_a_circle_is_found():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
