"""Benchmarks are run by hand, not by the suite: at least make sure each one still parses and imports
what it names."""
import ast
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize("script", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_bench_script_parses_and_its_imports_resolve(script: Path) -> None:
    tree = ast.parse(script.read_text(), filename=str(script))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            root = node.module.split(".")[0]
            if (BENCH / f"{root}.py").exists():  # a script beside it (run from bench/, it is on the path)
                continue
            assert importlib.util.find_spec(node.module) is not None, f"{script.name}: {node.module}"
