"""Resolved timestamps end to end: the connector beside the node sends its frontier, the job publishes each
table's T in PostgreSQL. At every T published, every write the client had seen acknowledged before T is
in the sink — through a connector killed (kill -9) mid-workload and started again — and T keeps moving
while the table is idle. And the HTTP sink posts them to a real server."""
from __future__ import annotations

import random
import statistics
import threading
import time
import uuid

import psycopg
import pytest

from deploy.local.receiver import Receiver
from spark.delivery.pipeline import start
from spark.sinks.contract import Resolved
from spark.sinks.http.sink import HttpSink
from spark.sinks.postgres.log import PostgresSink

pytestmark = pytest.mark.integration

SEED = 39
WRITES = 400


def now_us() -> int:
    return time.time_ns() // 1000


class Oracle:
    """Watches the sink's resolved timestamp of one table; at each new T, the writes acknowledged before T
    that the sink does not hold."""

    def __init__(self, dsn: str, schema: str, keyspace: str, table: str) -> None:
        self.dsn, self.schema, self.keyspace, self.table = dsn, schema, keyspace, table
        self.acknowledged: dict[int, int] = {}  # key → µs by which the client had the acknowledgement
        self.checks: list[tuple[int, int, list[int]]] = []  # (T, when seen, keys acknowledged before T missing)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def resolved(self, conn) -> int | None:
        row = conn.execute(f"SELECT resolved_us FROM {self.schema}.resolved"
                           " WHERE keyspace_name = %s AND table_name = %s", (self.keyspace, self.table)).fetchone()
        return row[0] if row else None

    def held(self, conn) -> set[int]:
        return {r[0] for r in conn.execute(f"SELECT (key->>'k')::int FROM {self.schema}.cdc_log WHERE \"table\" = %s",
                                           (self.table,))}

    def _watch(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self._stop.wait(0.2):
                resolved = self.resolved(conn)
                if resolved is None or (self.checks and self.checks[-1][0] == resolved):
                    continue
                seen = now_us()
                before = {k for k, at in list(self.acknowledged.items()) if at < resolved}
                self.checks.append((resolved, seen, sorted(before - self.held(conn))))

    def __enter__(self) -> Oracle:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(30)


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout:.0f} s: {what}")


def test_every_resolved_timestamp_covers_every_write_acknowledged_before_it(spark, cql, keyspace, job, stack):
    connector, _, settings = job
    settings = settings.model_copy(update={"resolved_interval": 0.5})
    cql.execute(f"CREATE TABLE {keyspace}.acks (k int PRIMARY KEY, v int) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.acks (k, v) VALUES (?, ?)")
    schema = f"rt_{uuid.uuid4().hex[:12]}"
    sink = PostgresSink(stack.postgres_dsn, schema=schema, app_id="resolved")
    running = start(spark, settings, sink)
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop,), daemon=True)
    thread.start()
    rng = random.Random(SEED)
    oracle = Oracle(stack.postgres_dsn, schema, keyspace, "acks")
    try:
        with oracle, psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            cql.execute(insert, (-1, 0))  # the table's topic exists from here: T is published for it
            oracle.acknowledged[-1] = now_us()
            wait_for(lambda: (oracle.resolved(conn) or 0) > oracle.acknowledged[-1], 120, "a first T")
            for k in range(WRITES):
                if k == WRITES // 3:
                    connector.kill()
                    killed_at = now_us()
                elif k == 2 * WRITES // 3:
                    connector.start()
                    restarted_at = now_us()
                cql.execute(insert, (k, rng.randrange(1000)))
                oracle.acknowledged[k] = now_us()
                time.sleep(rng.uniform(0, 0.08))
            last_ack = now_us()
            wait_for(lambda: len(oracle.held(conn)) == WRITES + 1, 180, "every write in the sink")
            # Idle: no write after `last_ack`, and T passes it and keeps moving.
            first_idle = wait_for(lambda: (t := oracle.resolved(conn)) and t > last_ack and t, 60,
                                  "T past the last write while the table is idle")
            time.sleep(6)
            later_idle = oracle.resolved(conn)
    finally:
        stop.set()
        thread.join(120)
        running.close()
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

    violations = [(t, missing[:5]) for t, _, missing in oracle.checks if missing]
    assert not violations, f"resolved timestamps with acknowledged writes not in the sink: {violations}"
    before_restart = [t for t, seen, _ in oracle.checks if seen < restarted_at]
    # The only node's connector killed, T stays before the kill until it is back.
    assert before_restart and max(before_restart) < killed_at
    assert any(seen > restarted_at for _, seen, _ in oracle.checks) and len(oracle.checks) >= 5
    assert later_idle - first_idle >= 2_000_000
    behind = [(seen - t) / 1e6 for t, seen, _ in oracle.checks]
    print(f"\n{len(oracle.checks)} resolved timestamps checked; T behind the clock when seen: median "
          f"{statistics.median(behind):.1f} s, max {max(behind):.1f} s; idle: +{(later_idle - first_idle) / 1e6:.1f} s "
          f"in 6 s")


def test_the_http_sink_posts_resolved_timestamps_to_a_real_server():
    receiver = Receiver()
    try:
        HttpSink(receiver.url, app_id="h").publish_resolved([Resolved("shop", "orders", 1_700_000_000_200_001)])
        assert list(receiver.accepted("resolved").items()) == [("h:resolved:1700000000200001", [
            {"app_id": "h", "keyspace": "shop", "table": "orders", "resolved": "2023-11-14T22:13:20.200001+00:00",
             "resolved_us": 1_700_000_000_200_001}])]
    finally:
        receiver.close()
