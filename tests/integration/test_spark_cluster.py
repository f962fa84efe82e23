"""ringtail on a standalone Spark cluster with object storage: a master and two workers of the local stack,
started with a Cassandra node and a Kafka broker of their own for this module (`side_stacks.CLUSTER`, on
127.0.0.41; its registry, PostgreSQL, MariaDB and S3-compatible store are the main stack's) and thrown away after
it. The job and the runner keep their checkpoints in the store, and the job its Delta table (`s3a://`).
The executors run an empty Python (stack.json's `spark-master.python`): whatever of ringtail they run —
the event decoder, stream ids, the sinks' writes, the mirrors' merges — the driver shipped them (spark.ship)."""
from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import pymysql
import pytest
from cassandra import InvalidRequest
from cassandra.concurrent import execute_concurrent_with_args
from pyspark.errors import AnalysisException

from deploy.local.endpoints import ROOT
from deploy.local.receiver import Receiver
from spark.location import Location
from spark.sinks.http.images import PurgeMark
from spark.sinks.log_table import LOG_SUFFIX
from spark.sinks.mysql.connection import connect_dsn
from spark.subscriptions.model import Change
from tests.conftest import DRIVER_OPTIONS
from tests.integration.conftest import serving
from tests.integration.delivered import drop_mysql_database, kafka_messages, mysql_database, pg_ids
from tests.integration.mirrors import delta_rows, layout_of, mysql_absent, mysql_mirror, postgres_mirror, source_rows
from tests.integration.serving import runner_process
from tests.integration.side_stacks import CLUSTER, running, session_on
from tests.support import new_keyspace, wait_for


@pytest.fixture(scope="module")
def cluster(request, stack):
    """The cluster's stack (a Stack whose Cassandra and Kafka are its own) and its master's description."""
    with running(CLUSTER, stack, request) as described:
        yield described, json.loads((described.run_dir / "stack.json").read_text())["spark-master"]


@pytest.fixture(scope="module")
def cluster_cql(cluster):
    with session_on(cluster[0]) as session:
        yield session


@pytest.fixture
def cluster_keyspace(cluster_cql):
    with new_keyspace(cluster_cql) as name:
        yield name


def on_cluster(cluster: dict) -> dict:
    """What a process submitting to the cluster sets: the executors' Python, their size, and the JVM
    options of the tests' drivers (tests/conftest.py) for executors that live a minute."""
    return {"spark_master": cluster["master"], "spark_conf": {
        "spark.pyspark.python": cluster["python"], "spark.executor.memory": "640m", "spark.executor.cores": "1",
        "spark.cores.max": str(cluster["workers"] * cluster["worker_cores"]), "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2", "spark.executor.extraJavaOptions": DRIVER_OPTIONS}}


def unpacked(described) -> list[Path]:
    """The native cores the workers' executors unpacked from the shipped archive."""
    return sorted(described.run_dir.glob("spark-worker@*/apps/app-*/*/ringtail/schemas/_native*.so"))


def in_bucket(stack, *parts: str) -> Location:
    """A location in the object store's bucket (`s3a://…`)."""
    return Location(f"s3a://{stack.object_store.bucket}/{'/'.join(parts)}")


def secret_of(stack) -> str:
    profiles = configparser.ConfigParser()
    profiles.read(stack.object_store.credentials_file)
    return profiles["default"]["aws_secret_access_key"]


def job_config(stack, cluster: dict, prefix: str, keyspace: str, tmp_path: Path, **sink) -> Path:
    """The job's settings file for the cluster (its master left to the command line)."""
    config = tmp_path / "job.yaml"
    config.write_text(json.dumps({
        "kafka_bootstrap_servers": stack.kafka_bootstrap, "registry_url": stack.registry_url, "topic_prefix": prefix,
        "cassandra_hosts": [stack.cassandra_host], "cassandra_port": stack.cassandra_port,
        "generations_keyspace": f"{keyspace}_gen", "spark_jars": [*stack.spark_jars, *stack.object_store.jars],
        "log_format": "text", "spark_conf": on_cluster(cluster)["spark_conf"], **sink}))
    return config


