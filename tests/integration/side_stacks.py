"""Stacks of their own for the topology modules — the ring (`test_ring`), the secured stack (`test_secured`),
a Spark cluster beside a Cassandra node and a broker of its own (`test_spark_cluster`), a Cassandra 4.0 and
a 4.1 node (`test_cassandra_versions`): each started by the stack's own script, in a run directory and on
addresses of its own, with the main stack's fetched services, and thrown away at its module's end. What a
side stack lacks (the ring's and the cluster's registry, PostgreSQL, object store) is the main stack's.

Starting one takes a minute or two of the machine, and one started idles until its module runs. Once
the tests are collected the session begins the first in the background (`begin_in_turn`, from
tests/conftest.py, which runs the unit tests first and these modules next), and each next one when a
module is done with its stack (`forget`); a module's fixture waits for its stack (`started`). A stack begun
whose module never ran is stopped when the session ends (`end_unused`)."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deploy.local.endpoints import ROOT, Stack, nodes_of

STACK = ROOT / "deploy" / "local" / "stack.py"
NODES = BROKERS = 3  # the ring's


@dataclass(frozen=True)
class SideStack:
    name: str  # its run directory under the main stack's
    module: str  # the test module it serves
    services: tuple[str, ...]  # what `start` starts
    settings: tuple[tuple[str, str], ...]  # its stack settings (RINGTAIL_STACK_*), beside the run directory

    def env(self, main_run_dir: Path | None, **more: str) -> dict[str, str]:
        base = main_run_dir or ROOT / ".run"
        return {**os.environ, **dict(self.settings), "RINGTAIL_STACK_RUN_DIR": str(base / self.name),
                "RINGTAIL_STACK_DIST_DIR": str(base / "dist"), **more}

    def run_dir(self, main_run_dir: Path | None) -> Path:
        return Path(self.env(main_run_dir)["RINGTAIL_STACK_RUN_DIR"])

    def command(self, main_run_dir: Path | None, verb: str, *services: str, check: bool = True,
                **more: str) -> subprocess.CompletedProcess:
        """`stack.py verb services` on this stack (its own services when none are named)."""
        result = subprocess.run([sys.executable, str(STACK), verb, *(services or self.services)],
                                env=self.env(main_run_dir, **more), cwd=ROOT, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0 or not check, \
            f"stack.py {verb} {' '.join(services or self.services)}:\n{result.stdout}{result.stderr}"
        return result

    def describe(self, main: Stack) -> Stack:
        """`main` with the services this stack starts in place of its own (this stack's `stack.json`, which
        describes every service, started or not)."""
        run_dir = self.run_dir(main.run_dir)
        described = json.loads((run_dir / "stack.json").read_text())
        nodes = nodes_of(described)
        more = {field: described[service][key] for field, service, key in (
            ("registry_url", "registry", "url"), ("postgres_dsn", "postgres", "dsn"), ("mysql_dsn", "mariadb", "dsn"))
            if service in self.services}
        if "kafka" in self.services:
            more["kafka_bootstrap"] = described["kafka"]["bootstrap_servers"]
        return dataclasses.replace(main, cassandra_host=nodes[0].host, cdc_raw=nodes[0].cdc_raw, nodes=nodes,
                                   run_dir=run_dir, **more)


RING = SideStack("ring", "test_ring.py", ("cassandra", "kafka"), (
    ("RINGTAIL_STACK_HOST", os.environ.get("RINGTAIL_TEST_RING_HOST", "127.0.0.11")),
    ("RINGTAIL_STACK_CASSANDRA_NODES", str(NODES)), ("RINGTAIL_STACK_KAFKA_BROKERS", str(BROKERS)),
    ("RINGTAIL_STACK_CASSANDRA_HEAP", "768M"), ("RINGTAIL_STACK_KAFKA_HEAP", "384M"),
    ("RINGTAIL_STACK_CASSANDRA_JMX_PORT", os.environ.get("RINGTAIL_TEST_RING_JMX_PORT", "7299"))))
SECURED = SideStack("secured", "test_secured.py", ("cassandra", "kafka", "registry", "registry-gate", "postgres",
                                                   "mariadb"), (
    ("RINGTAIL_STACK_SECURE", "1"),
    ("RINGTAIL_STACK_HOST", os.environ.get("RINGTAIL_TEST_SECURED_HOST", "127.0.0.21")),
    ("RINGTAIL_STACK_CASSANDRA_HEAP", "768M"), ("RINGTAIL_STACK_KAFKA_HEAP", "384M"),
    ("RINGTAIL_STACK_REGISTRY_HEAP", "256M"),
    ("RINGTAIL_STACK_CASSANDRA_JMX_PORT", os.environ.get("RINGTAIL_TEST_SECURED_JMX_PORT", "7399"))))
CLUSTER = SideStack("cluster", "test_spark_cluster.py", ("cassandra", "kafka", "spark-master", "spark-worker"), (
    ("RINGTAIL_STACK_HOST", os.environ.get("RINGTAIL_TEST_CLUSTER_HOST", "127.0.0.41")),
    ("RINGTAIL_STACK_SPARK_WORKERS", "2"),
    ("RINGTAIL_STACK_CASSANDRA_HEAP", "768M"), ("RINGTAIL_STACK_KAFKA_HEAP", "384M"),
    ("RINGTAIL_STACK_CASSANDRA_JMX_PORT", os.environ.get("RINGTAIL_TEST_CLUSTER_JMX_PORT", "7499"))))
# A node of each older Cassandra series users run (test_cassandra_versions); the broker is the main stack's.
CASSANDRA_40, CASSANDRA_41 = (
    SideStack(f"cassandra-{version}", "test_cassandra_versions.py", ("cassandra",), (
        ("RINGTAIL_STACK_CASSANDRA_VERSION", version),
        ("RINGTAIL_STACK_HOST", os.environ.get(f"RINGTAIL_TEST_CASSANDRA_{series}_HOST", host)),
        ("RINGTAIL_STACK_CASSANDRA_HEAP", "768M"),
        ("RINGTAIL_STACK_CASSANDRA_JMX_PORT", os.environ.get(f"RINGTAIL_TEST_CASSANDRA_{series}_JMX_PORT", jmx))))
    for series, version, host, jmx in (("40", "4.0.19", "127.0.0.51", "7599"), ("41", "4.1.10", "127.0.0.52", "7699")))
SIDE_STACKS = (RING, SECURED, CLUSTER, CASSANDRA_40, CASSANDRA_41)

# Begun in the background: the start's process, its output file, when it began.
_begun: dict[str, tuple[subprocess.Popen, Path, float]] = {}
# To begin, in the order their modules run, each once the module before it is done; with the run directory.
_turns: list[tuple[SideStack, Path | None]] = []


def begin_in_turn(sides: list[SideStack], main_run_dir: Path | None) -> None:
    """Begin the first of `sides` (in the order their modules run) now, and each next one in its turn."""
    _turns[:] = [(side, main_run_dir) for side in sides]
    _next_turn()


def _next_turn() -> None:
    if _turns:
        side, main_run_dir = _turns.pop(0)
        begin(side, main_run_dir)


def begin(side: SideStack, main_run_dir: Path | None) -> None:
    """Start `side` afresh in the background."""
    run_dir = side.run_dir(main_run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    output = run_dir.parent / f"{side.name}-start.log"
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w") as out:
        process = subprocess.Popen([sys.executable, str(STACK), "start", *side.services],
                                   env=side.env(main_run_dir), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    _begun[side.name] = (process, output, time.monotonic())


def started(side: SideStack, main_run_dir: Path | None) -> Path:
    """`side` up (begun in the background, or started now); its run directory."""
    if side.name not in _begun:
        _turns[:] = [turn for turn in _turns if turn[0] != side]
        begin(side, main_run_dir)
    process, output, began = _begun[side.name]
    code = process.wait(600)
    assert code == 0, f"stack.py start {' '.join(side.services)}:\n{output.read_text(errors='replace')}"
    print(f"{side.name} stack up {time.monotonic() - began:.0f} s after its start began")
    return side.run_dir(main_run_dir)


@contextmanager
def running(side: SideStack, main: Stack, request: pytest.FixtureRequest) -> Iterator[Stack]:
    """`side` up (`started`) and described (`SideStack.describe`); killed and thrown away after: its data
    is not kept, so there is no need to stop it gently. If a test failed meanwhile (`request`'s session
    counts them), its Cassandra nodes' warnings and errors are reported first: the logs go with the stack."""
    failed = request.session.testsfailed
    try:
        started(side, main.run_dir)
        yield side.describe(main)
    finally:
        if request.session.testsfailed > failed:
            terminal = request.config.pluginmanager.get_plugin("terminalreporter")
            for line in node_log_report(side.run_dir(main.run_dir)):
                terminal.write_line(line)
        side.command(main.run_dir, "kill", check=False)
        forget(side)
        shutil.rmtree(side.run_dir(main.run_dir), ignore_errors=True)


