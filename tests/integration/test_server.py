"""The subscription server on the real stack: CQL writes → connector → Kafka → runners (Spark) →
each subscription's sink, driven through the registry as an operator would."""
from __future__ import annotations

import datetime as dt
import json
import re
import signal
import time
from collections import Counter
from urllib.parse import urlsplit, urlunsplit
from urllib.request import urlopen

import psycopg
import pytest

from spark import rows as R
from spark.server.runner import Runner
from spark.subscriptions.leases import Leases
from spark.subscriptions.model import Change
from spark.subscriptions.statements import Statement
from tests.integration.delivered import delta_ids, pg_ids
from tests.integration.proxy import Relay
from tests.integration.serving import runner_process
from tests.support import wait_for

pytestmark = pytest.mark.integration


def insert(cql, keyspace: str, ids, qty=lambda i: i * 100) -> None:
    for i in ids:
        cql.execute(f"INSERT INTO {keyspace}.orders (id, qty, note) VALUES (%s, %s, %s)", (i, qty(i), f"n{i}"))


def running(runner: Runner, name: str, revision: int | None = None) -> bool:
    held = runner.held.get(name)
    return (held is not None and held.delivery is not None
            and (revision is None or held.subscription.revision == revision))


def test_create_pause_resume_alter_reset_cancel(spark, cql, keyspace, served, tmp_path):
    control, registry, run_runner, _ = served
    runner = run_runner(runner_id="only")
    table = f"{keyspace}.orders"
    audit_path, narrow_path = tmp_path / "audit", tmp_path / "narrow"
    control.create("audit", Change(table=table, sink="delta", sink_config={"path": str(audit_path)}))
    # A second subscription of the same table, with only inserts and only `qty`, runs beside it.
    control.create("narrow", Change(table=table, sink="delta", sink_config={"path": str(narrow_path)},
                                    columns=("qty",), operations=("insert",)))
    wait_for(lambda: running(runner, "audit") and running(runner, "narrow"), 90, "both subscriptions running")

    insert(cql, keyspace, [1, 2, 3])
    cql.execute(f"UPDATE {keyspace}.orders SET note = 'changed' WHERE id = 1")
    wait_for(lambda: sum(delta_ids(audit_path).values()) == 4 and sum(delta_ids(narrow_path).values()) == 3, 90,
             "rows 1-3 and the update, and the inserts in the narrow subscription")
    narrow = spark.read.format("delta").load(str(narrow_path / "cdc_log")).collect()
    assert sorted(json.loads(r.key)["id"] for r in narrow) == [1, 2, 3]  # the update is not an insert
    assert all(set(r.columns) == {"qty"} for r in narrow)

    query = runner.held["audit"].delivery.job.query
    control.run(Statement("pause", "audit"))
    # Watched closely: the moment it is let go, its query has stopped.
    wait_for(lambda: "audit" not in runner.held, 30, "the paused subscription stopped", interval=0.001)
    assert not query.isActive
    before_pause = time.time()
    insert(cql, keyspace, [4, 5, 6])
    time.sleep(5)  # ten triggers: a query still running would have delivered by now
    assert sorted(delta_ids(audit_path)) == [1, 2, 3]

    resumed_at = time.monotonic()
    control.run(Statement("resume", "audit"))
    wait_for(lambda: 4 in delta_ids(audit_path), 90, "the first row written while paused")
    print(f"\nresume → first row: {time.monotonic() - resumed_at:.1f} s")
    wait_for(lambda: set(delta_ids(audit_path)) == set(range(1, 7)), 60, "rows written while paused")
    assert delta_ids(audit_path) == Counter({1: 2, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1})

    altered = control.alter("audit", Change(filter="qty > 100"))
    wait_for(lambda: running(runner, "audit", altered.revision), 60, "the altered subscription restarted")
    insert(cql, keyspace, [7], qty=lambda i: 50)
    insert(cql, keyspace, [8])
    wait_for(lambda: 8 in delta_ids(audit_path), 60, "row 8")
    assert 7 not in delta_ids(audit_path)

    # Start over from just before the pause: 4, 5, 6 and 8 again (7 is still filtered out).
    reset = control.run(Statement("reset", "audit", Change(start=dt.datetime.fromtimestamp(
        before_pause, dt.timezone.utc).isoformat())))
    assert reset.epoch == 2
    wait_for(lambda: sum(delta_ids(audit_path).values()) == 12, 90, "the rows since the reset point")
    assert delta_ids(audit_path) == Counter({1: 2, 2: 1, 3: 1, 4: 2, 5: 2, 6: 2, 8: 2})
    wait_for(lambda: sum(p.rows_delivered for p in registry.progress("audit", 2)) == 4, 30, "progress of epoch 2")
    shown = control.show("audit")
    assert shown["rows_delivered"] == 4 and shown["ranges"] >= 1 and shown["runner"] == "only"

    # `reset --to snapshot`: the progress goes, a snapshot version is recorded, and every row of the table
    # the filter lets through (qty > 100: not 1, not 7) is read again, range by range.
    reset = control.run(Statement("reset", "audit", Change(start="snapshot")))
    assert reset.epoch == 3
    wait_for(lambda: (v := registry.snapshot_version("audit", 3)) is not None and v.finished is not None, 90,
             "the snapshot of the reset finished")
    assert all(p.snapshot_token == p.range_end for p in registry.progress("audit", 3))
    wait_for(lambda: delta_ids(audit_path, R.ROW_READ) == Counter({2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 8: 1}), 60,
             "every row the filter lets through read again")

    control.run(Statement("cancel", "audit"))
    leases = Leases(cql, registry.keyspace, "probe", 5)
    wait_for(lambda: "audit" not in leases.holders(), 30, "the cancelled subscription's lease handed back")
    assert "audit" not in runner.held
    assert registry.get("audit").state == "cancelled"
    assert running(runner, "narrow")


