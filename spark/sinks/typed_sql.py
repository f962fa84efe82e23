"""What PostgreSQL's and MySQL's typed logs share: each table's layout (its base table's columns and those
its log keeps, from the log columns' comments), made ready on the driver; a task's rows by base table;
and a log row's values in a store's forms."""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from spark.mirror.tables import Layouts
from spark.mirror.values import StoreColumn, store_values

from .contract import of_tables
from .log_table import BATCH_SEQ_NO, STREAM_ID, TIME, LogLayout, LogRowValues, other_columns, typed_log_layout
from .parts import part_digest
from .typed_log import OTHER_COLUMNS, TypedLogError, change_name, typed_source

log = logging.getLogger(__name__)


def typed_layouts(rows: DataFrame, layout_of: Callable[[str, str], LogLayout | None]
                  ) -> tuple[dict[tuple[str, str], LogLayout], list[tuple[str, str]]]:
    """Each base table of the batch's rows with its typed log's layout (`layout_of`, which makes the log
    ready), and the (keyspace, table)s that have none (dropped before they had one: their rows go to the
    log). One small job on the driver; the rows stay on the executors."""
    layouts, untyped = {}, []
    for keyspace, table in sorted((r.keyspace, r.table) for r in rows.select("keyspace", "table").distinct().collect()):
        layout = layout_of(keyspace, table)
        if layout is None:
            log.warning("%s.%s no longer exists and has no typed log: its rows go to cdc_log", keyspace, table)
            untyped.append((keyspace, table))
        else:
            layouts[(keyspace, table)] = layout
    return layouts, untyped


def typed_part_rows(rows: DataFrame, layouts: Mapping[tuple[str, str], LogLayout]) -> DataFrame:
    """The batch's rows of the tables `layouts` names, as the tasks that write them take them (`TypedPart`)."""
    return typed_source(of_tables(rows, layouts))


@dataclass(frozen=True)
class TypedPart:
    """The rows of one partition of a batch, as a task writes them into the typed logs: by base table, and
    the part's name (`parts`)."""

    name: str
    by_table: dict[tuple[str, str], list[dict]]

    @classmethod
    def of(cls, batches: Iterable[pa.RecordBatch]) -> TypedPart | None:
        """None for an empty partition. Its rows are read from the Arrow batches themselves (`to_pylist`),
        without a Spark `Row` per row."""
        listed = [row for batch in batches for row in batch.to_pylist()]
        if not listed:
            return None
        by_table: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for row in listed:
            by_table[(row["keyspace"], row["table"])].append(row)
        # Named by what identifies each row: its table, its key in the log, and its change (whose id is the
        # digest of its content). The `repr` of each whole row took a tenth of a task's time.
        return cls(part_digest(f"{row['keyspace']}\x1f{row['table']}\x1f{row[STREAM_ID]!r}\x1f{row[TIME]}\x1f"
                               f"{row[BATCH_SEQ_NO]}\x1f{row['change_id']}".encode() for row in listed), dict(by_table))

    def tables(self) -> list[tuple[tuple[str, str], list[dict]]]:
        """Each base table's rows, in the order of their names (so a task takes the tables' locks so)."""
        return sorted(self.by_table.items())


def sql_log_layout(tables: Layouts, keyspace: str, table: str, logged: Mapping[str, str]) -> LogLayout | None:
    """The layout of `keyspace.table`'s typed log, whose existing columns have the CQL types `logged`."""
    base, user_types = tables.table(keyspace, table)
    existing = LogLayout.of_log_table(keyspace, table, logged, user_types) if logged else None
    return typed_log_layout(base, user_types, existing)


def typed_row(values: LogRowValues, columns: Sequence[StoreColumn], row: Mapping[str, Any], store: str) -> list[Any]:
    """A LOG_ROW row's values in `store`'s forms, one per column of its typed log (`cdc$other_columns` too)."""
    layout = values.layout
    by_name = values.values(row)
    by_name[OTHER_COLUMNS] = other_columns(row, layout.data_names) or None
    return store_values(columns, by_name, store, change_name(layout, row), TypedLogError)
