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


def imported(tree: ast.AST) -> list[tuple[int, str]]:
    """Every absolute import of a module: (line, top-level package)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def offences(package: str) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, top in imported(ast.parse(path.read_text(), str(path))):
            if top in FORBIDDEN[package]:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_only_what_the_layout_allows(package):
    assert offences(package) == []


def test_the_check_sees_an_import_inside_a_function():
    tree = ast.parse("def f():\n    from connector.commitlog import Change\n    import spark.job\n")
    assert imported(tree) == [(2, "connector"), (3, "spark")]


@pytest.mark.parametrize("directory", sorted(CRATES))
def test_a_crate_depends_only_on_what_the_layout_allows(directory):
    manifest = tomllib.loads((ROOT / directory / "Cargo.toml").read_text())
    assert manifest["package"]["name"] == CRATES[directory]
    depends = set(manifest.get("dependencies", {}))
    assert depends & CRATE_FORBIDDEN[CRATES[directory]] == set()
