"""The connector where acknowledged writes used to go missing or stall in silence, as a real process on
the real stack: a broker started together with it, a schema the registry rejects, a second
connector, a segment removed before it was read, odd files in cdc_raw."""
from __future__ import annotations

import base64
import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import httpx
import pytest
from cassandra import WriteTimeout

from connector.commitlog.cdc_index import read_cdc_index
from connector.source import SegmentFile, durable_end, list_segments
from deploy.local.endpoints import ROOT
from deploy.local.processes import ConnectorProcess
from tests.integration.capture import synced
from tests.integration.pipeline import EventConsumer, assert_each_once, has_marker, write_marker
from tests.support import unused_port, wait_for


def ready(connector: ConnectorProcess) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{connector.settings['metrics_port']}/ready"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
    except OSError:  # not listening yet
        return 0, {"problems": [], "warnings": []}


def write_rows(cql, table: str, ids, body: str = "x" * 200, again_after_timeout: bool = False) -> list[int]:
    """Insert a row per id. `again_after_timeout`: a write the node timed out on (it may be applied or
    not) is made again, a second change of that row when both were: for a test that fills segments as
    fast as it can and compares sets of ids, not counts of events."""
    insert = cql.prepare(f"INSERT INTO {table} (id, body) VALUES (?, ?)")
    for i in ids:
        for attempt in range(5):
            try:
                cql.execute(insert, (i, body))
                break
            except WriteTimeout:
                if not again_after_timeout or attempt == 4:
                    raise
    return list(ids)


@pytest.fixture
def fresh_kafka(stack, tmp_path):
    """A Kafka of its own, started from an empty log directory (the stack's own scripts), and stopped."""
    spec = importlib.util.spec_from_file_location("local_stack", ROOT / "deploy" / "local" / "stack.py")
    local = sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))
    spec.loader.exec_module(local)
    started = []

    def start():
        run_dir = tmp_path / f"kafka-{len(started)}"
        run_dir.mkdir()
        (run_dir / "dist").symlink_to(local.Settings.from_env().run_dir / "dist")
        settings = dataclasses.replace(local.Settings.from_env(), run_dir=run_dir, kafka_port=unused_port(),
                                       kafka_controller_port=unused_port())
        kafka = local.Kafka(settings)
        started.append(kafka)
        kafka.start()
        return kafka

    yield start
    for kafka in started:
        kafka.stop()


def test_a_broker_started_with_the_connector_gets_every_event_of_new_topics(stack, cql, keyspace, tmp_path,
                                                                             fresh_kafka):
    """Broker and connector start together and the connector creates topics at once: every acknowledged
    write arrives, round after round (the loss this guards against came one start in two; CI runs 3
    rounds, `RINGTAIL_TEST_BROKER_ROUNDS` more)."""
    for round_ in range(int(os.environ.get("RINGTAIL_TEST_BROKER_ROUNDS", "3"))):
        kafka = fresh_kafka()
        local = dataclasses.replace(stack, kafka_bootstrap=kafka.bootstrap)
        connector = ConnectorProcess(local, tmp_path / f"state-{round_}", f"fresh{uuid.uuid4().hex[:6]}")
        connector.start_from_now()
        connector.start()  # while the broker is still starting
        tables = [f"{keyspace}.r{round_}t{n}" for n in range(3)]
        written = {}
        for table in tables:
            cql.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text) WITH cdc = true")
        for table in tables:
            written[table] = write_rows(cql, table, range(300), "f" * 50)
        kafka.wait()
        consumer = EventConsumer(local, connector.prefix)

        def every_row(events) -> bool:  # not a marker: topics made later may be assigned and read later
            return all(set(written[t]) <= {e["_key"]["id"] for e in events if e["source"]["table"] == t.split(".")[1]}
                       for t in tables)

        try:
            try:
                consumer.until(every_row, timeout=120)
            except AssertionError:
                pass  # said row by row below
            events = consumer.events
        finally:
            consumer.close()
            connector.stop()
            kafka.stop()
        assert connector.process.returncode == 0
        for table in tables:
            assert_each_once(events, table.split(".")[1], written[table])


