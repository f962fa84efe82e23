"""The golden workload: a known workload written to a real Cassandra node decodes back to exactly what was
written.

Every statement carries `USING TIMESTAMP`, so the write timestamps are known; the decoded changes of the
test's keyspace are compared, in commit-log order, with the expected JSON of `python -m connector dump`.
A suite (`tests/integration/suites`): run on the main node by `test_commitlog_golden.py`, on the older
series by `test_cassandra_versions.py`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from connector.commitlog.cdc_index import indexed_segments
from schemas.tables.loader import read_snapshot
from tests.unit.connector.commitlog.native_oracle import native_events, reference_events

from deploy.local.endpoints import Stack
from tests.support import release_series

T = 1_700_000_000_000_000  # base write timestamp, µs


def _durable(cdc_raw: Path) -> dict[Path, int]:
    return {segment: index.offset for segment, index in indexed_segments(cdc_raw).items()}


def flush_commitlog(cql, keyspace: str, cdc_raw: Path) -> dict[Path, int]:
    """Wait until a marker write, made after the workload, is durable: then the workload is too."""
    cql.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.marker (id int PRIMARY KEY) WITH cdc = true")
    before = _durable(cdc_raw)
    cql.execute(f"INSERT INTO {keyspace}.marker (id) VALUES (1)")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        now = _durable(cdc_raw)
        if any(off > before.get(seg, 0) for seg, off in now.items()):
            return now
        time.sleep(0.2)
    pytest.fail("the durable offset did not move within 15 s")


def _dump(stack: Stack, keyspace: str, segments: dict[Path, int]) -> list[dict]:
    changes = []
    for segment, limit in sorted(segments.items(), key=lambda item: int(item[0].stem.rsplit("-", 1)[1])):
        if not segment.exists():
            continue
        result = subprocess.run(
            # Older segments hold tables other tests dropped since; their mutations are skipped (and
            # reported), this test's tables are all known.
            [sys.executable, "-m", "connector", "dump", str(segment), "--limit", str(limit),
             "--cassandra", f"{stack.cassandra_host}:{stack.cassandra_port}", "--skip-unknown-tables"],
            capture_output=True, text=True, timeout=120,
        )
        assert result.returncode == 0, result.stderr
        changes += [c for c in map(json.loads, result.stdout.splitlines()) if c["keyspace"] == keyspace]
    return [c for c in changes if c["table"] != "marker"]


def _strip(change: dict) -> dict:
    """What the expectations compare: everything but where the change sits."""
    return {k: v for k, v in change.items() if k not in ("segment", "position", "keyspace")}


def _has_vector(cql) -> bool:
    return release_series(cql) >= (5, 0)  # the vector type came with 5.0


class GoldenWorkload:
    """The workload on the module's `node` (through `cql`), decoded by both decoders."""

    @pytest.fixture
    def workload(self, cql, keyspace: str):
        ks = keyspace
        vector = _has_vector(cql)
        cql.execute(f"CREATE TYPE {ks}.address (street text, zip int)")
        cql.execute(
            f"CREATE TABLE {ks}.scalars (k int PRIMARY KEY, a ascii, b bigint, c blob, d boolean, e date,"
            " f decimal, g double, h duration, i float, j inet, l smallint, m text, n time, o timestamp,"
            f" p timeuuid, q tinyint, r uuid, s varint{', v vector<float, 3>' if vector else ''}) WITH cdc = true"
        )
        cql.execute(
            f"CREATE TABLE {ks}.events (tenant text, bucket int, ts timestamp, seq int, note text static,"
            " body text, tags set<int>, items list<text>, attrs map<text, int>, home address,"
            " frozen_home frozen<address>, pair tuple<int, text>,"
            " PRIMARY KEY ((tenant, bucket), ts, seq)) WITH CLUSTERING ORDER BY (ts DESC, seq ASC) AND cdc = true"
        )
        cql.execute(f"CREATE TABLE {ks}.hits (page text PRIMARY KEY, n counter) WITH cdc = true")
        cql.execute(f"CREATE TABLE {ks}.audit (id int PRIMARY KEY, what text) WITH cdc = false")
        statements = [
            f"INSERT INTO {ks}.scalars"
            f" (k, a, b, c, d, e, f, g, h, i, j, l, m, n, o, p, q, r, s{', v' if vector else ''})"
            " VALUES (1, 'ascii', -9000000000, 0xcafe, true, '2024-02-29', 12.345, 2.5, 1mo2d3h4m5s6ms7us8ns, 1.5,"
            " '10.0.0.1', -32768, 'héllo', '13:14:15.123456789', '2024-01-02T03:04:05.678Z',"
            " 50554d6e-29bb-11e5-b345-feff819cdc9f, -128, 0b7f3b2c-1c1a-4b6e-9a8e-9d3b0c1e2f3a,"
            f" 123456789012345678901234567890{', [1.0, 2.5, -3.0]' if vector else ''}) USING TIMESTAMP {T}",
            f"INSERT INTO {ks}.events (tenant, bucket, ts, seq, body, tags, items, attrs, home, frozen_home, pair)"
            " VALUES ('acme', 7, '2024-05-01T00:00:00Z', 1, 'first', {3, 1}, ['a', 'b'], {'x': 1},"
            " {street: 'Main', zip: 12345}, {street: 'Elm', zip: 2}, (9, 'nine'))"
            f" USING TIMESTAMP {T + 1} AND TTL 86400",
            f"UPDATE {ks}.events USING TIMESTAMP {T + 2} SET note = 'static note'"
            " WHERE tenant = 'acme' AND bucket = 7",
            f"UPDATE {ks}.events USING TIMESTAMP {T + 3} SET items = items + ['c'], tags = tags - {{3}},"
            " attrs['y'] = 2, home.zip = 99999"
            " WHERE tenant = 'acme' AND bucket = 7 AND ts = '2024-05-01T00:00:00Z' AND seq = 1",
            f"DELETE attrs['x'], body FROM {ks}.events USING TIMESTAMP {T + 4}"
            " WHERE tenant = 'acme' AND bucket = 7 AND ts = '2024-05-01T00:00:00Z' AND seq = 1",
            f"DELETE FROM {ks}.events USING TIMESTAMP {T + 5}"
            " WHERE tenant = 'acme' AND bucket = 7 AND ts = '2024-05-02T00:00:00Z' AND seq = 2",
            f"DELETE FROM {ks}.events USING TIMESTAMP {T + 6}"
            " WHERE tenant = 'acme' AND bucket = 7 AND ts >= '2024-04-01T00:00:00Z' AND ts < '2024-04-15T00:00:00Z'",
            f"DELETE FROM {ks}.events USING TIMESTAMP {T + 7} WHERE tenant = 'gone' AND bucket = 1",
            f"UPDATE {ks}.hits SET n = n + 5 WHERE page = 'home'",
            f"BEGIN UNLOGGED BATCH USING TIMESTAMP {T + 8}"
            f" INSERT INTO {ks}.audit (id, what) VALUES (1, 'not captured');"
            f" INSERT INTO {ks}.scalars (k, m) VALUES (2, 'batched');"
            " APPLY BATCH",
        ]
        for statement in statements:
            cql.execute(statement)
        return ks

    def test_workload_decodes_to_what_was_written(self, node: Stack, cql, workload: str) -> None:
        segments = flush_commitlog(cql, workload, node.cdc_raw)
        changes = _dump(node, workload, segments)
        positions = [tuple(c["position"].values()) for c in changes]
        assert positions == sorted(positions), "changes come out in commit-log order"
        got = [_strip(c) for c in changes]

        key = {"tenant": "acme", "bucket": 7}
        day1 = ["2024-05-01T00:00:00.000Z", 1]
        expected = [
            {"table": "scalars", "op": "insert", "partition_key": {"k": 1}, "clustering": [],
             "liveness": {"timestamp": T},
             "cells": {
                 "a": {"value": "ascii", "timestamp": T},
                 "b": {"value": -9000000000, "timestamp": T},
                 "c": {"value": "0xcafe", "timestamp": T},
                 "d": {"value": True, "timestamp": T},
                 "e": {"value": "2024-02-29", "timestamp": T},
                 "f": {"value": "12.345", "timestamp": T},
                 "g": {"value": 2.5, "timestamp": T},
                 "h": {"value": "1mo2d3h4m5s6ms7us8ns", "timestamp": T},
                 "i": {"value": 1.5, "timestamp": T},
                 "j": {"value": "10.0.0.1", "timestamp": T},
                 "l": {"value": -32768, "timestamp": T},
                 "m": {"value": "héllo", "timestamp": T},
                 "n": {"value": "13:14:15.123456789", "timestamp": T},
                 "o": {"value": "2024-01-02T03:04:05.678Z", "timestamp": T},
                 "p": {"value": "50554d6e-29bb-11e5-b345-feff819cdc9f", "timestamp": T},
                 "q": {"value": -128, "timestamp": T},
                 "r": {"value": "0b7f3b2c-1c1a-4b6e-9a8e-9d3b0c1e2f3a", "timestamp": T},
                 "s": {"value": "123456789012345678901234567890", "timestamp": T},
                 "v": {"value": [1.0, 2.5, -3.0], "timestamp": T},
             }},
        ]
        if not _has_vector(cql):
            del expected[0]["cells"]["v"]
        assert got[0] == expected[0]

        insert = got[1]
        assert insert["table"] == "events" and insert["op"] == "insert"
        assert insert["partition_key"] == key and insert["clustering"] == day1
        assert insert["liveness"]["timestamp"] == T + 1 and insert["liveness"]["ttl"] == 86400
        cells = insert["cells"]
        assert cells["body"]["value"] == "first" and cells["body"]["ttl"] == 86400
        assert cells["tags"]["value"] == [1, 3]
        assert cells["items"]["value"] == ["a", "b"]
        assert cells["attrs"]["value"] == {"x": 1}
        assert cells["home"]["value"] == {"street": "Main", "zip": 12345}
        assert cells["frozen_home"]["value"] == {"street": "Elm", "zip": 2}
        assert cells["pair"]["value"] == [9, "nine"]
        # An INSERT overwrites whole collections: each non-frozen one starts with a deletion just before it.
        for name in ("tags", "items", "attrs", "home"):
            assert cells[name]["deletion"]["timestamp"] == T + 1 - 1, name

        static = got[2]
        assert static["op"] == "update" and static.get("static") is True and static["clustering"] == []
        assert static["cells"] == {"note": {"value": "static note", "timestamp": T + 2}}

        update = got[3]
        assert update["op"] == "update" and update["clustering"] == day1 and "liveness" not in update
        assert update["cells"]["items"]["value"] == ["c"]  # an append: the new element only
        assert "deletion" not in update["cells"]["items"]
        assert update["cells"]["tags"]["removed"] == [3]
        assert update["cells"]["attrs"]["value"] == {"y": 2}
        assert update["cells"]["home"]["value"] == {"zip": 99999}

        cell_delete = got[4]
        assert cell_delete["op"] == "update"
        assert cell_delete["cells"]["attrs"]["removed"] == ["x"]
        assert cell_delete["cells"]["body"]["deletion"]["timestamp"] == T + 4
        assert cell_delete["cells"]["body"]["value"] is None

        row_delete = got[5]
        assert row_delete["op"] == "row_delete" and row_delete["clustering"] == ["2024-05-02T00:00:00.000Z", 2]
        assert row_delete["deletion"]["timestamp"] == T + 5

        range_delete = got[6]
        assert range_delete["op"] == "range_delete" and range_delete["deletion"]["timestamp"] == T + 6
        # DESC clustering: the range's first bound in clustering order is the later time.
        bounds = range_delete["range"]
        assert {tuple(bounds["start"]["clustering"]), tuple(bounds["end"]["clustering"])} == {
            ("2024-04-15T00:00:00.000Z",), ("2024-04-01T00:00:00.000Z",)}
        inclusive = {tuple(b["clustering"]): b["inclusive"] for b in (bounds["start"], bounds["end"])}
        assert inclusive == {("2024-04-01T00:00:00.000Z",): True, ("2024-04-15T00:00:00.000Z",): False}

        partition_delete = got[7]
        assert partition_delete["op"] == "partition_delete"
        assert partition_delete["partition_key"] == {"tenant": "gone", "bucket": 1}
        assert partition_delete["deletion"]["timestamp"] == T + 7

        counter = got[8]
        assert counter["table"] == "hits" and counter["partition_key"] == {"page": "home"}
        assert counter["cells"]["n"]["value"] == 5

        # The unlogged batch: the non-CDC table's change is decoded too (the reader cannot skip it);
        # the CDC table's change is there with the batch's timestamp.
        batched = [c for c in got[9:] if c["table"] == "scalars"]
        assert batched == [{"table": "scalars", "op": "insert", "partition_key": {"k": 2}, "clustering": [],
                            "liveness": {"timestamp": T + 8},
                            "cells": {"m": {"value": "batched", "timestamp": T + 8}}}]
        assert {c["table"] for c in got[9:]} == {"scalars", "audit"}
        assert len(got) == 11

    def test_native_core_writes_the_reference_events(self, node: Stack, cql, workload: str,
                                                     tmp_path: Path) -> None:
        """The segments a real Cassandra wrote for the workload (and whatever else is in cdc_raw), read by
        the native core and by the Python reader and writer: the same events, byte for byte."""
        segments = flush_commitlog(cql, workload, node.cdc_raw)
        _, schema = read_snapshot(cql)
        compared = ours = 0
        for segment, limit in segments.items():
            copy = tmp_path / segment.name
            try:
                shutil.copyfile(segment, copy)
            except FileNotFoundError:  # released meanwhile
                continue
            expected = reference_events(copy, schema, limit=limit, skip_unknown=True)
            assert native_events(copy, schema, limit=limit, skip_unknown=True) == expected, segment.name
            compared += len(expected)
            ours += sum(1 for _, _, _, value in expected if f"{workload}".encode() in value)
        assert ours >= 10 and compared >= ours
