"""Fixtures of the integration tests that run the connector."""
from __future__ import annotations

import re
import threading
import uuid
from contextlib import contextmanager

import pytest

from deploy.local.endpoints import Stack
from deploy.local.processes import ConnectorProcess
from spark.job.config import JobSettings
from spark.server.runner import Runner
from spark.subscriptions.control import Control, spark_filter_check
from spark.subscriptions.registry import SubscriptionRegistry
from spark.subscriptions.settings import ServerSettings
from tests.integration.pipeline import EventConsumer

LOG_TAIL = 60  # lines of each process log shown with a failed test
LOG_PROBLEMS = 20  # its first warnings and errors, shown before the tail
_PROBLEM = re.compile(r' (WARNING|ERROR|CRITICAL) |"level": "(warning|error|critical)"')


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries, for each process log it wrote (connector, runner: they live in its
    tmp_path), its first warnings and errors and then its end: CI shows only what pytest prints, and the
    processes' side is half the story. The warnings come first: a connector's end can be other tests' DDL
    only, while the line that says why it stopped came minutes before."""
    report = yield
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and tmp_path is not None:
        for log in sorted(tmp_path.glob("**/*.log")):
            if log.is_file() and log.with_suffix(".yaml").exists():  # a process started with its config file
                lines = log.read_text(errors="replace").splitlines()
                problems = [line for line in lines if _PROBLEM.search(line)][:LOG_PROBLEMS]
                if problems:
                    report.sections.append((f"log {log.name} (its first {len(problems)} warnings and errors)",
                                            "\n".join(problems)))
                report.sections.append((f"log {log.name} (last {LOG_TAIL} lines)", "\n".join(lines[-LOG_TAIL:])))
    return report


@pytest.fixture(scope="session")
def node(stack) -> Stack:
    """The stack whose Cassandra node a test writes to and reads the commit log of: the main one here;
    test_cassandra_versions runs tests written against it on an older node by overriding it (and `cql`)."""
    return stack


@pytest.fixture
def pipeline(stack, tmp_path):
    """Make connectors (not started) with a topic prefix of their own, each with a consumer of its
    topics: `pipeline(name="state", on=None, **settings)`, `settings` as for ConnectorProcess, `on` a
    stack other than the main one. Every one made is stopped at the end."""
    made = []

    def make(name: str = "state", on: Stack | None = None, **settings):
        prefix = f"rt{uuid.uuid4().hex[:8]}"
        connector = ConnectorProcess(on or stack, tmp_path / name, prefix, **settings)
        consumer = EventConsumer(on or stack, prefix)
        made.append((connector, consumer))
        return connector, consumer

    yield make
    for connector, consumer in made:
        connector.stop()
        consumer.close()


@pytest.fixture
def job(node, cql, keyspace, tmp_path, pipeline):
    """A running connector beside `node` with its own topic prefix, a consumer, and job settings reading its
    topics."""
    connector, consumer = pipeline(on=node)
    connector.start_from_now()
    connector.start()
    settings = JobSettings(
        kafka_bootstrap_servers=node.kafka_bootstrap, registry_url=node.registry_url,
        topic_prefix=connector.prefix,
        cassandra_hosts=(node.cassandra_host,), cassandra_port=node.cassandra_port,
        generations_keyspace=f"{keyspace}_gen", delta_path=tmp_path / "delta",
        checkpoint_dir=tmp_path / "checkpoint", trigger_interval="500 milliseconds",
        generation_check_interval=0.5, generation_delay=8.0, log_format="text")
    yield connector, consumer, settings
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}_gen")


@contextmanager
def serving(stack: Stack, cql, keyspace: str, tmp_path, connector: ConnectorProcess, spark):
    """What `served` gives, on `stack` (its session `cql`), with `connector` (made, not started)."""
    connector.start_from_now()
    connector.start()
    cql.execute(f"CREATE TABLE {keyspace}.orders (id int PRIMARY KEY, qty int, note text) WITH cdc = true")
    base = dict(kafka_bootstrap_servers=stack.kafka_bootstrap, registry_url=stack.registry_url,
                topic_prefix=connector.prefix, cassandra_hosts=(stack.cassandra_host,),
                cassandra_port=stack.cassandra_port, generations_keyspace=f"{keyspace}_reg",
                checkpoint_dir=tmp_path / "checkpoints", trigger_interval="500 milliseconds",
                generation_check_interval=0.5, generation_delay=8.0, lease_ttl=6, poll_interval=1.0,
                retry_initial=2.0, retry_max=8.0, metrics_port=0, log_format="text")
    registry = SubscriptionRegistry(cql, base["generations_keyspace"])
    registry.create_schema()
    control = Control(registry, cql, spark_filter_check(spark))
    started = []

    def run_runner(**settings) -> Runner:
        runner = Runner(spark, ServerSettings(**{**base, **settings}), cql)
        stop = threading.Event()
        thread = threading.Thread(target=runner.run, args=(stop,), daemon=True)
        thread.start()
        started.append((stop, thread))
        return runner

    yield control, registry, run_runner, base
    for stop, thread in started:
        stop.set()
        thread.join(120)
    cql.execute(f"DROP KEYSPACE IF EXISTS {base['generations_keyspace']}")


@pytest.fixture
def served(stack, cql, keyspace, tmp_path, pipeline, spark):
    """A running connector, a table `orders` to subscribe to, the registry and its control, and
    `run_runner(**settings)`: a runner in this process (stopped at the end)."""
    connector, _ = pipeline()
    with serving(stack, cql, keyspace, tmp_path, connector, spark) as served:
        yield served
