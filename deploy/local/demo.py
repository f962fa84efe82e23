"""The demo: a sample workload into a CDC table of the local stack, then what Cassandra put in cdc_raw.

Run through `deploy/local/demo`, which installs what is missing and starts the stack first.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from decimal import Decimal
from pathlib import Path

from cassandra.concurrent import execute_concurrent_with_args

from connector.commitlog import SegmentReader, skip_unknown_tables
from connector.commitlog.cdc_index import CdcIndex, indexed_segments
from connector.commitlog.render import ChangeRenderer
from connector.schema.loader import read_snapshot
from connector.schema.session import connect

ROOT = Path(__file__).resolve().parents[2]
KEYSPACE = "ringtail_demo"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2000, help="rows to write (default 2000)")
    args = parser.parse_args(argv)

    run_dir = Path(os.environ.get("RINGTAIL_RUN_DIR") or ROOT / ".run")
    stack = json.loads((run_dir / "stack.json").read_text())
    cdc_raw = Path(stack["cassandra"]["cdc_raw"])
    cluster, session = connect([stack["cassandra"]["host"]], stack["cassandra"]["port"])
    try:
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} "
            "WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute(
            f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.orders ("
            " customer int, placed timestamp, item text, quantity int, price decimal,"
            " PRIMARY KEY ((customer), placed)) WITH cdc = true"
        )
        before = indexed_segments(cdc_raw)
        insert = session.prepare(
            f"INSERT INTO {KEYSPACE}.orders (customer, placed, item, quantity, price) VALUES (?, ?, ?, ?, ?)"
        )
        started = time.monotonic()
        step = max(1, args.rows // 10)
        for first in range(0, args.rows, step):
            batch = [
                (i % 97, int(time.time() * 1000) + i, f"item-{i % 13}", 1 + i % 5, Decimal(f"{i % 100}.99"))
                for i in range(first, min(first + step, args.rows))
            ]
            execute_concurrent_with_args(session, insert, batch, concurrency=32, raise_on_first_error=True)
            print(f"  wrote {min(first + step, args.rows):>6}/{args.rows} rows", flush=True)
        took = time.monotonic() - started
        print(f"wrote {args.rows} rows to {KEYSPACE}.orders in {took:.1f}s ({args.rows / took:,.0f} rows/s)")

        # The durable offset moves on the next commit-log sync (at most commitlog_sync_period away).
        deadline = time.monotonic() + 10
        after = indexed_segments(cdc_raw)
        while after == before and time.monotonic() < deadline:
            time.sleep(0.25)
            after = indexed_segments(cdc_raw)
        schema = read_snapshot(session)[1]
    finally:
        cluster.shutdown()

    print(f"\ncdc_raw: {cdc_raw}")
    print(f"  {'segment':34} {'size':>9} {'durable offset':>15}  state")
    for segment, index in sorted(after.items()):
        size = segment.stat().st_size if segment.exists() else 0
        grown = index.offset - (before[segment].offset if segment in before else 0)
        print(f"  {segment.name:34} {size:>9} {index.offset:>15}  {'COMPLETED' if index.completed else 'live'}"
              + (f" (+{grown} bytes from this run)" if grown > 0 else ""))
    if after == before:
        print("no durable offset moved: is the table's cdc flag on?", file=sys.stderr)
        return 1
    decode(after, schema)
    return 0


def decode(durable: dict[Path, CdcIndex], schema) -> None:
    """Decode the durable part of every segment with the reader; show the demo table's changes."""
    renderer = ChangeRenderer(schema)
    skipped: list[str] = []

    def skip_dropped_table(error):
        # Tables dropped since (by earlier runs or tests) are no longer in the schema.
        skip_unknown_tables(error)
        skipped.append(str(error.table_id))

    ours, last = 0, None
    started = time.monotonic()
    for segment, index in sorted(durable.items()):
        if not segment.exists():
            continue
        with SegmentReader(segment, schema, limit=index.offset, on_schema_miss=skip_dropped_table) as reader:
            for change in reader.changes():
                if change.table.keyspace == KEYSPACE and change.table.name == "orders":
                    ours, last = ours + 1, (segment, change)
    took = time.monotonic() - started
    print(f"\ndecoded {ours} changes of {KEYSPACE}.orders from cdc_raw in {took:.2f}s"
          + (f" ({len(skipped)} mutations of dropped tables skipped)" if skipped else ""))
    if last:
        print("the newest, as `python -m connector dump` prints it:")
        print(json.dumps(renderer.render(last[1], str(last[0])), indent=2))


if __name__ == "__main__":
    sys.exit(main())