@contextmanager
def session_on(stack: Stack) -> Iterator[Any]:
    """A driver session on `stack`'s first Cassandra node."""
    from schemas.runtime.session import connect

    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    try:
        yield session
    finally:
        cluster.shutdown()


_LEVELS = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR"}


def node_log_report(run_dir: Path, lines: int = 60) -> list[str]:
    """The last `lines` warnings and errors (with the stack traces after them) of the `system.log` of each
    Cassandra node that the stack in `run_dir` describes (`stack.json`), each node's under a heading; none
    for a stack that never described itself."""
    description = run_dir / "stack.json"
    nodes = json.loads(description.read_text()).get("cassandra", {}).get("nodes", []) if description.exists() else []
    report = []
    for node in nodes:
        log = Path(node["logs"]) / "system.log"
        if not log.exists():
            continue
        kept: list[str] = []
        keeping = False
        for line in log.read_text(errors="replace").splitlines():
            if line[:5].rstrip() in _LEVELS:  # a new entry (a trace's lines begin otherwise)
                keeping = line.startswith(("WARN ", "ERROR "))
            if keeping:
                kept.append(line)
        report += [f"--- {node['name']}: its last {lines} warning and error lines ---", *kept[-lines:]]
    return report


def forget(side: SideStack) -> None:
    """Its module is done with `side` (and has stopped it): the next stack's turn."""
    _begun.pop(side.name, None)
    _next_turn()


def end_unused(main_run_dir: Path | None) -> None:
    """Stop every stack begun whose module did not take it (a session cut short, a module deselected)."""
    for side in SIDE_STACKS:
        if side.name in _begun:
            process, _, _ = _begun.pop(side.name)
            process.wait(600)
            side.command(main_run_dir, "stop", check=False)
            shutil.rmtree(side.run_dir(main_run_dir), ignore_errors=True)