def submit(config: Path, cluster: dict) -> list[str]:
    """`python -m spark.job` submitted to the cluster by its command line, as users do."""
    return [sys.executable, "-m", "spark.job", "--config", str(config), "--master", cluster["master"],
            "--available-now"]


def logged_keys(spark, delta: Location, keyspace: str) -> Counter:
    """How many times each key of `keyspace.kv` is in the job's Delta log on the object store."""
    logged = spark.read.format("delta").load(str(delta / "cdc_log")).where(
        f"keyspace = '{keyspace}' AND `table` = 'kv'").select("key").collect()
    return Counter(json.loads(row.key)["k"] for row in logged)


def test_the_job_submitted_to_the_cluster_ships_ringtail_and_a_worker_killed_mid_job_costs_no_change(
        stack, cluster, cluster_cql, cluster_keyspace, pipeline, spark, tmp_path, monkeypatch):
    on, master = cluster
    cql, keyspace = cluster_cql, cluster_keyspace
    for name, value in on.object_store.environment().items():  # this process reads the bucket too
        monkeypatch.setenv(name, value)
    for module in ("schemas", "connector", "pydantic", "pyarrow"):  # nothing of ringtail's on the executors
        bare = subprocess.run([master["python"], "-c", f"import {module}"], capture_output=True, text=True,
                              cwd=tmp_path, env={"PATH": os.environ["PATH"]})
        assert f"No module named '{module}'" in bare.stderr, bare
    rows = 4_000  # four micro-batches: the worker is killed after the second is written
    connector, consumer = pipeline(on=on)
    connector.start_from_now()
    connector.start()
    cql.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v text) WITH cdc = true")
    execute_concurrent_with_args(cql, cql.prepare(f"INSERT INTO {keyspace}.kv (k, v) VALUES (?, ?)"),
                                 [(k, f"v{k}") for k in range(rows)], concurrency=64)
    consumer.until(lambda events: len(events) >= rows, timeout=120)

    # Into Delta on the object store, whose files the executors write; the checkpoint in the store, its keys
    # from their file; micro-batches small enough to be several. (The other sinks: the runner's tests below.)
    delta, checkpoint = in_bucket(on, keyspace, "delta"), in_bucket(on, keyspace, "checkpoint")
    config = job_config(on, master, connector.prefix, keyspace, tmp_path, sink="delta", delta_path=str(delta),
                        checkpoint_dir=str(checkpoint), max_offsets_per_trigger=1000)
    output = tmp_path / "job.out"
    with open(output, "w") as out:
        job = subprocess.Popen(submit(config, master), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                               env={**os.environ, **on.object_store.environment()})
    try:
        wait_for(lambda: "batch 1 written" in output.read_text(), 300, "the job's second micro-batch")
        workers = {path.relative_to(on.run_dir).parts[0] for path in unpacked(on)}
        assert workers == {"spark-worker@1", "spark-worker@2"}, unpacked(on)  # both ran ringtail's code
        assert not list(on.run_dir.glob("spark-worker@*/apps/app-*/*/ringtail/connector"))  # Spark's side alone
        CLUSTER.command(stack.run_dir, "kill", "spark-worker@2")
        assert job.wait(600) == 0, output.read_text()[-5000:]
    finally:
        if job.poll() is None:
            job.kill()
        restarted = CLUSTER.command(stack.run_dir, "start", "spark-worker@2", check=False)  # for the next test
    text = output.read_text()
    assert "ringtail shipped to the executors" in text
    assert secret_of(on) not in text
    assert {"offsets", "commits"} <= set(checkpoint.names()), checkpoint.names()
    assert "Lost executor" in text or "ExecutorLostFailure" in text, text[-5000:]  # Spark saw it go
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr

    assert logged_keys(spark, delta, keyspace) == Counter(range(rows)), "a change lost or logged twice"


