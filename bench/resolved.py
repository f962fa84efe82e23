"""What resolved timestamps cost: a connector's frontier record, and a query's publication of T in each
sink, side by side in one run, each beside its floor.

    python bench/resolved.py [--tables N] [--repeat R] [--sinks postgres,mysql,…]

Input: N table topics of 6 partitions (default 10) under a fresh prefix, each holding one record, and N
resolved timestamps (one per table).

- `frontier`: what a connector does every `frontier_interval` (`connector.frontier.FrontierSender`): the
  end offsets of every table topic (`latest_offsets`, one request per broker) and the record produced
  and acknowledged; its floor `floor-produce`: the same record produced and acknowledged alone.
- each sink: `publish_resolved` of the N timestamps, each round later than the last (so each writes),
  on a fresh target after `prepare()` and one warm-up publication; its floor: the target's plain write of
  N small rows — `floor-postgres` an INSERT of N rows in a transaction, `floor-mysql` the same in MariaDB,
  `floor-delta` a plain Delta append of N rows, `floor-kafka` N records produced in a transaction,
  `floor-cassandra` N INSERTs, `floor-http` one POST of N objects to a local receiver.

Each step runs R times (default 7), in turns; shown as the median ms with the range, and for a sink the
share of a query's time it takes at the default `resolved_interval` (5 s), or at the sink's own bound
(`Sink.resolved_every`: Delta's 30 s) when longer: what a query gives up to publish.
Needs the local stack (`deploy/local/start`); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from deploy.local.endpoints import StackUnavailable  # noqa: E402
from services import stack_for_figures  # noqa: E402 - bench/ is the script's directory
from deploy.local.receiver import Receiver  # noqa: E402
from schemas.frontier import FrontierRecord, frontier_topic  # noqa: E402
from schemas.runtime.access import CassandraCluster  # noqa: E402
from schemas.runtime.kafka import latest_offsets  # noqa: E402
from spark.sinks.contract import Resolved  # noqa: E402
from spark.sinks.registry import open_sink  # noqa: E402
from spark.sinks.settings import SinkContext  # noqa: E402

SINKS = ("postgres", "mysql", "delta", "kafka", "cassandra", "http")
DEFAULT_INTERVAL = 5.0


def timed(step) -> float:
    start = time.perf_counter()
    step()
    return (time.perf_counter() - start) * 1000


def shown(name: str, times: list[float], floor: list[float] | None = None, every: float | None = None) -> str:
    """`every`: how often the sink publishes by default (s), for the share of a query's time it takes."""
    median = statistics.median(times)
    line = f"{name:<18} {median:8.1f} ms  ({min(times):.1f}–{max(times):.1f})"
    if floor:
        line += f"  {median / statistics.median(floor):5.1f}× its floor"
    if every:
        line += f"  {median / 1000 / every * 100:5.2f} % of a query's time (every {every:.0f} s)"
    return line


