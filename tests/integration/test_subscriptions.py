"""Subscriptions' registry and control verbs against the real cluster: the command line and the
statement form, and bad input refused with the reason and nothing changed."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from deploy.local.endpoints import ROOT
from spark.subscriptions.control import Control, spark_filter_check
from spark.subscriptions.model import Change, InvalidSubscription
from spark.subscriptions.registry import DuplicateSubscription, SubscriptionRegistry

pytestmark = pytest.mark.integration


@pytest.fixture
def control_cli(stack, cql, keyspace, tmp_path):
    """A table to subscribe to, a registry keyspace of the test's own, and a runner of the command line."""
    cql.execute(f"CREATE TABLE {keyspace}.orders (id int PRIMARY KEY, qty int, note text) WITH cdc = true")
    registry = f"{keyspace}_reg"
    config = tmp_path / "job.yaml"
    config.write_text(json.dumps({"cassandra_hosts": [stack.cassandra_host], "cassandra_port": stack.cassandra_port,
                                  "generations_keyspace": registry, "log_format": "text"}))

    def run(*args: str, expect: int = 0):
        result = subprocess.run([sys.executable, "-m", "spark.subscriptions", "--config", str(config), "--json",
                                 *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert result.returncode == expect, result.stderr
        return json.loads(result.stdout) if expect == 0 else result.stderr

    yield run
    cql.execute(f"DROP KEYSPACE IF EXISTS {registry}")


def test_the_verbs_through_the_command_line_and_statements(control_cli, keyspace, stack):
    table = f"{keyspace}.orders"
    created = control_cli("create", "audit", "--table", table, "--sink", "postgres", "--sink-config",
                          f"dsn={stack.postgres_dsn}", "--columns", "qty", "--ops", "insert,update")
    assert (created["state"], created["revision"], created["columns"], created["operations"]) == (
        "active", 1, ["qty"], ["insert", "update"])
    assert control_cli("pause", "audit")["state"] == "paused"
    resumed = control_cli("resume", "audit")
    assert (resumed["state"], resumed["revision"]) == ("active", 2)
    altered = control_cli("alter", "audit", "--filter", "qty > 5 AND `cdc$operation` = 2")
    assert (altered["filter"], altered["revision"]) == ("qty > 5 AND `cdc$operation` = 2", 3)
    reset = control_cli("reset", "audit", "--to", "2026-01-01T00:00:00+00:00")
    assert (reset["start"], reset["revision"]) == ("2026-01-01T00:00:00+00:00", 4)
    shown = control_cli("show", "audit")
    assert (shown["name"], shown["ranges"], shown["rows_delivered"]) == ("audit", 0, 0)

    made = control_cli("sql", f"CREATE SUBSCRIPTION lake ON {table} TO delta WITH path = '/tmp/lake' START 'earliest'")
    assert (made["sink"], made["sink_config"], made["start"]) == ("delta", {"path": "/tmp/lake"}, "earliest")
    assert control_cli("sql", "PAUSE SUBSCRIPTION lake")["state"] == "paused"
    assert [s["name"] for s in control_cli("sql", f"SHOW SUBSCRIPTIONS ON {table}")] == ["audit", "lake"]
    assert control_cli("sql", "DROP SUBSCRIPTION lake")["state"] == "cancelled"
    assert "subscription 'lake' is cancelled: it cannot become active" in control_cli("resume", "lake", expect=2)
    assert [s["state"] for s in control_cli("list")] == ["active", "cancelled"]


def test_bad_input_is_refused_with_the_reason_and_changes_nothing(control_cli, keyspace, stack):
    table = f"{keyspace}.orders"
    control_cli("create", "audit", "--table", table, "--sink", "delta", "--sink-config", "path=/tmp/a")
    before = control_cli("list")
    refusals = [
        (("create", "x", "--table", f"{keyspace}.nope", "--sink", "delta", "--sink-config", "path=p"),
         f"table {keyspace}.nope does not exist"),
        (("create", "audit", "--table", table, "--sink", "delta", "--sink-config", "path=p"),
         "a subscription named 'audit' exists already"),
        (("create", "x", "--table", table, "--sink", "mongo"), "unknown sink 'mongo'"),
        (("create", "x", "--table", table, "--sink", "postgres", "--sink-config", "host=h"), "sink postgres needs dsn"),
        (("create", "x", "--table", table, "--sink", "delta", "--sink-config", "path=p", "--columns", "colour"),
         "has no column 'colour'"),
        (("alter", "nobody", "--filter", "qty > 1"), "no subscription is named 'nobody'"),
        (("sql", f"CREATE SUBSCRIPTION x ON {table} delta"), "expected TO at character"),
        (("create", "x", "--table", table, "--sink", "delta", "--sink-config", "path=p", "--filter", "qty >"),
         "is not a Spark SQL expression"),
    ]
    for args, message in refusals:
        assert message in control_cli(*args, expect=2), args
    assert control_cli("list") == before


def test_two_creates_of_one_name_cannot_both_win(cql, keyspace, spark):
    """The create is a lightweight transaction: the second of two racing creates is refused."""
    cql.execute(f"CREATE TABLE {keyspace}.orders (id int PRIMARY KEY, qty int) WITH cdc = true")
    registry = SubscriptionRegistry(cql, f"{keyspace}_reg")
    registry.create_schema()
    try:
        first, second = (Control(registry, cql, spark_filter_check(spark)) for _ in range(2))
        change = Change(table=f"{keyspace}.orders", sink="delta", sink_config={"path": "p"}, filter="qty > 1")
        first.create("race", change)
        with pytest.raises(DuplicateSubscription):
            second.create("race", change)
        with pytest.raises(InvalidSubscription, match="not a Spark SQL expression"):
            first.alter("race", Change(filter="(qty > 1"))
        assert registry.get("race").revision == 1
    finally:
        cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}_reg")


def test_ringtails_keyspace_is_created_with_the_replication_set(cql, keyspace, stack, spark):
    """The runner (through the registry) and the job (through its generation keeper) each create the
    keyspace with `generations_replication` when it is missing; here as a cluster would set it."""
    from spark.delivery.generations import GenerationKeeper
    from spark.subscriptions.settings import ServerSettings
    from spark.server.runner import Runner

    dc = cql.execute("SELECT data_center FROM system.local").one().data_center
    replication = {"class": "NetworkTopologyStrategy", dc: 1}
    expected = {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", dc: "1"}
    for created_by in ("runner", "keeper"):
        name = f"{keyspace}_{created_by}"
        settings = ServerSettings(cassandra_hosts=(stack.cassandra_host,), cassandra_port=stack.cassandra_port,
                                  generations_keyspace=name, generations_replication=replication, metrics_port=0)
        opened = Runner(spark, settings, cql) if created_by == "runner" else GenerationKeeper(settings)
        try:
            row = cql.execute("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (name,)).one()
            assert dict(row.replication) == expected, created_by
        finally:
            opened.close()
            cql.execute(f"DROP KEYSPACE IF EXISTS {name}")