def delivered_ids(kind: str, target: str, on, cql, keyspace: str, receiver: Receiver) -> Counter:
    """How many times each row id of `keyspace.orders` is in sink `kind` (`target`: its DSN or topic; a typed
    log's: the DSN of its server, whose schema or database named after the keyspace holds it)."""
    if kind == "postgres":
        return pg_ids(target, f"{keyspace}_pg")
    if kind == "postgres-typed":
        with psycopg.connect(target) as conn:
            try:
                return Counter(k for (k,) in conn.execute(f'SELECT id FROM "{keyspace}".orders{LOG_SUFFIX}'))
            except psycopg.errors.UndefinedTable:
                return Counter()
    if kind == "mysql-typed":
        conn = connect_dsn(target)
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"SELECT id FROM `{keyspace}`.orders{LOG_SUFFIX}")
                return Counter(k for (k,) in cursor.fetchall())
        except (pymysql.err.OperationalError, pymysql.err.ProgrammingError) as exc:
            if mysql_absent(exc):
                return Counter()
            raise
        finally:
            conn.close()
    if kind == "mysql":
        conn = connect_dsn(target)
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT JSON_VALUE(`key`, '$.id') FROM cdc_log WHERE `table` = 'orders'")
                return Counter(int(k) for (k,) in cursor.fetchall())
        except pymysql.ProgrammingError:  # no log table yet
            return Counter()
        finally:
            conn.close()
    if kind == "cassandra":
        try:
            return Counter(row.id for row in cql.execute(f"SELECT id FROM {keyspace}.orders{LOG_SUFFIX}"))
        except InvalidRequest:  # no log table yet
            return Counter()
    if kind == "kafka":
        return Counter(json.loads(m.value())["key"]["id"] for m in kafka_messages(on.kafka_bootstrap, target))
    return Counter(row["key"]["id"] for body in receiver.accepted().values() for row in body)  # a receiver
    # drops a repeated idempotency key


