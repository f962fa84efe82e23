"""What PostgreSQL's and MySQL's typed logs share: a batch's rows by base table, each table's layout (its
base table's columns and those its log keeps, from the log columns' comments), and a log row's values in
a store's forms."""
from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pyspark.sql import DataFrame

from spark.mirror.tables import Layouts
from spark.mirror.values import StoreColumn, store_values

from .log_table import TIME, LogLayout, LogRowValues, other_columns, typed_log_layout
from .typed_log import OTHER_COLUMNS, TypedLogError

log = logging.getLogger(__name__)
T = TypeVar("T")


def typed_logs(rows: DataFrame, layout_of: Callable[[str, str], LogLayout | None], log_of: Callable[[LogLayout], T]
               ) -> tuple[list[tuple[T, list[dict]]], list[tuple[str, str]]]:
    """The batch's rows on the driver, each base table's with its typed log (`log_of` its layout, made
    ready), and the (keyspace, table)s that have no typed log (dropped before they had one: their rows
    go to the log)."""
    by_table: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows.toLocalIterator():
        by_table[(row.keyspace, row.table)].append(row.asDict())
    logs, untyped = [], []
    for (keyspace, table), table_rows in sorted(by_table.items()):
        layout = layout_of(keyspace, table)
        if layout is None:
            log.warning("%s.%s no longer exists and has no typed log: its rows go to cdc_log", keyspace, table)
            untyped.append((keyspace, table))
        else:
            logs.append((log_of(layout), table_rows))
    return logs, untyped


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
    return store_values(columns, by_name, store, f"{layout.keyspace}.{layout.base}: change {row.get('change_id')}"
                        f" (cdc$time {row.get(TIME)})", TypedLogError)
