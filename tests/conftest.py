"""Test fixtures shared by the whole suite.

Integration tests (everything under tests/integration) talk to real services. By default they use the
local stack that `deploy/local/start` runs (described in `<run dir>/stack.json`); with
RINGTAIL_TEST_BACKEND=containers and a Docker daemon they use testcontainers instead. With neither,
they fail with a message naming the command that starts the stack — they are never skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deploy.local.endpoints import Stack, StackUnavailable, connect_stack, spark_class_options, stack_run_dir
from tests.integration import side_stacks
from tests.support import new_keyspace

ROOT = Path(__file__).resolve().parent.parent
INTEGRATION = ROOT / "tests" / "integration"


# The tests' Spark drivers (this session's, and the jobs and runners they start) live minutes and read
# batches of a few rows: the JIT's optimising tier and a parallel collector cost them more CPU than they
# save on a machine of two cores (a sixth off the Spark tests' time, measured); users' drivers keep the
# JVM's defaults. On the local stack they also map its class archive (the `spark` fixture adds it).
DRIVER_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_OWN_DRIVER_OPTIONS = "SPARK_SUBMIT_OPTS" not in os.environ
os.environ.setdefault("SPARK_SUBMIT_OPTS", DRIVER_OPTIONS)


def _local_backend() -> bool:
    return os.environ.get("RINGTAIL_TEST_BACKEND", "local") == "local"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Integration tests marked; the unit tests first, then the modules with stacks of their own (which
    start in the background meanwhile), then the rest — each module's tests kept together, in order."""
    topology = {side.module for side in side_stacks.SIDE_STACKS}

    def rank(item: pytest.Item) -> int:
        path = Path(item.fspath)
        if INTEGRATION not in path.parents:
            return 0 if "unit" in path.parts else 1
        return 2 if path.name in topology else 3

    for item in items:
        if INTEGRATION in Path(item.fspath).parents:
            item.add_marker(pytest.mark.integration)
    items.sort(key=rank)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Begin the side stacks the selected tests need, each while the tests before its module run."""
    if not _local_backend() or session.config.option.collectonly or not (stack_run_dir() / "stack.json").exists():
        return
    # In the order they run; by path, as a module of another directory may share a side stack module's name.
    modules = list(dict.fromkeys(Path(item.fspath).resolve() for item in session.items))
    sides = sorted((s for s in side_stacks.SIDE_STACKS if INTEGRATION / s.module in modules),
                   key=lambda s: modules.index(INTEGRATION / s.module))
    side_stacks.begin_in_turn(sides, stack_run_dir())


def pytest_sessionfinish(session: pytest.Session) -> None:
    side_stacks.end_unused(stack_run_dir())


@pytest.fixture(scope="session")
def stack() -> Stack:
    try:
        if not _local_backend():
            from tests.containers import container_stack

            yield from container_stack()
        else:
            yield connect_stack()
    except StackUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def cql(stack: Stack):
    from schemas.runtime.session import connect

    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    yield session
    cluster.shutdown()


@pytest.fixture
def keyspace(cql) -> str:
    """A fresh keyspace for one test, dropped afterwards."""
    with new_keyspace(cql) as name:
        yield name


@pytest.fixture(scope="session")
def spark(stack: Stack):
    """One local Spark session (with the stack's Kafka, Avro and Delta jars, and S3A reaching its object
    store) for every test using Spark."""
    from spark.job.config import JobSettings
    from spark.delivery.pipeline import spark_session
    from spark.location import S3Access

    if _local_backend() and _OWN_DRIVER_OPTIONS:
        # This driver, and those tests start from here on, map the stack's class archive: one starts in about
        # 10 s of CPU instead of 17. Waited for here, once its build (begun with the stack) has ended, and not
        # by the tests before the first to use Spark.
        os.environ["SPARK_SUBMIT_OPTS"] = f"{DRIVER_OPTIONS} {spark_class_options()}".strip()
    store = stack.object_store
    session = spark_session(JobSettings(
        spark_master="local[2]", spark_jars=stack.spark_jars + (store.jars if store else ()),
        spark_conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                    **(S3Access.from_environment(store.environment()).hadoop_conf() if store else {})}))
    yield session
    session.stop()


@pytest.fixture(params=["native", "python"])
def json_texts_by(request, monkeypatch) -> str:
    """A test run twice: log rows' JSON texts made by the native core, then by the reference without it
    (`spark.sinks.json_rows`)."""
    from spark.sinks import json_rows

    if request.param == "python":
        monkeypatch.setattr(json_rows, "_native_texts", None)
    elif json_rows._native_texts is None:
        pytest.fail("the native core is not built: `pip install -e .` builds it")
    return request.param