def test_a_rejected_schema_sends_only_its_table_to_dead_letters(stack, cql, keyspace, pipeline):
    connector, consumer = pipeline(metrics_port=unused_port(), schema_retry_interval=2)
    # The subject holds a schema the connector's cannot be BACKWARD compatible with.
    subject = f"{connector.prefix}.{keyspace}.bad-value"
    other = {"type": "record", "name": "Other", "fields": [{"name": "zzz", "type": "int"}]}
    httpx.post(f"{stack.registry_url}/subjects/{subject}/versions", json={"schema": json.dumps(other)},
               timeout=10).raise_for_status()
    connector.start_from_now()
    connector.start()
    for table in ("bad", "good"):
        cql.execute(f"CREATE TABLE {keyspace}.{table} (id int PRIMARY KEY, body text) WITH cdc = true")
    bad = write_rows(cql, f"{keyspace}.bad", range(20))
    good = write_rows(cql, f"{keyspace}.good", range(20))
    events = consumer.until(has_marker(write_marker(cql, keyspace)), timeout=60)
    assert_each_once(events, "good", good)
    assert not [e for e in events if e["source"]["table"] == "bad"]
    dead = read_dead_letters(stack, connector.prefix, len(bad))
    assert {d["table"] for d in dead} == {f"{keyspace}.bad"} and len(dead) == len(bad)
    assert all(d["reason"] == "schema_rejected" and d["rejected_schema"]["type"] == "record" for d in dead)
    assert f'ringtail_table_schema_rejected{{table="{keyspace}.bad"}} 1.0' in metrics_text(connector)
    assert any(f"{keyspace}.bad" in w for w in ready(connector)[1]["warnings"])
    # Compatibility fixed: the table's changes return to its topic.
    httpx.put(f"{stack.registry_url}/config/{subject}", json={"compatibility": "NONE"}, timeout=10).raise_for_status()
    time.sleep(2.5)
    later = write_rows(cql, f"{keyspace}.bad", range(100, 110))
    events = consumer.until(lambda events: {e["_key"]["id"] for e in events if e["source"]["table"] == "bad"}
                            >= set(later), timeout=60)
    assert f'ringtail_table_schema_rejected{{table="{keyspace}.bad"}} 0.0' in metrics_text(connector)


def test_tables_dropped_before_the_connector_read_their_schema(stack, cql, keyspace, pipeline):
    """Two tables written and dropped before the connector started. One was created after its start
    position: it is built from its CREATE's schema rows in the commit log, and its changes are
    delivered. The other was created before: no schema decodes its changes, which may be CDC data, so
    the entry goes whole to the dead letters (bytes, position, reason). The changes after both are
    delivered."""
    connector, consumer = pipeline(metrics_port=unused_port())
    cql.execute(f"CREATE TABLE {keyspace}.unseen (id int PRIMARY KEY, body text) WITH cdc = true")
    unseen_id = next(r.id for r in cql.execute(
        "SELECT id FROM system_schema.tables WHERE keyspace_name = %s AND table_name = 'unseen'", (keyspace,)))
    synced(cql, keyspace, stack.cdc_raw)
    connector.start_from_now()
    cql.execute(f"CREATE TABLE {keyspace}.logged (id int PRIMARY KEY, body text) WITH cdc = true")
    cql.execute(f"CREATE TABLE {keyspace}.kept (id int PRIMARY KEY, body text) WITH cdc = true")
    for table in ("unseen", "logged"):
        cql.execute(f"INSERT INTO {keyspace}.{table} (id, body) VALUES (1, 'written to {table}')")
        cql.execute(f"DROP TABLE {keyspace}.{table}")
    kept = write_rows(cql, f"{keyspace}.kept", range(5))
    connector.start()
    events = consumer.until(has_marker(write_marker(cql, keyspace)), timeout=60)
    assert_each_once(events, "kept", kept)
    assert [e["after"]["body"]["value"] for e in events if e["source"]["table"] == "logged"] == ["written to logged"]
    [dead] = read_dead_letters(stack, connector.prefix, 1)
    assert dead["reason"] == "undecodable" and dead["table_id"] == str(unseen_id)
    assert b"written to unseen" in base64.b64decode(dead["mutation"])
    assert dead["segment"].startswith("CommitLog-") and dead["position"]["entry_offset"] > 0
    assert 'ringtail_dead_letters_total{reason="undecodable"} 1.0' in metrics_text(connector)


