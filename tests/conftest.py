"""Test fixtures shared by the whole suite.

Integration tests (everything under tests/integration) talk to real services. By default they use the
local stack that `deploy/local/start` runs (described in `<run dir>/stack.json`); with
RINGTAIL_TEST_BACKEND=containers and a Docker daemon they use testcontainers instead. With neither,
they fail with a message naming the command that starts the stack — they are never skipped.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from deploy.local.endpoints import Stack, StackUnavailable, connect_stack

ROOT = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    integration = ROOT / "tests" / "integration"
    for item in items:
        if integration in Path(item.fspath).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def stack() -> Stack:
    backend = os.environ.get("RINGTAIL_TEST_BACKEND", "local")
    try:
        if backend == "containers":
            from tests.containers import container_stack

            yield from container_stack()
        else:
            yield connect_stack()
    except StackUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def cql(stack: Stack):
    from connector.schema.session import connect

    cluster, session = connect([stack.cassandra_host], stack.cassandra_port)
    yield session
    cluster.shutdown()


@pytest.fixture
def keyspace(cql) -> str:
    """A fresh keyspace for one test, dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    cql.execute(
        f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    )
    yield name
    cql.execute(f"DROP KEYSPACE IF EXISTS {name}")


@pytest.fixture(scope="session")
def spark(stack: Stack):
    """One local Spark session (with the stack's Kafka, Avro and Delta jars, and S3A reaching its object
    store) for every test using Spark."""
    from spark.job.config import JobSettings
    from spark.job.pipeline import spark_session
    from spark.location import S3Access

    store = stack.object_store
    session = spark_session(JobSettings(
        spark_master="local[2]", spark_jars=stack.spark_jars + (store.jars if store else ()),
        spark_conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
                    **(S3Access.from_environment(store.environment()).hadoop_conf() if store else {})}))
    yield session
    session.stop()
