"""Small helpers shared by tests: waiting for a condition, a fresh keyspace, a port nothing listens on,
the streams CLI run as scripts run it."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager

import pytest


def wait_for(probe, timeout: float = 15.0, what: str = "condition", interval: float = 0.1, paced: bool = True):
    """The first truthy value of `probe()`, polled until `timeout`; fails the test otherwise.

    Polled every `interval` at first, then less often the longer the wait (once a second after ten), and
    never for more than a quarter of the time: many probes read a Delta table through Spark or parse a
    runner's log, and probing without a pause took CPU from the processes under test. A probe that does
    the work it waits for (writes until a segment fills) is called every `interval` (`paced=False`)."""
    began = time.monotonic()
    deadline = began + timeout
    while True:
        probed = time.monotonic()
        value = probe()
        if value:
            return value
        now = time.monotonic()
        if now >= deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        pause = max(interval, min(1.0, (now - began) / 10), 3 * (now - probed)) if paced else interval
        time.sleep(min(pause, deadline - now))


_SCHEMA_CHANGE_TIMEOUT = 60.0  # s


@contextmanager
def new_keyspace(cql, prefix: str = "t", replication: str = "'class': 'SimpleStrategy', 'replication_factor': 1"):
    """A keyspace of a fresh name (`prefix_…`) for one test, dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    # Schema changes wait for the node's schema agreement and flushes: on a busy machine (the two CI lanes
    # side by side) longer than the driver's 10 s default.
    cql.execute(f"CREATE KEYSPACE {name} WITH replication = {{{replication}}}", timeout=_SCHEMA_CHANGE_TIMEOUT)
    yield name
    cql.execute(f"DROP KEYSPACE IF EXISTS {name}", timeout=_SCHEMA_CHANGE_TIMEOUT)


def unused_port() -> int:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        return unused.getsockname()[1]


def timeuuid(micros: int, digest: int) -> str:
    """A `cdc$time` as the Spark job makes it: the write time, the rest from a digest."""
    from spark.delivery.events import log_time

    return log_time(micros, (digest % (1 << 64)).to_bytes(8, "big") + bytes(8))


def micros(value: int):
    """`value` µs since the epoch as an aware UTC datetime."""
    import datetime

    return datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=value)


def release_series(cql) -> tuple[int, int]:
    """The (major, minor) Cassandra release of the node `cql` is connected to."""
    release = cql.execute("SELECT release_version FROM system.local").one().release_version
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


def streams_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`python -m spark.streams ARGS` as a subprocess, its output captured."""
    return subprocess.run([sys.executable, "-m", "spark.streams", *args], capture_output=True, text=True,
                          timeout=timeout)


def streams_cli_json(*args: str, timeout: float = 60):
    """The CLI's `--json` output, parsed, once it has exited 0."""
    completed = streams_cli(*args, "--json", timeout=timeout)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)