def metrics_text(connector: ConnectorProcess) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{connector.settings['metrics_port']}/metrics", timeout=5) as r:
        return r.read().decode()


def read_dead_letters(stack, prefix: str, count: int) -> list[dict]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"dl-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([f"{prefix}.dead_letters"])
    found, deadline = [], time.monotonic() + 60
    try:
        while len(found) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                found.append(json.loads(message.value()))
    finally:
        consumer.close()
    return found


def test_a_second_connector_on_the_same_cdc_raw_refuses_to_start(stack, pipeline, tmp_path):
    first, _ = pipeline(metrics_port=unused_port())
    first.start_from_now()
    first.start()
    wait_for(first.ready, timeout=60, what="the first connector")
    second = ConnectorProcess(stack, tmp_path / "second", "second")
    result = subprocess.run([sys.executable, "-m", "connector", "run", "--config", str(second.config)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert f"another connector holds {stack.cdc_raw}" in result.stderr
    assert f'"pid": {first.process.pid}' in result.stderr


def reconnected(consumer: EventConsumer, stack, prefix: str) -> EventConsumer:
    """A new consumer reading every event from the start, in place of one made before its broker
    restarted, so what it reads does not depend on how a client recovers its fetch state."""
    consumer.close()
    return EventConsumer(stack, prefix)


def on_a_broker_of_its_own(stack, cql, keyspace, tmp_path, fresh_kafka, **settings):
    """A Kafka of the test's own (so it can be stopped), a connector on it started from now with
    `settings`, its consumer, and a new table `t`: (kafka, stack with that Kafka, connector, consumer,
    table)."""
    kafka = fresh_kafka()
    kafka.wait()
    local = dataclasses.replace(stack, kafka_bootstrap=kafka.bootstrap)
    connector = ConnectorProcess(local, tmp_path / "state", f"own{uuid.uuid4().hex[:6]}", **settings)
    consumer = EventConsumer(local, connector.prefix)
    table = f"{keyspace}.t"
    cql.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text) WITH cdc = true")
    connector.start_from_now()
    connector.start()
    return kafka, local, connector, consumer, table


def written_in(segment: Path, table: str, stack) -> set[int]:
    """The ids of `table`'s rows in a segment file, as `python -m connector dump` reads them."""
    result = subprocess.run([sys.executable, "-m", "connector", "dump", str(segment), "--skip-unknown-tables",
                             "--cassandra", f"{stack.cassandra_host}:{stack.cassandra_port}"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"connector dump {segment.name}: {result.stderr.strip()}"
    changes = (json.loads(line) for line in result.stdout.splitlines())
    return {c["partition_key"]["id"] for c in changes if f'{c["keyspace"]}.{c["table"]}' == table}


def remove_unread_segment(connector: ConnectorProcess, aside: Path, write_more) -> SegmentFile:
    """Call `write_more` until cdc_raw holds a COMPLETED segment the connector has not reached (it is
    held before it), then move that segment and its index out of cdc_raw, as an operator freeing space
    would; the connector has seen it listed."""
    def candidate():
        write_more()
        reached = connector.committed().segment_id + 1  # the committed segment, or the one after it
        return next((s for s in list_segments(connector.cdc_raw) if s.segment_id > reached and
                     (index := read_cdc_index(s.index_path)) is not None and index.completed), None)

    segment = wait_for(candidate, timeout=120, what="a completed segment the connector has not reached", paced=False)
    time.sleep(2)  # the connector's monitor lists cdc_raw every `measure_interval` (0.5 s)
    aside.mkdir(exist_ok=True)
    shutil.move(segment.index_path, aside / segment.index_path.name)
    shutil.move(segment.path, aside / segment.path.name)
    return segment


def test_a_segment_removed_unread_stops_reading_until_it_returns_or_its_loss_is_acknowledged(
        stack, cql, keyspace, tmp_path, fresh_kafka):
    """Kafka down holds the connector in one segment while later ones fill; one of those is moved away.
    The loss is reported (log, metric, /ready) and reading waits at it; put back, it is read; moved away
    again and acknowledged (`ack-lost`), reading goes on past it, and only its rows are missing."""
    kafka, local, connector, consumer, table = on_a_broker_of_its_own(
        stack, cql, keyspace, tmp_path, fresh_kafka, metrics_port=unused_port(), max_in_flight=200,
        measure_interval=0.5)
    try:
        written = write_rows(cql, table, range(100))
        consumer.until(lambda events: len(events) >= 100, timeout=60)

        def write_more():
            written.extend(write_rows(cql, table, range(len(written), len(written) + 500), "r" * 250))

        for round_, ack in enumerate([False, True]):
            kafka.stop()
            aside = tmp_path / f"aside-{round_}"
            segment = remove_unread_segment(connector, aside, write_more)
            write_more()  # and some after it
            kafka.start()
            kafka.wait()
            consumer = reconnected(consumer, local, connector.prefix)

            problem = wait_for(lambda: next((p for p in ready(connector)[1]["problems"] if segment.name in p), None),
                               timeout=90, what=f"the loss of {segment.name} reported")
            assert ready(connector)[0] == 503 and "ack-lost" in problem
            assert connector.metrics()["ringtail_segments_lost_total"] == round_ + 1
            time.sleep(3)
            assert connector.committed().segment_id < segment.segment_id, "read past a lost segment"

            if ack:
                missing = written_in(aside / segment.path.name, table, stack)
                assert missing, f"{segment.name} held none of the test's rows"
                result = subprocess.run([sys.executable, "-m", "connector", "ack-lost", segment.path.name,
                                         "--config", str(connector.config)],
                                        cwd=ROOT, capture_output=True, text=True, timeout=60)
                assert result.returncode == 0, result.stderr
                assert (connector.state_dir / "lost" / f"{segment.path.stem}.ack").exists()
            else:
                missing = set()
                for path in aside.iterdir():  # back, index first: then the segment is complete
                    shutil.move(path, connector.cdc_raw / path.name)
            expected = set(written) - missing
            events = consumer.until(lambda events: {e["_key"]["id"] for e in events} >= expected, timeout=180)
            assert_each_once(events, "t", sorted(expected))
            assert not {e["_key"]["id"] for e in events} & missing
            wait_for(lambda: ready(connector)[0] == 200, timeout=30, what="/ready back to 200")
    finally:
        consumer.close()
        connector.stop()
    assert connector.process.returncode == 0


def test_a_segment_lost_while_read_blocks_reading_visibly_and_returns_without_repeats(
        stack, cql, keyspace, tmp_path, fresh_kafka):
    """Kafka down holds the connector inside a completed segment (`max_in_flight` events wait); that
    segment is moved away, and an older link without an index (as a clean Cassandra stop leaves one)
    put beside it. Kafka back: the loss is reported, the metric and /ready name the lost segment while
    reading waits for it, and the old link draws no index error. Put back, the segment is read on from
    where reading stopped: every row once, no event twice."""
    kafka, local, connector, consumer, table = on_a_broker_of_its_own(
        stack, cql, keyspace, tmp_path, fresh_kafka, metrics_port=unused_port(), max_in_flight=200,
        measure_interval=0.5, index_grace=1, leftover_min_age=3600)
    leftover = None
    try:
        written = write_rows(cql, table, range(50))
        consumer.until(lambda events: len(events) >= 50, timeout=60)
        kafka.stop()

        def held_in_a_completed_segment():
            written.extend(write_rows(cql, table, range(len(written), len(written) + 500), "h" * 250))
            figures = connector.metrics()
            segment = next((s for s in list_segments(connector.cdc_raw)
                            if s.segment_id == figures.get("ringtail_current_segment_id")), None)
            index = read_cdc_index(segment.index_path) if segment else None
            return figures.get("ringtail_producer_in_flight") == 200 and index and index.completed and segment

        segment = wait_for(held_in_a_completed_segment, timeout=120, what="reading held inside a completed segment",
                           paced=False)
        leftover = connector.cdc_raw / segment.path.name.replace(str(segment.segment_id), str(segment.segment_id - 1))
        assert not leftover.exists()
        leftover.write_bytes(bytes(1024))
        aside = tmp_path / "aside"
        aside.mkdir()
        for path in (segment.index_path, segment.path):
            shutil.move(path, aside / path.name)
        kafka.start()
        kafka.wait()
        consumer = reconnected(consumer, local, connector.prefix)

        wait_for(lambda: any(segment.name in p for p in ready(connector)[1]["problems"]), timeout=90,
                 what=f"the loss of {segment.name} reported")
        wait_for(lambda: ready(connector)[1].get("segment") == segment.name, timeout=30,
                 what="/ready naming the lost segment")
        figures = connector.metrics()
        record = json.loads((connector.state_dir / "lost" / f"{segment.path.stem}.json").read_text())
        assert figures["ringtail_current_segment_id"] == segment.segment_id
        assert figures["ringtail_current_position_offset"] == record["position"]["entry_offset"] > 0
        time.sleep(3)  # thrice index_grace: an index error for the old link would be out by now
        status, body = ready(connector)
        assert status == 503 and body["segment"] == segment.name
        assert [p for p in body["problems"] if segment.name not in p] == []
        assert "ringtail_index_problems_total{" not in metrics_text(connector)
        assert not [line for line in connector.log.read_text().splitlines()
                    if leftover.name in line and "index" in line]

        for path in aside.iterdir():  # back, index first: then the segment is complete
            shutil.move(path, connector.cdc_raw / path.name)
        events = consumer.until(lambda events: {e["_key"]["id"] for e in events} >= set(written), timeout=180)
        assert_each_once(events, "t", written, repeats=False)
        wait_for(lambda: ready(connector)[0] == 200, timeout=30, what="/ready back to 200")
    finally:
        consumer.close()
        connector.stop()
        if leftover is not None:
            leftover.unlink(missing_ok=True)
    assert connector.process.returncode == 0


def test_an_empty_index_is_reported_then_quarantined_and_leftovers_are_removed(stack, cql, keyspace, tmp_path,
                                                                              pipeline):
    """A cdc_raw of the connector's own, holding copies: a complete segment whose `_cdc.idx` is empty
    with a later indexed one, an orphan index and a link without an index from an earlier run. The
    empty index is reported (log, metric, /ready) after its grace and quarantined after its time;
    the later segment is then read; the leftovers are removed and counted."""
    table = f"{keyspace}.t"
    cql.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text) WITH cdc = true")
    start = durable_end(stack.cdc_raw).segment_id
    written: list[int] = []

    def two_completed():
        written.extend(write_rows(cql, table, range(len(written), len(written) + 500), "e" * 250,
                                  again_after_timeout=True))
        done = [s for s in list_segments(stack.cdc_raw) if s.segment_id > start and
                (index := read_cdc_index(s.index_path)) is not None and index.completed]
        return done[:2] if len(done) >= 2 else None

    empty, later = wait_for(two_completed, timeout=120, what="two completed segments of the test's rows", paced=False)
    # What the later segment holds is read from a copy of its own: a connector may release (remove) the
    # stack's, and the one under test its copy in `private`, once read.
    oracle = tmp_path / "oracle"
    oracle.mkdir()
    shutil.copy(later.path, oracle)
    private = tmp_path / "cdc_raw"
    private.mkdir()
    shutil.copy(empty.path, private)
    (private / empty.index_path.name).write_bytes(b"")
    shutil.copy(later.path, private)
    shutil.copy(later.index_path, private)
    version = empty.path.name.split("-")[1]
    orphan = private / f"CommitLog-{version}-{empty.segment_id - 2}_cdc.idx"
    orphan.write_text("1024\nCOMPLETED\n")
    unindexed = private / f"CommitLog-{version}-{empty.segment_id - 1}.log"
    unindexed.write_bytes(bytes(1024))

    connector, consumer = pipeline(cdc_raw=private, metrics_port=unused_port(), index_grace=1,
                                   index_quarantine_after=6, housekeeping_interval=0.5, leftover_min_age=0)
    connector.start()
    wait_for(lambda: not orphan.exists() and not unindexed.exists(), timeout=60, what="the leftovers removed")
    problem = wait_for(lambda: next((p for p in ready(connector)[1]["problems"] if empty.name in p), None),
                       timeout=30, what="the empty index reported")
    assert "empty" in problem
    # While reading is stuck there, the metric and /ready name the segment it is stuck on.
    assert connector.metrics()["ringtail_current_segment_id"] == empty.segment_id
    assert ready(connector)[1]["segment"] == empty.name
    text = metrics_text(connector)
    assert 'ringtail_housekeeping_removed_total{kind="orphan_index"} 1.0' in text
    assert 'ringtail_housekeeping_removed_total{kind="unindexed_link"} 1.0' in text
    assert 'ringtail_index_problems_total{kind="empty_or_unreadable"} 1.0' in text

    in_later = written_in(oracle / later.path.name, table, stack)
    events = consumer.until(lambda events: {e["_key"]["id"] for e in events} >= in_later, timeout=60)
    reason = json.loads((connector.state_dir / "quarantine" / f"{empty.path.stem}.reason.json").read_text())
    assert reason["segment"] == empty.name and reason["error"] == "IndexProblem"
    assert (connector.state_dir / "quarantine" / empty.path.name).read_bytes() == empty.path.read_bytes()
    assert not {e["_key"]["id"] for e in events} - in_later
    wait_for(lambda: ready(connector)[0] == 200, timeout=30, what="/ready back to 200")
    log = connector.log.read_text()
    assert f"removed orphan index {orphan.name}" in log and "quarantined " + empty.name in log


def test_during_a_kafka_outage_space_and_stall_are_measured_and_sigterm_exits_within_its_timeout(
        stack, cql, keyspace, tmp_path, fresh_kafka):
    """Kafka down and `max_in_flight` full, so the main loop waits: cdc_raw usage, its warning, bytes
    behind and the stall are still measured and shown; SIGTERM exits 0 within `shutdown_timeout`,
    saying what was left; the next start delivers every row."""
    settings = dict(metrics_port=unused_port(), max_in_flight=100, measure_interval=0.5, stall_timeout=3,
                    shutdown_timeout=3)
    kafka, local, connector, consumer, table = on_a_broker_of_its_own(stack, cql, keyspace, tmp_path, fresh_kafka,
                                                                      **settings)
    try:
        written = write_rows(cql, table, range(100))
        consumer.until(lambda events: len(events) >= 100, timeout=60)
        # cdc_total_space as if Cassandra allowed 1.5 MiB more than cdc_raw holds now, before the warning.
        wait_for(lambda: connector.metrics()["ringtail_bytes_behind"] == 0, timeout=60, what="nothing left to read")
        used = connector.metrics()["ringtail_cdc_raw_bytes"]
        connector.stop()
        connector = ConnectorProcess(local, tmp_path / "state", connector.prefix, **settings,
                                     cdc_total_space=int((used + (3 << 19)) / 0.7), cdc_usage_warning=0.7)
        connector.start()
        written += write_rows(cql, table, range(100, 200))  # this process knows the topic before the outage
        consumer.until(lambda events: {e["_key"]["id"] for e in events} >= set(written), timeout=60)
        assert not ready(connector)[1]["warnings"]

        kafka.stop()

        def warned():
            written.extend(write_rows(cql, table, range(len(written), len(written) + 500), "o" * 250))
            return next((w for w in ready(connector)[1]["warnings"] if "cdc_raw holds" in w), None)

        wait_for(warned, timeout=120, what="the cdc_raw space warning", paced=False)
        metrics = connector.metrics()
        assert metrics["ringtail_producer_in_flight"] == 100, "the main loop was not held by backpressure"
        assert metrics["ringtail_cdc_raw_usage_ratio"] >= 0.7 and metrics["ringtail_bytes_behind"] > 1 << 20
        wait_for(lambda: any(p.startswith("stalled") for p in ready(connector)[1]["problems"]), timeout=30,
                 what="the stall reported")
        assert ready(connector)[0] == 503

        stopping = time.monotonic()
        connector.process.terminate()
        assert connector.process.wait(30) == 0
        assert time.monotonic() - stopping < 3 + 5
        log = connector.log.read_text()
        assert "events not acknowledged by Kafka within 3 s" in log
        assert "Traceback" not in log

        kafka.start()
        kafka.wait()
        consumer = reconnected(consumer, local, connector.prefix)
        connector.start()
        events = consumer.until(lambda events: {e["_key"]["id"] for e in events} >= set(written), timeout=180)
        assert_each_once(events, "t", written)
    finally:
        consumer.close()
        connector.stop()
    assert connector.process.returncode == 0