def test_a_sink_slow_then_down_delays_only_its_own_subscription(cql, keyspace, served, stack, tmp_path):
    """PostgreSQL held (slow), then unreachable for 20 s (several retries with backoff): the Delta subscription
    beside it delivers at its own pace throughout; the PostgreSQL one fails, then catches up once, exactly."""
    control, registry, run_runner, _ = served
    runner = run_runner(runner_id="only")
    target = urlsplit(stack.postgres_dsn)
    relay = Relay(target.hostname, target.port).up()
    relayed = urlunsplit(target._replace(netloc=target.netloc.replace(f"{target.hostname}:{target.port}",
                                                                      f"127.0.0.1:{relay.port}")))
    schema, lake = f"{keyspace}_pg", tmp_path / "lake"
    table = f"{keyspace}.orders"
    control.create("pg", Change(table=table, sink="postgres", sink_config={"dsn": relayed, "schema": schema}))
    control.create("lake", Change(table=table, sink="delta", sink_config={"path": str(lake)}))
    wait_for(lambda: running(runner, "pg") and running(runner, "lake"), 90, "both subscriptions running")
    try:
        insert(cql, keyspace, [1, 2, 3])
        wait_for(lambda: len(pg_ids(stack.postgres_dsn, schema)) == 3 and len(delta_ids(lake)) == 3, 90,
                 "rows 1-3 in both sinks")

        # Slow at its slowest: PostgreSQL answers nothing until released, however long the other
        # subscription takes on a loaded machine.
        relay.hold()
        insert(cql, keyspace, [4, 5, 6])
        wait_for(lambda: set(delta_ids(lake)) == set(range(1, 7)), 60, "the other subscription, at its pace")
        assert len(pg_ids(stack.postgres_dsn, schema)) == 3, "the stalled sink's batch went through"
        relay.release()
        wait_for(lambda: len(pg_ids(stack.postgres_dsn, schema)) == 6, 90, "the slow sink got there")

        relay.down()
        down_at = time.monotonic()
        insert(cql, keyspace, [7, 8, 9])
        wait_for(lambda: registry.get("pg").state == "failing", 60, "the subscription whose sink is down failing")
        assert registry.get("pg").last_error
        wait_for(lambda: set(delta_ids(lake)) == set(range(1, 10)), 60, "the other subscription flowing")
        time.sleep(max(0.0, 10 - (time.monotonic() - down_at)))
        insert(cql, keyspace, [10, 11, 12])
        wait_for(lambda: set(delta_ids(lake)) == set(range(1, 13)), 60, "the other subscription, later")
        assert registry.get("pg").state == "failing" and len(pg_ids(stack.postgres_dsn, schema)) == 6
        time.sleep(max(0.0, 20 - (time.monotonic() - down_at)))

        relay.up()
        back_at = time.monotonic()
        wait_for(lambda: len(pg_ids(stack.postgres_dsn, schema)) == 12, 90, "the sink caught up")
        print(f"\nsink back → caught up: {time.monotonic() - back_at:.1f} s")
        wait_for(lambda: registry.get("pg").state == "active", 30, "the subscription active again")
        assert pg_ids(stack.postgres_dsn, schema) == Counter(range(1, 13))
        assert delta_ids(lake) == Counter(range(1, 13))
        assert registry.status("pg").retries >= 2
        assert registry.get("pg").last_error is None
    finally:
        relay.down()
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_two_runners_split_subscriptions_and_take_over_after_kill_9(cql, keyspace, served, stack, tmp_path):
    control, registry, _, base = served
    table = f"{keyspace}.orders"
    paths = {name: tmp_path / name for name in ("s1", "s2")}
    for name, path in paths.items():
        control.create(name, Change(table=table, sink="delta", sink_config={"path": str(path)}))
    runners = {runner_id: runner_process(stack, base, tmp_path, runner_id, lease_ttl=8) for runner_id in ("a", "b")}
    leases = Leases(cql, registry.keyspace, "probe", 5)
    try:
        split = wait_for(lambda: (h := leases.holders()) and len(h) == 2 and len(set(h.values())) == 2 and h, 180,
                         "the two runners holding one subscription each")
        insert(cql, keyspace, [1, 2, 3])
        for path in paths.values():
            wait_for(lambda: len(delta_ids(path)) == 3, 120, "rows 1-3 in both sinks")

        victim = split["s1"]
        survivor = "b" if victim == "a" else "a"
        runners[victim].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        runners[victim].wait(30)
        insert(cql, keyspace, [4, 5, 6])
        acknowledged = time.time()
        wait_for(lambda: leases.holders().get("s1") == survivor, 60, "the survivor holding s1")
        claimed = time.monotonic() - killed_at
        wait_for(lambda: 4 in delta_ids(paths["s1"]), 120, "s1 delivering from the survivor")
        print(f"\nkill -9 → s1 claimed by the survivor: {claimed:.1f} s; → its first row: "
              f"{time.monotonic() - killed_at:.1f} s")
        for path in paths.values():
            wait_for(lambda: len(delta_ids(path)) == 6, 120, "rows 4-6 in both sinks")
            assert delta_ids(path) == Counter(range(1, 7))

        port = int(re.search(r"metrics on port (\d+)", (tmp_path / f"runner-{survivor}.log").read_text()).group(1))

        def delivered_by_survivor() -> float:
            metrics = urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            found = re.search(r'ringtail_subscription_rows_delivered_total\{subscription="s1"\} (\S+)', metrics)
            return float(found.group(1)) if found else 0.0

        # The runner counts a batch once its progress is recorded, a moment after the sink shows it.
        wait_for(lambda: delivered_by_survivor() >= 3, 30, "the survivor's figure of rows 4-6 delivered to s1")

        def resolved_by_survivor() -> float:
            metrics = urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            found = re.search(r'ringtail_subscription_resolved_timestamp_seconds\{keyspace="[^"]+",subscription="s1",'
                              r'table="orders"\} (\S+)', metrics)
            return float(found.group(1)) if found else 0.0

        # The rows written before it are in the sink: so a resolved timestamp past them says.
        wait_for(lambda: resolved_by_survivor() > acknowledged, 60, "the survivor's resolved timestamp of s1")
        assert urlopen(f"http://127.0.0.1:{port}/health", timeout=10).status == 200

        runners[survivor].send_signal(signal.SIGTERM)
        assert runners[survivor].wait(120) == 0
        assert leases.holders() == {}
    finally:
        for process in runners.values():
            if process.poll() is None:
                process.kill()
                process.wait(30)
