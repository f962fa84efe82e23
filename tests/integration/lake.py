"""A log sink's Delta table read without Spark, for the probes that wait on a runner: the data files its
transaction log adds and has not removed since, read with pyarrow. A probe through the tests' Spark session
takes seconds of the CPU the runners under test need (and `wait_for` waits three times as long before the
next one); this takes milliseconds. It serves the probes, and the counts of which keys a sink holds; a log
compared value for value with the table is still read by Spark.

Only the tables the log sinks write (appends, partitioned by keyspace and table) are read: one with column
mapping or deletion vectors would be misread, and is refused."""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

_COMMIT = re.compile(r"^\d{20}\.json$")


class UnreadableTable(Exception):
    """A Delta table with a feature this reader does not follow."""


def delta_log(path: Path, columns: list[str]) -> pa.Table:
    """`columns` of the Delta table at `path` (columns its data files hold: not the partition columns), as
    of its newest commit; no rows before its first."""
    log = Path(path) / "_delta_log"
    commits = sorted(p for p in log.iterdir() if _COMMIT.match(p.name)) if log.is_dir() else []
    files: set[str] = set()
    for commit in commits:
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "metaData" in action:
                mapping = action["metaData"].get("configuration", {}).get("delta.columnMapping.mode", "none")
                if mapping != "none":
                    raise UnreadableTable(f"{path}: column mapping {mapping!r}")
            elif "add" in action:
                if action["add"].get("deletionVector"):
                    raise UnreadableTable(f"{path}: deletion vectors in {commit.name}")
                files.add(action["add"]["path"])
            elif "remove" in action:
                files.discard(action["remove"]["path"])
    # A path in the log is a URI reference.
    parts = [pq.read_table(Path(path) / unquote(name), columns=columns) for name in sorted(files)]
    return pa.concat_tables(parts) if parts else pa.table({c: pa.array([], pa.null()) for c in columns})
