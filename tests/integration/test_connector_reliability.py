"""The connector as a real process through what the README promises it survives: Kafka gone for 30 s
under load, segments holding nothing to emit or no CDC data at all, a restart followed by a stream of
new segments."""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

import pytest

from connector.commitlog.cdc_index import read_cdc_index
from connector.source import list_segments
from deploy.local.endpoints import ROOT
from tests.integration.pipeline import EventConsumer, assert_each_once, has_marker, write_marker
from tests.support import unused_port, wait_for


def segment_ids(cdc_raw, indexed: bool = False) -> set[int]:
    return {s.segment_id for s in list_segments(cdc_raw) if not indexed or s.index_path.exists()}


def kafka_service(command: str) -> None:
    if os.environ.get("RINGTAIL_TEST_BACKEND", "local") != "local":
        pytest.fail("stopping Kafka needs the local stack (deploy/local/start)", pytrace=False)
    subprocess.run([str(ROOT / "deploy" / "local" / command), "kafka"], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def test_kafka_down_30_s_under_load_loses_nothing(stack, cql, keyspace, pipeline):
    # A small in-flight bound: the outage also fills it, so reading has to pause and resume.
    connector, consumer = pipeline(max_in_flight=1000)
    connector.start_from_now()
    connector.start()
    pid = connector.process.pid
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, body text) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.t (id, body) VALUES (?, ?)")
    written: list[int] = []
    stop, failures = threading.Event(), []
    rate, body = 250, "k" * 400  # ~5 MiB over the test: segments roll while Kafka is down

    def writer() -> None:
        started = time.monotonic()
        try:
            while not stop.is_set():
                i = len(written)
                time.sleep(max(0.0, started + i / rate - time.monotonic()))
                cql.execute(insert, (i, body))
                written.append(i)
        except Exception as exc:  # reported by the test, not lost in the thread
            failures.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    kafka_down = False
    try:
        thread.start()
        # The topic exists and events flow before the outage.
        consumer.until(lambda events: any(e["source"]["table"] == "t" for e in events), timeout=60)
        kafka_service("stop")
        kafka_down = True
        before = len(written)
        outage_end = time.monotonic() + 30
        while time.monotonic() < outage_end:
            assert connector.process.poll() is None, "the connector exited while Kafka was down"
            time.sleep(1)
        during = len(written) - before
        kafka_service("start")
        kafka_down = False
        time.sleep(5)  # writes go on after Kafka is back
    finally:
        stop.set()
        thread.join(30)
        if kafka_down:
            kafka_service("start")
    assert not failures, f"writes failed: {failures[0]!r}"
    assert during > 20 * rate, f"only {during} rows written while Kafka was down"
    marker = write_marker(cql, keyspace)
    # Read back by a consumer made after the outage: what Kafka holds is checked, not whether the
    # test's own consumer lived through the broker's restart.
    consumer.close()
    after = EventConsumer(stack, connector.prefix)
    try:
        events = after.until(has_marker(marker), timeout=240)
    finally:
        after.close()
    assert_each_once(events, "t", written)
    # Resumed by itself: the same process, never restarted by the test.
    assert connector.process.poll() is None and connector.process.pid == pid
    connector.stop()
    assert connector.process.returncode == 0, "a clean stop once Kafka is back"