class Frontier:
    """A connector's frontier step against N table topics, and its floor."""

    def __init__(self, stack, tables: int) -> None:
        self.client = {"bootstrap.servers": stack.kafka_bootstrap}
        self.prefix = f"bench{uuid.uuid4().hex[:8]}"
        admin = AdminClient(self.client)
        topics = [NewTopic(f"{self.prefix}.shop.t{i}", 6, 1) for i in range(tables)]
        topics.append(NewTopic(frontier_topic(self.prefix), 1, 1, config={"cleanup.policy": "compact"}))
        for future in admin.create_topics(topics).values():
            future.result(60)
        self.producer = Producer({**self.client, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
        for i in range(tables):
            self.producer.produce(f"{self.prefix}.shop.t{i}", b"v", b"k")
        self.producer.flush(30)
        self.admin = admin
        self.pattern = rf"{self.prefix}\.[^.]+\.[^.]+"
        self.record = FrontierRecord(str(uuid.uuid4()), "bench", time.time_ns() // 1000, 2500, {})

    def step(self) -> None:
        offsets = latest_offsets(self.admin, self.pattern)
        record = FrontierRecord(self.record.host_id, "bench", time.time_ns() // 1000, 2500, offsets)
        self.producer.produce(frontier_topic(self.prefix), record.encode(), record.key)
        self.producer.flush(30)

    def floor(self) -> None:
        self.producer.produce(frontier_topic(self.prefix), self.record.encode(), self.record.key)
        self.producer.flush(30)


class Publication:
    """One sink's publications of N resolved timestamps, and its target's plain write of N rows."""

    def __init__(self, kind: str, stack, spark, tables: int, work: Path, receiver: Receiver) -> None:
        self.kind, self.stack, self.spark, self.tables = kind, stack, spark, tables
        run = f"resolved_{uuid.uuid4().hex[:8]}"
        self.run, self.receiver = run, receiver
        config = {"postgres": {"dsn": stack.postgres_dsn, "schema": run},
                  "mysql": {"dsn": self._mysql_database(run)},
                  "delta": {"path": str(work / run)},
                  "kafka": {"topic": run},
                  "cassandra": {"keyspace": run},
                  "http": {"url": receiver.url}}[kind]
        context = SinkContext(app_id="bench", cluster=CassandraCluster((stack.cassandra_host,), stack.cassandra_port),
                              keyspace=run, kafka=stack.kafka_bootstrap, registry=stack.registry_url)
        self.sink = open_sink(spark, kind, config, context)
        self.sink.prepare()
        self.at = time.time_ns() // 1000
        self.publish()  # warm-up
        self._floor_target = self._prepare_floor(config)

    def publish(self) -> None:
        self.at += 1000
        self.sink.publish_resolved([Resolved("shop", f"t{i}", self.at) for i in range(self.tables)])

    def _mysql_database(self, name: str) -> str:
        from spark.sinks.mysql.connection import connect_dsn

        conn = connect_dsn(self.stack.mysql_dsn)
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {name}")
        conn.close()
        return self.stack.mysql_dsn.rsplit("/", 1)[0] + f"/{name}"

    def _rows(self) -> list[tuple]:
        return [("bench", "shop", f"t{i}", self.at + i) for i in range(self.tables)]

    def _prepare_floor(self, config: dict):
        kind = self.kind
        if kind == "postgres":
            import psycopg

            conn = psycopg.connect(self.stack.postgres_dsn, autocommit=True)
            conn.execute(f"CREATE TABLE {self.run}.floor (app text, ks text, t text, us bigint)")
            return conn
        if kind == "mysql":
            from spark.sinks.mysql.connection import connect_dsn

            conn = connect_dsn(config["dsn"])
            with conn.cursor() as cursor:
                cursor.execute("CREATE TABLE floor (app VARCHAR(64), ks VARCHAR(64), t VARCHAR(64), us BIGINT)")
            conn.commit()
            return conn
        if kind == "kafka":
            producer = Producer({"bootstrap.servers": self.stack.kafka_bootstrap, "enable.idempotence": True,
                                 "acks": "all", "transactional.id": f"floor-{self.run}"})
            producer.init_transactions(30)
            return producer
        if kind == "cassandra":
            session = self.sink.session
            session.execute(f"CREATE TABLE {self.run}.floor (app text, ks text, t text, us bigint,"
                            " PRIMARY KEY (app, ks, t))")
            return session.prepare(f"INSERT INTO {self.run}.floor (app, ks, t, us) VALUES (?, ?, ?, ?)")
        return None

    def floor(self) -> None:
        kind, rows = self.kind, self._rows()
        if kind == "postgres":
            with self._floor_target.transaction(), self._floor_target.cursor() as cursor:
                cursor.executemany(f"INSERT INTO {self.run}.floor VALUES (%s, %s, %s, %s)", rows)
        elif kind == "mysql":
            with self._floor_target.cursor() as cursor:
                cursor.executemany("INSERT INTO floor VALUES (%s, %s, %s, %s)", rows)
            self._floor_target.commit()
        elif kind == "delta":
            frame = self.spark.createDataFrame(rows, "app string, ks string, t string, us long")
            frame.coalesce(1).write.format("delta").mode("append").save(f"{self.sink.table('floor')}")
        elif kind == "kafka":
            producer = self._floor_target
            producer.begin_transaction()
            for row in rows:
                producer.produce(f"{self.run}.resolved", json.dumps(row).encode(), row[2].encode())
            producer.commit_transaction(30)
        elif kind == "cassandra":
            from cassandra.concurrent import execute_concurrent_with_args

            execute_concurrent_with_args(self.sink.session, self._floor_target, rows, raise_on_first_error=True)
        else:
            from urllib.request import Request, urlopen

            body = json.dumps([dict(zip(("app", "ks", "t", "us"), row)) for row in rows]).encode()
            urlopen(Request(self.receiver.url, body, {"Content-Type": "application/json",
                                                      "Ringtail-Content": "floor", "Idempotency-Key": str(self.at)}),
                    timeout=30).read()

    def close(self) -> None:
        """Close the sink and drop its target (a Delta path goes with the temporary directory)."""
        if self.kind == "postgres":
            self._floor_target.execute(f"DROP SCHEMA {self.run} CASCADE")
            self._floor_target.close()
        elif self.kind == "mysql":
            with self._floor_target.cursor() as cursor:
                cursor.execute(f"DROP DATABASE {self.run}")
            self._floor_target.close()
        elif self.kind == "cassandra":
            self.sink.session.execute(f"DROP KEYSPACE {self.run}")
        self.sink.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--sinks", default=",".join(SINKS))
    args = parser.parse_args()
    try:
        stack = stack_for_figures()
    except StackUnavailable as exc:
        sys.exit(str(exc))
    from spark.delivery.pipeline import spark_session
    from spark.job.config import JobSettings

    spark = spark_session(JobSettings(spark_jars=stack.spark_jars, spark_master="local[2]", log_format="text"))
    spark.sparkContext.setLogLevel("ERROR")
    receiver = Receiver()
    frontier = Frontier(stack, args.tables)
    results: dict[str, list[float]] = {"frontier": [], "floor-produce": []}
    with tempfile.TemporaryDirectory(prefix="ringtail-resolved-") as work:
        publications = [Publication(kind, stack, spark, args.tables, Path(work), receiver)
                        for kind in args.sinks.split(",")]
        for round_ in range(args.repeat):
            turn = [("frontier", frontier.step), ("floor-produce", frontier.floor)]
            for p in publications:
                turn += [(p.kind, p.publish), (f"floor-{p.kind}", p.floor)]
            if round_ % 2:
                turn.reverse()
            for name, step in turn:
                results.setdefault(name, []).append(timed(step))
        for p in publications:
            p.close()
    receiver.close()
    print(f"\n{args.tables} tables (topics of 6 partitions), {args.repeat} rounds; median ms (range)")
    print(shown("frontier", results["frontier"], results["floor-produce"]))
    print(shown("floor-produce", results["floor-produce"]))
    for p in publications:
        every = max(DEFAULT_INTERVAL, p.sink.resolved_every)  # the sink's own bound (Delta's)
        print(shown(p.kind, results[p.kind], results[f"floor-{p.kind}"], every))
        print(shown(f"floor-{p.kind}", results[f"floor-{p.kind}"]))


if __name__ == "__main__":
    main()
