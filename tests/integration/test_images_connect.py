"""Images (`layout = 'image'` of the Kafka and HTTP sinks) from a subscription's snapshot and log, and read
by a Kafka Connect sink no one here wrote: Debezium's JDBC sink connector, in the Kafka
distribution's Connect worker (the stack's `connect` service), with its ordinary configuration (upsert by
the record's key, deletes on), reads a table's image topic into PostgreSQL through Apicurio's Avro
converter. After a seeded random workload of inserts, updates of a few columns, collection changes, row,
range and partition deletions, a static column and TTLs, the PostgreSQL table equals `SELECT *` of the
source (but a partition's static-only row, which has no image) once the TTLs have run out, a column has
been added, changes have come to rows whose cells ran out, and the sink's purge has imaged the rest. The
same changes posted as images to a real HTTP server, through a batch and a purge each cut short by a refused
post, fold into `SELECT *` too, each image beginning where its row's last one ended, every repeat under its
key with the body it had.

The table holds the types the JDBC sink maps to columns: native values, and lists and sets of them
(PostgreSQL arrays). A tuple, a UDT, a duration or a map is an Avro record (or array of them), which it
refuses (README, "Images")."""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import sys
import time
import urllib.request
import uuid

import psycopg
import pytest

from deploy.local.endpoints import ROOT
from deploy.local.receiver import OK, Answer, Receiver
from schemas.runtime.access import CassandraCluster
from spark.delivery.pipeline import start
from spark.job.config import JobSettings
from spark.sinks.http.sink import HttpSink, HttpSinkError
from spark.sinks.images import ImagesAt
from spark.sinks.kafka.sink import KafkaSink
from tests.integration.delivered import run_available
from spark.subscriptions.model import Change
from spark.subscriptions.statements import Statement
from tests.integration.mirrors import (diff, imaged_rows, keyed_rows, layout_of, postgres_rows, posted_rows,
                                       source_rows)
from tests.integration.pipeline import has_marker, write_marker
from tests.integration.workload import execute
from tests.support import wait_for

pytestmark = pytest.mark.integration

SEED = int(os.environ.get("RINGTAIL_TEST_IMAGES_SEED", "39"))
STATEMENTS = 1500
TTL = 30  # s: long enough for the sinks' first batches to merge cells still live, short enough to wait for
STACK = ROOT / "deploy" / "local" / "stack.py"


@pytest.fixture(scope="module")
def connect(stack):
    """The stack's Kafka Connect worker, started for this module: its REST URL."""
    env = {**os.environ, "RINGTAIL_STACK_CONNECT": "1"}
    if stack.run_dir is not None:
        env["RINGTAIL_STACK_RUN_DIR"] = str(stack.run_dir)
    started = subprocess.run([sys.executable, str(STACK), "start", "connect"], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
    assert started.returncode == 0, started.stdout + started.stderr
    run_dir = stack.run_dir or ROOT / ".run"
    try:
        yield json.loads((run_dir / "stack.json").read_text())["connect"]["url"]
    finally:
        subprocess.run([sys.executable, str(STACK), "stop", "connect"], env=env, cwd=ROOT, capture_output=True,
                       timeout=120)


def statements(keyspace: str, seed: int, count: int) -> list[str]:
    """Writes to `items`: few shops (partitions), ids 0-29 (rows) in each."""
    rng = random.Random(seed)
    table = f"{keyspace}.items"

    def where() -> str:
        return f"shop = 's{rng.randrange(4)}' AND id = {rng.randrange(30)}"

    def text() -> str:
        return "'" + rng.choice(["", "a", "b'c", "ünï", "long " * 5]).replace("'", "''") + "'"

    def full_row(ttl: bool) -> str:
        shop, row = rng.randrange(4), rng.randrange(30)
        at = 1_700_000_000_000 + rng.randrange(10**9)
        day = dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(9000))
        return (f"INSERT INTO {table} (shop, id, name, qty, price, big, ok, at, day, ref, data, tags, scores)"
                f" VALUES ('s{shop}', {row}, {text()}, {rng.randrange(-5, 100)}, {rng.uniform(-1e3, 1e3)!r},"
                f" {rng.randrange(-2**62, 2**62)}, {rng.choice(['true', 'false'])}, {at},"
                f" '{day}', {uuid.UUID(int=rng.getrandbits(128))},"
                f" 0x{rng.randbytes(rng.randrange(5)).hex()}, {{'x', 'y{rng.randrange(3)}'}},"
                f" [{rng.randrange(9)}, {rng.randrange(9)}])" + (f" USING TTL {TTL}" if ttl else ""))

    choices = [
        (30, lambda: full_row(ttl=False)),
        (5, lambda: full_row(ttl=True)),
        (15, lambda: f"UPDATE {table} SET qty = {rng.randrange(100)}, name = {text()} WHERE {where()}"),
        (5, lambda: f"UPDATE {table} USING TTL {TTL} SET name = {text()} WHERE {where()}"),
        (8, lambda: f"UPDATE {table} SET tags = tags + {{'t{rng.randrange(5)}'}} WHERE {where()}"),
        (4, lambda: f"UPDATE {table} SET tags = tags - {{'x'}} WHERE {where()}"),
        (6, lambda: f"UPDATE {table} SET scores = scores + [{rng.randrange(50)}] WHERE {where()}"),
        (4, lambda: f"UPDATE {table} SET note = {text()} WHERE shop = 's{rng.randrange(4)}'"),
        (6, lambda: f"DELETE FROM {table} WHERE {where()}"),
        (4, lambda: f"DELETE name, scores FROM {table} WHERE {where()}"),
        (2, lambda: f"DELETE FROM {table} WHERE shop = 's{rng.randrange(4)}' AND id >= {rng.randrange(30)}"
                    f" AND id < {rng.randrange(30)}"),
        (1, lambda: f"DELETE FROM {table} WHERE shop = 's{rng.randrange(4)}'"),
    ]
    weights = [w for w, _ in choices]
    return [rng.choices(choices, weights)[0][1]() for _ in range(count)]


