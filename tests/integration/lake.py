"""A log sink's Delta table read without Spark, for the probes that wait on a runner: the data files its
transaction log adds and has not removed since, read with pyarrow. A probe through the tests' Spark session
takes seconds of the CPU the runners under test need (and `wait_for` waits three times as long before the
next one); this takes milliseconds. What the tests finally compare is still read by Spark.

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
    """`columns` of the Delta table at `path` (partition columns included), as of its newest commit; no
    rows before its first."""
    log = Path(path) / "_delta_log"
    commits = sorted(p for p in log.iterdir() if _COMMIT.match(p.name)) if log.is_dir() else []
    files: dict[str, dict[str, str]] = {}
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
                files[action["add"]["path"]] = action["add"].get("partitionValues", {})
            elif "remove" in action:
                files.pop(action["remove"]["path"], None)
    parts = []
    for name, partition in files.items():
        file = Path(path) / unquote(name)  # a path in the log is a URI reference
        part = pq.read_table(file, columns=[c for c in columns if c not in partition])
        if any(c in partition for c in columns):
            rows = pq.read_metadata(file).num_rows
            part = pa.table({c: part[c] if c not in partition else pa.array([partition[c]] * rows, pa.string())
                             for c in columns})
        parts.append(part)
    return pa.concat_tables(parts) if parts else pa.table({c: pa.array([], pa.null()) for c in columns})
