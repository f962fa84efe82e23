"""Decode throughput of the commit log reader next to a plain sequential read of the same bytes, and
events/s from segment bytes to framed Avro key and value: the Python reader with the event
contract's writer (TableEncoder, fastavro) beside the native core, on the same segments.

    python bench/decode.py [SEGMENT ...] [--schema FILE.cql] [--seconds S] [--decoder both|native|python]
    python bench/decode.py --rich [--seconds S] [--decoder both|native|python]

Segments given (with the DDL of their tables, e.g. `cqlsh -e "DESCRIBE KEYSPACE ks"`, or a `cdc_raw`
copy of a bench/pipeline.py run), or without any, Cassandra's legacy 4.0.11 test segment with its
Standard1 schema (a simple table). `--rich` measures the mutations a Cassandra 5.0 node wrote for every
CQL type, statics, collections, a UDT, TTLs, cell, row, range and partition deletions and counters (the
repository's test segment and its tables' DDL, data files read here), decoded into events again and again,
without the segment's framing: the rich case. `--decoder` measures one path alone; by default both, side by
side.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from fastavro import parse_schema  # noqa: E402

from connector import native_core  # noqa: E402
from connector.commitlog import SegmentReader, UnknownTable, skip_unknown_tables  # noqa: E402
from connector.commitlog.mutation import MutationDecoder  # noqa: E402
from schemas import _native  # noqa: E402
from schemas.avro import ChangeEncoder  # noqa: E402
from schemas.avro.table import SourceInfo  # noqa: E402
from schemas.avro.wire import frame  # noqa: E402
from schemas.tables import SchemaSnapshot, parse_ddl, parse_ddl_file  # noqa: E402

DATA = REPO_ROOT / "tests" / "unit" / "connector" / "commitlog" / "data"  # segments read as files, not test code
LEGACY_SEGMENT = DATA / "legacy" / "CommitLog-7-1699285478684.log"
RICH_SEGMENT = DATA / "CommitLog-7-1795323511297.log"
RICH_SCHEMA = parse_ddl_file(RICH_SEGMENT.with_suffix(".cql"))
LEGACY_SCHEMA = ('CREATE TABLE "Keyspace1"."Standard1" (key ascii, col ascii, val blob, val0 blob, '
                 'PRIMARY KEY ((key), col)) WITH ID = 657e5210-7cbb-11ee-9858-c9aa1eb53e69;')
MB = 1 << 20


def decode(path: Path, schema: SchemaSnapshot) -> tuple[int, int]:
    """(changes, logical bytes read) of one full pass."""
    # System tables missing from the schema are skipped, not measured.
    with SegmentReader(path, schema, on_schema_miss=skip_unknown_tables) as reader:
        rows = sum(1 for _ in reader.changes())
        return rows, reader.end - reader.descriptor.header_length


SOURCE = SourceInfo("bench", "bench", "bench")


class PythonEvents:
    """The Python path's events: the contract's datums (TableEncoder), fastavro, framing."""

    def __init__(self, schema: SchemaSnapshot) -> None:
        self.encoder = ChangeEncoder(SOURCE, schema)
        self.parsed: dict = {}  # TableEncoder -> its parsed key and value schemas

    def __call__(self, changes, segment: str) -> int:
        events = 0
        for change in changes:
            table = self.encoder.table(change.table)
            if table not in self.parsed:
                self.parsed[table] = parse_schema(table.key_schema), parse_schema(table.value_schema)
            key, value = self.encoder.encode(change, segment, 0)
            frame(1, self.parsed[table][0], key), frame(2, self.parsed[table][1], value)
            events += 1
        return events


def python_events(path: Path, schema: SchemaSnapshot) -> int:
    """Events of one full pass of the Python path: decode, then `PythonEvents`."""
    with SegmentReader(path, schema, on_schema_miss=skip_unknown_tables) as reader:
        return PythonEvents(schema)(reader.changes(), path.name)


def native_events(path: Path, schema: SchemaSnapshot) -> int:
    """Events of one full pass of the native core, decoder made once per pass as for a segment."""
    segment = _native.Segment(path)
    ids = {table_id: (1, 2) for table_id in schema.tables}
    decoder, _ = native_core.decoder(schema, segment.messaging_version, SOURCE, ids)
    events, start, skip = 0, None, None
    while True:
        read = segment.events(decoder, path.name, 0, start=start, skip=skip)
        events, error = events + len(read.events), read.error
        if not isinstance(error, UnknownTable):  # system tables missing from the schema are passed over
            return events
        start = skip = error.position


def sequential_read(path: Path) -> int:
    size = 0
    with open(path, "rb", buffering=0) as file:
        while chunk := file.read(MB):
            size += len(chunk)
    return size


def timed(function, seconds: float) -> tuple[float, int, object]:
    """Run function repeatedly for about `seconds`; (seconds per run, runs, last result)."""
    runs, started = 0, time.perf_counter()
    while True:
        result = function()
        runs += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return elapsed / runs, runs, result


def measure_rich(seconds: float, decoder: str) -> None:
    segment, schema = _native.Segment(RICH_SEGMENT), RICH_SCHEMA
    read = segment.entries()
    assert read.error is None, read.error
    reference = MutationDecoder(schema, RICH_SEGMENT.name, segment.segment_id, segment.messaging_version)
    mutations, changes = [], 0  # the entries holding changes of the segment's tables (not the system tables')
    for offset, mutation in read.entries:
        try:
            changes += len(reference.decode(mutation, offset))
        except UnknownTable:
            continue
        mutations.append((offset, mutation))
    size = sum(len(m) for _, m in mutations)
    print(f"{RICH_SEGMENT.name} (Cassandra 5.0, every CQL type): {len(mutations)} mutations, {size:,} bytes, "
          f"{changes} changes")
    per_python = per_native = None
    if decoder in ("both", "python"):
        events = PythonEvents(schema)

        def python() -> int:
            return events((c for offset, m in mutations for c in reference.decode(m, offset)), RICH_SEGMENT.name)

        per_python, _, count = timed(python, seconds)
        assert count == changes, (count, changes)
        print(f"  events, Python  {count / per_python:12,.0f} events/s  (decode, TableEncoder, fastavro, framing)")
    if decoder in ("both", "native"):
        native, _ = native_core.decoder(schema, segment.messaging_version, SOURCE,
                                        {table_id: (1, 2) for table_id in schema.tables})

        def in_native() -> int:
            return sum(len(native.events(m, RICH_SEGMENT.name, segment.segment_id, offset, RICH_SEGMENT.name, 0))
                       for offset, m in mutations)

        per_native, _, count = timed(in_native, seconds)
        assert count == changes, (count, changes)
        print(f"  events, native  {count / per_native:12,.0f} events/s  (decode, Avro, framing in one call a mutation)")
    if per_python and per_native:
        print(f"  native / Python events: {per_python / per_native:.1f}x")


def measure(path: Path, schema: SchemaSnapshot, seconds: float, decoder: str) -> None:
    per_read, _, size = timed(lambda: sequential_read(path), seconds / 2)
    rows, logical = decode(path, schema)  # the count every path is checked against
    print(f"{path.name}: {size / MB:.1f} MiB file, {logical / MB:.2f} MiB of sections, {rows:,} changes")
    print(f"  sequential read {'':12}         {size / MB / per_read:8.1f} MB/s (I/O floor, whole file)")
    per_python = per_native = None
    if decoder in ("both", "python"):
        per_decode, _, _ = timed(lambda: decode(path, schema), seconds)
        print(f"  decode, Python  {rows / per_decode:12,.0f} rows/s  {logical / MB / per_decode:8.1f} MB/s "
              f"({per_decode / (per_read * logical / size):.0f}x the read time of the same bytes)")
        per_python, _, count = timed(lambda: python_events(path, schema), seconds)
        assert count == rows, (count, rows)
        print(f"  events, Python  {rows / per_python:12,.0f} events/s  (decode, TableEncoder, fastavro, framing)")
    if decoder in ("both", "native"):
        per_native, _, count = timed(lambda: native_events(path, schema), seconds)
        assert count == rows, (count, rows)
        print(f"  events, native  {rows / per_native:12,.0f} events/s  {logical / MB / per_native:8.1f} MB/s "
              "(decode, Avro, framing in one pass)")
    if per_python and per_native:
        print(f"  native / Python events: {per_python / per_native:.1f}x")
    if decoder in ("both", "python"):
        tracemalloc.start()
        decode(path, schema)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"  peak traced Python memory during a Python decode: {peak / MB:.2f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("segments", nargs="*", type=Path)
    parser.add_argument("--schema", help="DDL file for the given segments (default: the legacy Standard1 table)")
    parser.add_argument("--seconds", type=float, default=2.0, help="time spent per measurement")
    parser.add_argument("--decoder", choices=("both", "native", "python"), default="both",
                        help="the path measured: the native core, the Python reference, or both side by side")
    parser.add_argument("--rich", action="store_true", help="measure the mutations of every CQL type of a 5.0 node")
    args = parser.parse_args()
    if args.rich:
        measure_rich(args.seconds, args.decoder)
    else:
        schema = parse_ddl_file(args.schema) if args.schema else parse_ddl(LEGACY_SCHEMA)
        for path in args.segments or [LEGACY_SEGMENT]:
            measure(path, schema, args.seconds, args.decoder)
    print(f"max RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