def create_sink_connector(connect: str, name: str, topic: str, table: str, stack) -> None:
    """Debezium's JDBC sink as its documentation configures it for Debezium's own change events."""
    registry = stack.registry_url.replace("/apis/ccompat/v7", "/apis/registry/v2")
    converter = {"": "io.apicurio.registry.utils.converter.AvroConverter", ".apicurio.registry.url": registry,
                 # ringtail writes Confluent's wire format: a 4-byte id, in the record, of the content.
                 ".apicurio.registry.as-confluent": "true", ".apicurio.registry.use-id": "contentId",
                 ".apicurio.registry.headers.enabled": "false"}
    dsn = psycopg.conninfo.conninfo_to_dict(stack.postgres_dsn)
    config = {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector", "topics": topic, "tasks.max": "1",
        "connection.url": f"jdbc:postgresql://{dsn['host']}:{dsn.get('port', 5432)}/{dsn['dbname']}",
        "connection.username": dsn["user"], "connection.password": dsn.get("password", ""),
        "insert.mode": "upsert", "primary.key.mode": "record_key", "delete.enabled": "true",
        "schema.evolution": "basic", "collection.name.format": table,
        "consumer.override.isolation.level": "read_committed", "consumer.override.auto.offset.reset": "earliest",
        **{f"key.converter{k}": v for k, v in converter.items()},
        **{f"value.converter{k}": v for k, v in converter.items()},
    }
    request = urllib.request.Request(f"{connect}/connectors", json.dumps({"name": name, "config": config}).encode(),
                                     {"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201


def connector_failure(connect: str, name: str) -> str | None:
    with urllib.request.urlopen(f"{connect}/connectors/{name}/status", timeout=10) as response:
        status = json.load(response)
    failed = [t.get("trace", "")[:2000] for t in status["tasks"] if t["state"] == "FAILED"]
    return failed[0] if failed else None


def postgres_table(stack, table: str, layout) -> list[dict]:
    """The JDBC sink's table, in the event's JSON forms (as `mirrors.source_rows` gives `SELECT *`); none
    before the sink has made it."""
    with psycopg.connect(stack.postgres_dsn) as conn:
        try:
            return postgres_rows(conn, layout, f'"{table}"')
        except psycopg.errors.UndefinedTable:
            return []


def until_equal(connect: str, name: str, stack, table: str, layout, source: list[dict], timeout: float = 120) -> None:
    """Wait until the JDBC sink's table equals `source` (the sink reads at its own pace); fail with the
    difference, or at once with the connector's failure."""
    deadline = time.monotonic() + timeout
    while True:
        failure = connector_failure(connect, name)
        assert failure is None, failure
        found = diff(source, postgres_table(stack, table, layout))
        if not found:
            return
        assert time.monotonic() < deadline, found
        time.sleep(2)


class RefusingOnce:
    """A receiver's answers: 400 to the first post of images of each kind — a chunk after the first of a part of
    batch 0 (the batch fails between its posts and its states' write), and a purge's — then 200."""

    def __init__(self) -> None:
        self.refused: dict[str, str] = {}  # "batch" or "purge" → the key refused

    def __call__(self, request: dict) -> Answer:
        key = request["headers"]["idempotency-key"]
        _, batch, *_, index = key.split(":")
        kind = "purge" if batch == "purge" else "batch" if batch == "0" and index != "0" else None
        if request["headers"]["ringtail-content"] == "images" and kind and kind not in self.refused:
            self.refused[kind] = key
            return 400, b"refused once", 0.0
        return OK


def same_body_under_each_key(receiver: Receiver) -> None:
    first: dict[str, list] = {}
    for request in receiver.requests:
        if request["headers"]["ringtail-content"] == "images":
            key = request["headers"]["idempotency-key"]
            assert first.setdefault(key, request["body"]) == request["body"], key


def test_debeziums_jdbc_sink_keeps_a_postgres_table_equal_to_select_star(stack, cql, keyspace, tmp_path, pipeline,
                                                                         spark, connect):
    cql.execute(f"""CREATE TABLE {keyspace}.items (shop text, id int, name text, qty int, price double, big bigint,
        ok boolean, at timestamp, day date, ref uuid, data blob, tags set<text>, scores list<int>, note text static,
        PRIMARY KEY (shop, id)) WITH cdc = true""")
    connector, consumer = pipeline()
    connector.start_from_now()
    connector.start()
    execute(cql, statements(keyspace, SEED, STATEMENTS))
    last_write = time.time()
    layout = layout_of(cql, keyspace, "items")
    written = keyed_rows(source_rows(cql.cluster, layout), layout)  # before the TTLs run out
    consumer.until(has_marker(write_marker(cql, keyspace)), 300)

    cluster = CassandraCluster((stack.cassandra_host,), stack.cassandra_port)
    app = f"rt_{uuid.uuid4().hex[:10]}"
    settings = JobSettings(
        kafka_bootstrap_servers=stack.kafka_bootstrap, registry_url=stack.registry_url, topic_prefix=connector.prefix,
        cassandra_hosts=cluster[0], cassandra_port=cluster[1], generations_keyspace=f"{keyspace}_gen",
        log_format="text", app_id=app, checkpoint_dir=tmp_path / "checkpoint")
    sink = KafkaSink(stack.kafka_bootstrap, f"{app}.images", app_id=app, format="avro",
                     registry_url=stack.registry_url, images=ImagesAt(spark, str(tmp_path / "states"), cluster))
    table = f"images_{app}"
    receiver, refusing = Receiver(), RefusingOnce()
    receiver.answer_with = refusing
    posting = settings.model_copy(update={"checkpoint_dir": tmp_path / "http"})

    def http_images() -> HttpSink:
        return HttpSink(receiver.url, app_id=app, batch_size=25,
                        images=ImagesAt(spark, str(tmp_path / "http-states"), cluster))

    try:
        # HTTP first, while the TTLs still run: its batch fails on a refused post, and the replay posts it again.
        job = start(spark, posting, http_images(), available_now=True)
        with pytest.raises(Exception, match="batch 0: PythonException"):  # (the receiver's answer is in the log)
            job.query.awaitTermination(300)
        job.close()
        run_available(spark, posting, http_images())
        assert "batch" in refusing.refused
        run_available(spark, settings, sink)
        create_sink_connector(connect, app, f"{app}.images.{keyspace}.items", table, stack)
        # The TTLs run out: Cassandra's SELECT * loses those rows and cells, the sink's purge (as a runner
        # calls it between batches) images them.
        time.sleep(max(0.0, last_write + TTL + 2 - time.time()))
        expired = keyed_rows(source_rows(cql.cluster, layout), layout)
        assert len(expired) > 40 and expired != written, (len(expired), len(written))  # the TTLs removed some
        # A column added (the image schemas gain it, the JDBC sink's table too), then changes to two partitions
        # whose cells ran out before any purge: each sink images the expiries first, so every image begins
        # where its row's last one ended.
        cql.execute(f"ALTER TABLE {keyspace}.items ADD extra text")
        execute(cql, [f"UPDATE {keyspace}.items SET qty = -1, extra = 'e{row}' WHERE shop = 's{shop}' AND id = {row}"
                      for shop in (0, 1) for row in range(30)])
        consumer.until(has_marker(write_marker(cql, keyspace)), 300)
        run_available(spark, posting, http_images())
        run_available(spark, settings, sink)
        layout = layout_of(cql, keyspace, "items")
        expired = keyed_rows(source_rows(cql.cluster, layout), layout)
        assert any(row["extra"] for row in expired)
        sink.prepare()
        try:
            sink.purge()
        finally:
            sink.close()
        # HTTP's purge is refused a post: the next sink's start makes it again, before any batch.
        cut = http_images()
        cut.prepare()
        with pytest.raises(HttpSinkError, match="refused once"):
            cut.purge()
        cut.close()
        again = http_images()
        again.prepare()
        again.close()
        same_body_under_each_key(receiver)
        accepted = receiver.accepted("images")
        assert refusing.refused.keys() == {"batch", "purge"} and set(refusing.refused.values()) <= accepted.keys()
        found = diff(expired, posted_rows(accepted.values(), layout))
        assert not found, f"the images posted, folded: {found}"
        until_equal(connect, app, stack, table, layout, expired)
    finally:
        receiver.close()
        try:
            urllib.request.urlopen(urllib.request.Request(f"{connect}/connectors/{app}", method="DELETE"), timeout=30)
        except urllib.error.HTTPError as exc:
            assert exc.code == 404, exc  # not created: the test failed before
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}_gen")


def test_a_subscription_of_images_starts_with_its_tables_rows_read_then_its_changes(stack, cql, keyspace, served,
                                                                                     tmp_path):
    """Subscriptions, as a runner serves them, to Kafka and to HTTP: the snapshot's rows as images with
    `op = r`, then the log's changes as `u` and `d` images; the topic folded, and the images posted folded,
    equal `SELECT *`."""
    control, registry, run_runner, base = served
    execute(cql, [f"INSERT INTO {keyspace}.orders (id, qty, note) VALUES ({i}, {i % 7}, 'n{i}')" for i in range(200)])
    topic = f"rows_{uuid.uuid4().hex[:8]}"
    control.create("rows", Change(table=f"{keyspace}.orders", sink="kafka", start="snapshot", sink_config={
        "topic": topic, "format": "avro", "layout": "image", "state_path": str(tmp_path / "states")}))
    receiver = Receiver()
    control.create("posted", Change(table=f"{keyspace}.orders", sink="http", start="snapshot", sink_config={
        "url": receiver.url, "layout": "image", "state_path": str(tmp_path / "posted")}))
    runner = run_runner(runner_id="images")
    try:
        # The snapshot is delivered once the runner follows the log (`Runner` replaces the delivery then).
        wait_for(lambda: all((held := runner.held.get(name)) and held.delivery and not held.delivery.snapshot
                             for name in ("rows", "posted")), 180, "the snapshots delivered")
        execute(cql, [f"UPDATE {keyspace}.orders SET qty = 100 WHERE id = {i}" for i in range(0, 200, 10)]
                + [f"DELETE FROM {keyspace}.orders WHERE id = {i}" for i in range(5, 200, 50)])
        layout = layout_of(cql, keyspace, "orders")
        source = source_rows(cql.cluster, layout)
        ops: list[str] = []

        def caught_up() -> bool:
            ops.clear()
            try:
                return not diff(source, imaged_rows(stack, f"{topic}.{keyspace}.orders", layout, ops))
            except KeyError:  # no topic yet
                return False

        wait_for(caught_up, 180, "the image topic equal to SELECT *")
        assert ops.count("r") == 200 and ops.count("u") == 20 and ops.count("d") == 4, ops
        wait_for(lambda: not diff(source, posted_rows(receiver.accepted("images").values(), layout)), 180,
                 "the images posted equal to SELECT *")
        posted = [image["op"] for body in receiver.accepted("images").values() for image in body]
        assert posted.count("r") == 200 and posted.count("u") == 20 and posted.count("d") == 4, posted
    finally:
        for name in ("rows", "posted"):
            control.run(Statement("cancel", name))
        wait_for(lambda: not {"rows", "posted"} & set(runner.held), 60, "the cancelled subscriptions let go")
        receiver.close()