def test_segments_with_only_filtered_changes_are_released(cql, keyspace, pipeline):
    """Writes to a cdc table dated before its cdc flag was set: Cassandra keeps their segments in
    cdc_raw (the flag is on when they are written), the connector reads and filters them (it judges
    by write time), and must still release them."""
    connector, consumer = pipeline(metrics_port=unused_port())
    connector.start_from_now()
    first = connector.committed().segment_id
    connector.start()
    wait_for(connector.ready, timeout=60, what="the connector's /ready")
    filtered = connector.metrics()["ringtail_changes_filtered_total"]
    seen, sampling = set(), threading.Event()

    def sample() -> None:  # the connector releases segments soon after they complete
        while not sampling.is_set():
            seen.update(segment_ids(connector.cdc_raw, indexed=True))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        cql.execute(f"CREATE TABLE {keyspace}.old (id int PRIMARY KEY, body text) WITH cdc = false")
        time.sleep(0.05)
        before_cdc = time.time_ns() // 1000
        time.sleep(0.05)
        cql.execute(f"ALTER TABLE {keyspace}.old WITH cdc = true")
        insert = cql.prepare(f"INSERT INTO {keyspace}.old (id, body) VALUES (?, ?) USING TIMESTAMP {before_cdc}")
        rows = 5000  # 1 KiB each: about five 1 MiB segments, so three or more lie wholly inside the run
        for i in range(rows):
            cql.execute(insert, (i, "o" * 1000))
        marker = write_marker(cql, keyspace)  # a captured change after them
        events = consumer.until(has_marker(marker), timeout=120)
    finally:
        sampling.set()
        sampler.join()
    assert not [e for e in events if e["source"]["table"] == "old"], "changes before the cdc flag are not emitted"
    last = next(e for e in events if e["source"]["table"] == "marker")["source"]["position"]["segment_id"]
    kept = {s for s in seen if first <= s < last}
    assert len(kept) >= 3, "Cassandra kept the filtered writes' segments in cdc_raw, each with an index"
    wait_for(lambda: connector.metrics()["ringtail_changes_filtered_total"] - filtered >= rows, timeout=10,
             what="the filtered count")
    wait_for(lambda: not kept & segment_ids(connector.cdc_raw), timeout=20, what="the filtered segments' release")
    assert not kept & segment_ids(connector.cdc_raw, indexed=True), "their indexes are released too"
    assert connector.metrics()["ringtail_segments_released_total"] >= len(kept)


def test_new_segments_after_a_restart_are_all_processed(cql, keyspace, pipeline):
    connector, consumer = pipeline()
    connector.start_from_now()
    connector.start()
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, body text) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.t (id, body) VALUES (?, ?)")
    for i in range(100):
        cql.execute(insert, (i, "a" * 100))
    consumer.until(has_marker(write_marker(cql, keyspace)))
    connector.stop()
    assert connector.process.returncode == 0

    connector.start()
    rows = 3500  # 1 KiB each: more than three 1 MiB segments, all new to the restarted process
    for i in range(100, 100 + rows):
        cql.execute(insert, (i, "b" * 1000))
    marker = write_marker(cql, keyspace)
    events = consumer.until(has_marker(marker), timeout=120)
    # Nothing crashed: a clean stop commits what Kafka acknowledged, so nothing is produced twice.
    assert_each_once(events, "t", list(range(100 + rows)), repeats=False)
    after = {e["source"]["position"]["segment_id"] for e in events
             if e["source"]["table"] == "t" and e["_key"]["id"] >= 100}
    assert len(after) >= 3, "the rows after the restart span three or more segments"
    wait_for(lambda: connector.committed().segment_id >= max(after), timeout=20, what="the committed position")


def test_a_segment_without_cdc_data_does_not_hold_back_later_ones(stack, cql, keyspace, pipeline, tmp_path):
    """A segment without an index (it never held CDC data: the one being written, or a link an earlier
    Cassandra run left behind) is where a fresh connector starts when nothing else is there; once a
    later segment has an index, that one is read. The connector gets a cdc_raw of its own holding
    copies, so which segments it sees is decided here."""
    private = tmp_path / "cdc_raw"
    private.mkdir()
    bare = [s for s in list_segments(stack.cdc_raw) if not s.index_path.exists()][-1]
    shutil.copy(bare.path, private)
    connector, consumer = pipeline(cdc_raw=private, metrics_port=unused_port())
    connector.start()
    wait_for(connector.ready, timeout=60, what="the connector's /ready")
    time.sleep(1)  # some turns of its loop with only the segment without an index
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, body text) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.t (id, body) VALUES (?, ?)")
    written = 0

    def later_indexed():
        nonlocal written
        for _ in range(100):
            cql.execute(insert, (written, "x" * 1000))
            written += 1
        return next((s for s in list_segments(stack.cdc_raw)
                     if s.segment_id > bare.segment_id and read_cdc_index(s.index_path)), None)

    later = wait_for(later_indexed, timeout=60, what="a later segment with an index", paced=False)
    index = later.index_path.read_bytes()  # before the copy: the copy holds at least what it says
    shutil.copy(later.path, private)
    (private / later.index_path.name).write_bytes(index)
    events = consumer.until(lambda events: any(e["source"]["table"] == "t" for e in events), timeout=30)
    assert {e["source"]["position"]["segment_id"] for e in events if e["source"]["table"] == "t"} == {later.segment_id}
