"""The connector's read side against the real `cdc_raw`, from the moment a test starts.

A live schema and one tail per segment, as the connector runs them; `until_marker` reads until a
marker row written after the workload arrives, so every change of the workload was read.
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path

from connector.commitlog import Change, Position, Undecodable
from connector.schema.live import LiveSchema
from connector.source import SegmentTail, chain_end, durable_end, list_segments
from deploy.local.endpoints import Stack


class Capture:
    def __init__(self, stack: Stack, store: Path) -> None:
        self.cdc_raw = stack.cdc_raw
        self.live = LiveSchema([stack.cassandra_host], stack.cassandra_port, store=store, check_interval=1.0,
                               newest_segment=self.newest_segment)
        # Older changes belong to other tests (and to tables dropped since): start after them, at
        # the end of each segment's sync-marker chain (an index exists only once a segment holds CDC data).
        self.start = {s.segment_id: Position.after_section(s.segment_id, chain_end(s.path) or 0)
                      for s in list_segments(self.cdc_raw)}
        self.tails: dict[int, SegmentTail] = {}
        self.decoded: list[Change] = []  # every change read, CDC or not
        self.undecodable: list[Undecodable] = []  # entries no schema decodes

    def newest_segment(self) -> int:
        return list_segments(self.cdc_raw)[-1].segment_id

    def __enter__(self) -> Capture:
        self.live.start()
        return self

    def __exit__(self, *exc_info) -> None:
        for tail in self.tails.values():
            tail.close()
        self.live.close()

    def poll(self) -> None:
        for segment in list_segments(self.cdc_raw):
            tail = self.tails.get(segment.segment_id)
            if tail is None:
                tail = self.tails[segment.segment_id] = SegmentTail(segment, self.live,
                                                                    self.start.get(segment.segment_id))
            for item in tail.poll():
                (self.decoded if isinstance(item, Change) else self.undecodable).append(item)

    def until_marker(self, cql, keyspace: str, timeout: float = 30) -> list[Change]:
        """Captured changes of `keyspace` (marker excluded), once a marker written now has been read."""
        cql.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.marker (id uuid PRIMARY KEY) WITH cdc = true")
        marker = uuid.uuid4()
        cql.execute(f"INSERT INTO {keyspace}.marker (id) VALUES ({marker})")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll()
            if any(c.table.name == "marker" and c.partition_key == (marker,) for c in self.decoded):
                return self.captured(keyspace)
            time.sleep(0.2)
        raise AssertionError(f"the marker row was not read within {timeout} s")

    def captured(self, keyspace: str) -> list[Change]:
        return [c for c in self.decoded
                if c.table.keyspace == keyspace and c.table.name != "marker" and self.live.captures(c)]


def synced(cql, keyspace: str, cdc_raw) -> None:
    """Wait until what was written so far is durable: two commit-log syncs after now (the first may
    have begun before the last write), each seen as the sync-marker chain growing past a filler row."""
    cql.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.filler (id int PRIMARY KEY)")
    end, syncs, deadline = durable_end(cdc_raw), 0, time.monotonic() + 30
    while syncs < 2:
        assert time.monotonic() < deadline, "the commit log was not synced within 30 s"
        cql.execute(f"INSERT INTO {keyspace}.filler (id) VALUES (1)")
        now = durable_end(cdc_raw)
        if now != end:
            syncs, end = syncs + 1, now
        time.sleep(0.05)