def test_a_worker_killed_while_a_runner_delivers_to_every_log_sink_but_deltas_costs_no_change(
        stack, cluster, cluster_cql, cluster_keyspace, pipeline, spark, tmp_path):
    """Every log but Delta's (the job's test above; the mirrors: the test below) at once, the typed logs of
    PostgreSQL and MariaDB among them: one runner on the cluster serves a subscription to each, and a worker
    dies while all seven have a backlog to deliver. Spark runs the lost tasks again (the decoding of every
    sink, and the writes of those that write from the executors: the SQL stores' parts, Cassandra and HTTP);
    each sink still holds each change once."""
    on, master = cluster
    cql, keyspace, rows = cluster_cql, cluster_keyspace, 4_000
    receiver = Receiver()
    mysql, mysql_typed = mysql_database(on, f"{keyspace}_my"), mysql_database(on, f"{keyspace}_mt")
    sinks = {"pg": ("postgres", on.postgres_dsn, {"dsn": on.postgres_dsn, "schema": f"{keyspace}_pg"}),
             "my": ("mysql", mysql, {"dsn": mysql}), "cs": ("cassandra", "", {}),
             "kf": ("kafka", f"{keyspace}_kf", {"topic": f"{keyspace}_kf"}),
             "web": ("http", "", {"url": receiver.url, "batch_size": "200"}),
             "pt": ("postgres-typed", on.postgres_dsn, {"dsn": on.postgres_dsn, "schema": f"{keyspace}_pt",
                                                        "layout": "typed"}),
             "mt": ("mysql-typed", mysql_typed, {"dsn": mysql_typed, "layout": "typed"})}
    connector, _ = pipeline(on=on)
    runner = None
    try:
        with serving(on, cql, keyspace, tmp_path, connector, spark) as (control, _, _, base):
            for name, (kind, _, config) in sinks.items():
                control.create(name, Change(table=f"{keyspace}.orders", sink=kind.split("-")[0], start="earliest",
                                            sink_config=config))
            execute_concurrent_with_args(cql, cql.prepare(f"INSERT INTO {keyspace}.orders (id, qty, note)"
                                                          " VALUES (?, ?, ?)"),
                                         [(k, k, f"n{k}") for k in range(rows)], concurrency=64)
            log = tmp_path / "runner-a.log"
            runner = runner_process(on, base, tmp_path, "a", max_offsets_per_trigger=300, **on_cluster(master))

            def batches(name: str) -> int:
                return len(re.findall(rf"subscription-{name}: batch \d+ written", log.read_text(errors="replace")))

            wait_for(lambda: all(batches(name) >= 2 for name in sinks), 300, "two batches of each subscription")
            before = {name: batches(name) for name in sinks}
            CLUSTER.command(stack.run_dir, "kill", "spark-worker@2")
            for name, (kind, target, _) in sinks.items():
                wait_for(lambda: sum(delivered_ids(kind, target, on, cql, keyspace, receiver).values()) >= rows,
                         300, f"every change in {kind}")
            after = {name: batches(name) for name in sinks}
            text = log.read_text(errors="replace")
            assert "Lost executor" in text or "ExecutorLostFailure" in text, text[-5000:]  # Spark saw it go
            assert all(after[name] > before[name] for name in sinks), (before, after)  # each delivered past it
            for name, (kind, target, _) in sinks.items():
                assert delivered_ids(kind, target, on, cql, keyspace, receiver) == Counter(range(rows)), \
                    f"{kind}: a change lost or delivered twice"
    finally:
        if runner is not None and runner.poll() is None:
            runner.terminate()
            runner.wait(120)
        CLUSTER.command(stack.run_dir, "start", "spark-worker@2", check=False)  # for the next test
        receiver.close()
        for database in (mysql, mysql_typed, f"/{keyspace}"):  # the typed log's database is the keyspace's
            drop_mysql_database(on, database)
        with psycopg.connect(on.postgres_dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{keyspace}", "{keyspace}_pt", "{keyspace}_pg" CASCADE')


def test_a_worker_killed_while_a_runner_merges_into_three_mirrors_costs_no_change(
        stack, cluster, cluster_cql, cluster_keyspace, pipeline, spark, tmp_path, monkeypatch):
    """The mirrors merge on the executors (a SQL store's tasks write their parts; Delta's tasks compute what
    two `MERGE`s then write): one runner on the cluster keeps a PostgreSQL, a MariaDB and a Delta mirror (on the
    object store) of one table, each from a snapshot of its rows (whose reads Spark plans in a Python process
    beside the runner) then the log, and a worker dies while they have a backlog of updates to merge. Each
    mirror still equals `SELECT *`, updated rows and deleted ones too."""
    on, master = cluster
    cql, keyspace, rows = cluster_cql, cluster_keyspace, 2_000
    for name, value in on.object_store.environment().items():  # this process reads the bucket too
        monkeypatch.setenv(name, value)
    delta, checkpoints = in_bucket(on, keyspace, "mirror"), in_bucket(on, keyspace, "runner")
    mysql = mysql_database(on, f"{keyspace}_mm")
    mirrors = {"pm": ("postgres", {"dsn": on.postgres_dsn, "schema": f"{keyspace}_pm", "layout": "mirror"}),
               "mm": ("mysql", {"dsn": mysql, "layout": "mirror"}),
               "dm": ("delta", {"path": str(delta), "layout": "mirror"})}
    connector, _ = pipeline(on=on)
    runner = None
    with serving(on, cql, keyspace, tmp_path, connector, spark) as (control, _, _, base):
        statement = cql.prepare(f"INSERT INTO {keyspace}.orders (id, qty, note) VALUES (?, ?, ?)")
        execute_concurrent_with_args(cql, statement, [(k, k, f"n{k}") for k in range(rows)], concurrency=64)
        for name, (kind, config) in mirrors.items():
            control.create(name, Change(table=f"{keyspace}.orders", sink=kind, start="snapshot", sink_config=config))
        layout = layout_of(cql, keyspace, "orders")
        log = tmp_path / "runner-a.log"
        keys = {"AWS_ENDPOINT_URL": on.object_store.endpoint, "AWS_ACCESS_KEY_ID": "ringtail",
                "AWS_SECRET_ACCESS_KEY": secret_of(on)}

        def batches(name: str) -> int:
            return len(re.findall(rf"subscription-{name}: batch \d+ written", log.read_text(errors="replace")))

        def mirror(kind: str) -> list[dict]:
            if kind == "mysql":
                return mysql_mirror(mysql, layout)
            if kind == "postgres":
                return postgres_mirror(on.postgres_dsn, layout)
            return delta_mirror(spark, delta, layout)

        try:
            # Its checkpoints on the object store too, the keys from the environment.
            runner = runner_process(on, base, tmp_path, "a", env=keys, max_offsets_per_trigger=1000,
                                    checkpoint_dir=str(checkpoints), spark_jars=[*on.spark_jars, *on.object_store.jars],
                                    **on_cluster(master))
            wait_for(lambda: log.read_text(errors="replace").count("snapshot delivered") >= len(mirrors), 300,
                     "the snapshots delivered")
            # A backlog of the log's changes, in batches of 1,000: the queries' first batches have none of them.
            execute_concurrent_with_args(cql, statement, [(k, -k, "again") for k in range(rows)], concurrency=64)
            execute_concurrent_with_args(cql, cql.prepare(f"DELETE FROM {keyspace}.orders WHERE id = ?"),
                                         [(k,) for k in range(1, rows, 5)], concurrency=64)
            source = source_rows(cql.cluster, layout)
            # The first mirror two batches on still has a batch of the backlog to merge; the others, more.
            wait_for(lambda: any(batches(name) >= 2 for name in mirrors), 300, "a batch of the log's changes")
            before = {name: batches(name) for name in mirrors}
            CLUSTER.command(stack.run_dir, "kill", "spark-worker@2")
            for kind, _ in mirrors.values():
                wait_for(lambda: mirror(kind) == source, 300, f"the {kind} mirror equal to SELECT *")
        finally:
            if runner is not None and runner.poll() is None:
                runner.terminate()
                runner.wait(120)
            CLUSTER.command(stack.run_dir, "start", "spark-worker@2", check=False)  # for the next test
            drop_mysql_database(on, mysql)
            drop_mysql_database(on, f"/{keyspace}")  # the MariaDB mirror's database
            with psycopg.connect(on.postgres_dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{keyspace}", "{keyspace}_pm" CASCADE')
    text = log.read_text(errors="replace")
    assert "Lost executor" in text or "ExecutorLostFailure" in text, text[-5000:]  # Spark saw it go
    assert all(batches(name) > before[name] for name in mirrors), before  # each merged past the loss
    assert len(source) == rows - len(range(1, rows, 5))
    assert "ringtail shipped to the executors" in text and secret_of(on) not in text
    assert set(mirrors) <= set(checkpoints.names()), checkpoints.names()  # their checkpoints, in the bucket


def test_an_image_sinks_purge_mark_is_kept_in_the_object_store(cluster, monkeypatch):
    """The one file ringtail writes itself beside Spark's (`http.images.PurgeMark`), on S3 as on a disk."""
    on, _ = cluster
    for name, value in on.object_store.environment().items():
        monkeypatch.setenv(name, value)
    place = f"marks_{uuid.uuid4().hex[:8]}"
    mark = PurgeMark(str(in_bucket(on, place, "images")), "posted.1")
    assert mark.read() == (0, None)
    mark.begin(0, 1_800_000_000)
    assert mark.read() == (0, 1_800_000_000)
    mark.end(1_800_000_000)
    assert mark.read() == (1_800_000_000, None)
    assert in_bucket(on, place, "images", "purges").names() == ["posted.1.json"]


def delta_mirror(spark, path: Location, layout) -> list[dict]:
    """The Delta mirror's rows at `path`, none before its table exists."""
    try:
        return delta_rows(spark, path, layout)
    except AnalysisException:  # not a Delta table yet
        return []
