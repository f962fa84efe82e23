"""The connector end to end on the real stack: CQL writes → cdc_raw → connector process → Kafka →
events decoded through the registry. Crashes are real `kill -9`s of the process."""
from __future__ import annotations

import random
import threading
import time

import pytest

from connector.commitlog import Position
from deploy.local.processes import ConnectorProcess
from tests.integration.pipeline import EventConsumer, changes_of_every_kind_arrive, has_marker, write_marker


@pytest.mark.parametrize("decoder", ["native", "python"])
def test_workload_arrives_as_events(cql, keyspace, pipeline, decoder):
    """The same events whichever reads the segments: the native core, or the Python reference."""
    connector, consumer = pipeline(decoder=decoder)
    connector.start_from_now()
    connector.start()
    changes_of_every_kind_arrive(cql, keyspace, connector, consumer)


def test_kill_9_while_writing_loses_nothing(cql, keyspace, pipeline):
    connector, consumer = pipeline()
    connector.start_from_now()
    connector.start()
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, body text) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.t (id, body) VALUES (?, ?)")
    written, done = [], threading.Event()
    body = "x" * 600  # rolls several 1 MiB segments: new segments after each restart

    def writer() -> None:
        for i in range(6000):
            cql.execute(insert, (i, body))
            written.append(i)
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    rng = random.Random(7)
    kills = 0
    while not done.is_set() and kills < 4:
        time.sleep(rng.uniform(1.0, 3.0))
        connector.kill()
        kills += 1
        connector.start()
    thread.join()
    marker = write_marker(cql, keyspace)
    events = consumer.until(has_marker(marker), timeout=120)
    got = [e for e in events if e["source"]["table"] == "t"]
    assert kills >= 2
    assert sorted({e["_key"]["id"] for e in got}) == written
    # Duplicates come only from the uncommitted window and carry the same position.
    by_id: dict[int, set] = {}
    for e in got:
        by_id.setdefault(e["_key"]["id"], set()).add(tuple(e["source"]["position"].values()))
    assert all(len(positions) == 1 for positions in by_id.values())


def test_resumes_after_row_k_of_one_mutation(stack, cql, keyspace, pipeline, tmp_path):
    """A mutation with many rows; the committed position is after row k: the rest arrive, not the first k."""
    connector, consumer = pipeline()
    connector.start_from_now()
    start = connector.committed()
    connector.start()
    cql.execute(f"CREATE TABLE {keyspace}.wide (p int, c int, v int, PRIMARY KEY (p, c)) WITH cdc = true")
    batch = "".join(f"INSERT INTO {keyspace}.wide (p, c, v) VALUES (1, {c}, {c});" for c in range(200))
    cql.execute(f"BEGIN UNLOGGED BATCH {batch} APPLY BATCH")
    marker = write_marker(cql, keyspace)
    rows = [e for e in consumer.until(has_marker(marker)) if e["source"]["table"] == "wide"]
    positions = [Position(**e["source"]["position"]) for e in rows]
    assert len(rows) == 200 and len({p.entry_offset for p in positions}) == 1, "one mutation"
    assert [p.row_index for p in positions] == sorted(p.row_index for p in positions)

    # A second connector that committed row k of that mutation before it crashed.
    k = 120
    again = ConnectorProcess(stack, tmp_path / "again", f"{connector.prefix}again")
    again.seed(positions[k - 1])
    resumed = EventConsumer(stack, again.prefix)
    connector.stop()  # one connector per cdc_raw
    try:
        again.start()
        marker = write_marker(cql, keyspace)
        events = resumed.until(has_marker(marker))
    finally:
        again.stop()
        resumed.close()
    assert sorted(e["after"]["c"] for e in events if e["source"]["table"] == "wide") == list(range(k, 200))
    assert start.segment_id <= positions[0].segment_id


def test_delivered_segments_are_released(cql, keyspace, pipeline):
    connector, consumer = pipeline()
    connector.start_from_now()
    first = connector.committed().segment_id
    connector.start()
    cql.execute(f"CREATE TABLE {keyspace}.t (id int PRIMARY KEY, body text) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.t (id, body) VALUES (?, ?)")
    for i in range(2500):
        cql.execute(insert, (i, "y" * 1000))  # more than two 1 MiB segments
    marker = write_marker(cql, keyspace)
    consumer.until(has_marker(marker), timeout=120)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        committed = connector.committed()
        left = [p for p in connector.cdc_raw.glob("CommitLog-*.log")
                if first <= int(p.stem.rsplit("-", 1)[1]) < committed.segment_id]
        if committed.segment_id > first + 1 and not left:
            break
        time.sleep(0.5)
    assert committed.segment_id > first + 1, "the workload spans several segments"
    assert left == [], "segments before the committed position are released"
