"""Read repair on a real ring (Cassandra 5.0.8, three nodes, replication factor 3), as the log sees it.

data/read_repair/ holds two cdc_raw segments cut after their last durable offset (gzipped): node 1's,
which took these writes at QUORUM while node 3 was down with hinted handoff off on every node,

    k=1 INSERT (1, 1) a=10 b='x' @1000           k=5 UPDATE l = [1, 2] @1000, then l = l + [3] @2000
    k=2 INSERT (2, 1) a=20 b='y' @1000,          k=6 UPDATE m = m + {'a': 1} @1000, then m['b'] = 2 @2000
        then UPDATE a = 21 @2000                 k=7 UPDATE l = [5] @1000
    k=3 INSERT (3, 1) @1000, INSERT (3, 2) @3000 k=9 UPDATE a = 1 @1000, then a = 2 @2000
    k=4 DELETE partition @4000

and node 3's, once it was back and each partition was read at ALL: the blocking read repair wrote it
one mutation per partition with what it lacked. Where a node missed one write of a row (k=1, each row
of k=3, k=4, k=7, k=9's newest), the repair is that write again, byte for byte: a replica copy. Where it
missed several writes of a row that the read merges into one (k=2, k=5, k=6), the repair is no write
anyone made; it is delivered as the row as read (operation 10), like a snapshot's row.
"""
import gzip
import json
from pathlib import Path

import pytest
from fastavro import parse_schema

from connector.commitlog import SegmentReader, skip_unknown_tables
from schemas.avro import ChangeEncoder, SourceInfo
from schemas.avro.wire import frame
from schemas.tables import parse_ddl
from spark import rows as R
from tests.unit.spark.delivery.decoding import assert_same, records

DATA = Path(__file__).parents[2] / "connector" / "commitlog" / "data" / "read_repair"
ORIGINAL, REPAIR = "CommitLog-7-1795591914681.log.gz", "CommitLog-7-1795592477703.log.gz"
SCHEMA = parse_ddl("""
CREATE KEYSPACE rr WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': '3'};
CREATE TABLE rr.repair (k int, c int, a int, b text, l list<int>, m map<text, int>, PRIMARY KEY (k, c))
    WITH ID = 8fe949e0-e8a3-11f1-bcd8-f931dce2bb9c AND cdc = true;
""")
SCHEMA_ID = 1


def log_rows(segment: str, node: str, tmp_path: Path) -> list[dict]:
    """The segment's rows of rr.repair as the job logs them (both decoders agreeing)."""
    path = tmp_path / segment.removesuffix(".gz")
    path.write_bytes(gzip.decompress((DATA / segment).read_bytes()))
    encoder = ChangeEncoder(SourceInfo(name="rr", cluster="ring", node=node), SCHEMA)
    payloads, value_schema = [], None
    with SegmentReader(path, SCHEMA, on_schema_miss=skip_unknown_tables) as reader:
        for change in reader.changes():
            _, value = encoder.encode(change, str(path), 0)
            value_schema = encoder.table(change.table).value_schema
            payloads.append(frame(SCHEMA_ID, parse_schema(value_schema), value))
    return assert_same(records(payloads), {SCHEMA_ID: value_schema})


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> tuple[list[dict], list[dict]]:
    tmp = tmp_path_factory.mktemp("read_repair")
    return log_rows(ORIGINAL, "node-1", tmp), log_rows(REPAIR, "node-3", tmp)


def key_of(row: dict) -> int:
    return json.loads(row["key"])["k"]


def test_the_writes_themselves_are_each_one_write(logged):
    original, _ = logged
    assert [(key_of(r), r["cdc$operation"]) for r in original] == [
        (1, R.ROW_INSERT), (2, R.ROW_INSERT), (2, R.ROW_UPDATE), (3, R.ROW_INSERT), (3, R.ROW_INSERT),
        (4, R.PARTITION_DELETE), (5, R.ROW_UPDATE), (5, R.ROW_UPDATE), (6, R.ROW_UPDATE), (6, R.ROW_UPDATE),
        (7, R.ROW_UPDATE), (9, R.ROW_UPDATE), (9, R.ROW_UPDATE)]


def test_a_repair_of_one_missed_write_is_a_copy_of_it(logged):
    original, repair = logged
    identity = {(r["change_id"], r["cdc$time"], r["cdc$batch_seq_no"]): r for r in original}
    copies = [r for r in repair if (r["change_id"], r["cdc$time"], r["cdc$batch_seq_no"]) in identity]
    assert sorted(key_of(r) for r in copies) == [1, 3, 3, 4, 7, 9]
    # k=9's repair is its newest write, which overwrote the first.
    assert [identity[(r["change_id"], r["cdc$time"], r["cdc$batch_seq_no"])]["write_time_us"]
            for r in copies if key_of(r) == 9] == [2000]


def test_a_repair_merging_several_writes_of_a_row_is_the_row_as_read(logged):
    original, repair = logged
    restated = [r for r in repair if r["change_id"] not in {o["change_id"] for o in original}]
    assert [(key_of(r), r["cdc$operation"], r["write_time_us"]) for r in restated] == [
        (2, R.ROW_READ, 2000), (5, R.ROW_READ, 2000), (6, R.ROW_READ, 2000)]
    # Its values are the row's as the read returned it.
    assert dict(restated[0]["columns"]) == {"a": "21", "b": '"y"'}
    assert R.ROW_READ not in {r["cdc$operation"] for r in original}
