"""Decode throughput of the commit log reader next to a plain sequential read of the same bytes.

    python bench/decode.py [SEGMENT ...] [--schema FILE.cql] [--synthetic ROWS] [--seconds S]

Without segments it decodes Cassandra's legacy 4.0.11 test segment (with its Standard1
schema). --synthetic ROWS also writes a segment of ROWS single-row inserts with three
simple cells each, the typical CQL INSERT, and measures it too.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from connector.commitlog import SegmentReader, skip_unknown_tables  # noqa: E402
from connector.schema import SchemaSnapshot, parse_ddl, parse_ddl_file  # noqa: E402

LEGACY_SEGMENT = REPO_ROOT / "tests" / "unit" / "commitlog" / "data" / "legacy" / "CommitLog-7-1699285478684.log"
LEGACY_SCHEMA = ('CREATE TABLE "Keyspace1"."Standard1" (key ascii, col ascii, val blob, val0 blob, '
                 'PRIMARY KEY ((key), col)) WITH ID = 657e5210-7cbb-11ee-9858-c9aa1eb53e69;')
SYNTHETIC_ID = uuid.UUID("b3a1c0de-0000-11ee-8000-000000000001")
SYNTHETIC_SCHEMA = (f"CREATE TABLE bench.rows (k bigint, c int, a int, b text, d timestamp, PRIMARY KEY (k, c)) "
                    f"WITH ID = {SYNTHETIC_ID};")
MB = 1 << 20


def decode(path: Path, schema: SchemaSnapshot) -> tuple[int, int]:
    """(changes, logical bytes read) of one full pass."""
    # System tables missing from the schema are skipped, not measured.
    with SegmentReader(path, schema, on_schema_miss=skip_unknown_tables) as reader:
        rows = sum(1 for _ in reader.changes())
        return rows, reader.end - reader.descriptor.header_length


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


def synthetic_segment(rows: int, directory: Path) -> Path:
    """A segment of `rows` single-row inserts: bigint key, int clustering, int/text/timestamp cells."""
    from tests.unit.commitlog.segment_builder import (cell, clustering, mutation, partition_update, row,
                                                      segment)

    ts = 1_700_000_000_000_000
    mutations = []
    for i in range(rows):
        cells = (cell(i.to_bytes(4, "big", signed=True), fixed=True) + cell(b"value %d" % i)
                 + cell((ts // 1000 + i).to_bytes(8, "big"), fixed=True))
        body = row(clustering((i % 100).to_bytes(4, "big"), fixed=(True,)), cells, timestamp=ts + i,
                   min_timestamp=ts + i)
        mutations.append(mutation(partition_update(SYNTHETIC_ID, (i // 10).to_bytes(8, "big"), body,
                                                   regulars=("a", "b", "d"), min_timestamp=ts + i, rows=1)))
    segment_id = 1_700_000_000_123
    path = directory / f"CommitLog-7-{segment_id}.log"
    path.write_bytes(segment(segment_id, [mutations[i:i + 200] for i in range(0, rows, 200)]))
    return path


def measure(path: Path, schema: SchemaSnapshot, seconds: float) -> None:
    per_decode, runs, (rows, logical) = timed(lambda: decode(path, schema), seconds)
    per_read, _, size = timed(lambda: sequential_read(path), seconds / 2)
    tracemalloc.start()
    decode(path, schema)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{path.name}: {size / MB:.1f} MiB file, {logical / MB:.2f} MiB of sections, {rows} changes, {runs} runs")
    print(f"  decode          {rows / per_decode:12,.0f} rows/s  {logical / MB / per_decode:8.1f} MB/s")
    print(f"  sequential read {'':12}         {size / MB / per_read:8.1f} MB/s (I/O floor, whole file)")
    print(f"  decode time / read time of the same bytes: {per_decode / (per_read * logical / size):.1f}x")
    print(f"  peak traced Python memory during a decode: {peak / MB:.2f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("segments", nargs="*", type=Path)
    parser.add_argument("--schema", help="DDL file for the given segments (default: the legacy Standard1 table)")
    parser.add_argument("--synthetic", type=int, metavar="ROWS", help="also measure a generated segment")
    parser.add_argument("--seconds", type=float, default=2.0, help="time spent per measurement")
    args = parser.parse_args()
    schema = parse_ddl_file(args.schema) if args.schema else parse_ddl(LEGACY_SCHEMA)
    segments = args.segments or ([] if args.synthetic else [LEGACY_SEGMENT])
    for path in segments:
        measure(path, schema, args.seconds)
    if args.synthetic:
        with tempfile.TemporaryDirectory() as directory:
            measure(synthetic_segment(args.synthetic, Path(directory)), parse_ddl(SYNTHETIC_SCHEMA), args.seconds)
    print(f"max RSS of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
