"""The ScyllaDB-style CDC log table of a base table: its columns, DDL and the conversion of LOG_ROW rows
into the values of one INSERT.

For a base table ``ks.t`` the log table is ``ks.t_scylla_cdc_log`` (reference section 7):

* metadata: ``"cdc$stream_id" blob`` (partition key), ``"cdc$time" timeuuid``,
  ``"cdc$batch_seq_no" int`` (clustering), ``"cdc$operation" tinyint``, ``"cdc$ttl" bigint``,
  ``"cdc$end_of_batch" boolean``;
* every primary key column of the base table, same name and type;
* every non-key, non-counter column ``X`` (static ones too, not static here): ``X`` with its type,
  frozen when it is a non-frozen collection or UDT, a non-frozen ``list<T>`` becoming
  ``frozen<map<timeuuid, T>>``; ``"cdc$deleted_X" boolean``; and for a multi-cell ``X``
  ``"cdc$deleted_elements_X"``, a ``frozen<set<K>>`` of its element keys (timeuuid for lists,
  smallint field indices for UDTs).

A layout is plain data (picklable), so it can be shipped to Spark executors, which build
the converters from it.
"""
from __future__ import annotations

import dataclasses
import json
import math
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from cassandra.query import UNSET_VALUE

from schemas.cql import ListType, MapType, SetType, UserType, parse_type, type_arguments
from schemas.tables.model import Table, UdtDefinition, UserType as UserTypeDefinition

from .cql_values import Converter, field_indices, type_converter

LOG_SUFFIX = "_scylla_cdc_log"
STREAM_ID = "cdc$stream_id"
TIME = "cdc$time"
BATCH_SEQ_NO = "cdc$batch_seq_no"
OPERATION = "cdc$operation"
TTL = "cdc$ttl"
END_OF_BATCH = "cdc$end_of_batch"
METADATA: tuple[tuple[str, str], ...] = (
    (STREAM_ID, "blob"), (TIME, "timeuuid"), (BATCH_SEQ_NO, "int"), (OPERATION, "tinyint"),
    (TTL, "bigint"), (END_OF_BATCH, "boolean"),
)
DELETED = "cdc$deleted_"
DELETED_ELEMENTS = "cdc$deleted_elements_"
# The columns of a log row that a typed log's row is made from (`LogRowEncoder`, `LogRowValues`,
# `other_columns`, and the change id an error names): what the tasks writing typed logs are given. The times
# and the source, which they never read, took a third of their time to become Python values.
TYPED_FIELDS = ("keyspace", "table", STREAM_ID, TIME, BATCH_SEQ_NO, OPERATION, TTL, END_OF_BATCH, "key", "columns",
                "deleted_columns", "deleted_elements", "write_time_us", "change_id")


def quote(identifier: str) -> str:
    """A CQL identifier, always quoted so case and any character survive."""
    return '"' + identifier.replace('"', '""') + '"'


@dataclass(frozen=True)
class DataColumn:
    """A non-key column ``X`` of the base table as the log table holds it."""

    name: str
    type: str  # X's type in the log table
    elements_type: str | None = None  # type of cdc$deleted_elements_X; None for a single-cell X
    udt_fields: tuple[str, ...] | None = None  # field names when X is a non-frozen UDT

    @property
    def deleted(self) -> str:
        return DELETED + self.name

    @property
    def deleted_elements(self) -> str:
        return DELETED_ELEMENTS + self.name


def data_column(name: str, type_text: str, user_types: Mapping[str, Any], keyspace: str) -> DataColumn:
    """How base column `name` of type `type_text` (as system_schema writes it) is logged."""
    cql = parse_type(type_text, user_types, keyspace)
    if not cql.multi_cell:
        return DataColumn(name, type_text)
    if isinstance(cql, ListType):
        (element,) = type_arguments(type_text)
        return DataColumn(name, f"frozen<map<timeuuid, {element}>>", "frozen<set<timeuuid>>")
    if isinstance(cql, (SetType, MapType)):
        key = type_arguments(type_text)[0]
        return DataColumn(name, f"frozen<{type_text.strip()}>", f"frozen<set<{key}>>")
    if isinstance(cql, UserType):
        return DataColumn(name, f"frozen<{type_text.strip()}>", "frozen<set<smallint>>", tuple(cql.field_names))
    raise TypeError(f"column {name}: no log layout for multi-cell type {type_text}")


@dataclass(frozen=True)
class LogLayout:
    keyspace: str
    base: str  # the base table's name
    key_columns: tuple[tuple[str, str], ...]  # (name, type): partition key, then clustering
    data_columns: tuple[DataColumn, ...]
    user_types: tuple[UdtDefinition, ...] = ()  # the keyspace's UDTs, to parse the types above

    @property
    def table(self) -> str:
        return self.base + LOG_SUFFIX

    @property
    def qualified_table(self) -> str:
        return f"{quote(self.keyspace)}.{quote(self.table)}"

    @property
    def data_names(self) -> frozenset[str]:
        return frozenset(c.name for c in self.data_columns)

    def columns(self) -> dict[str, str]:
        """Every log column and its type, in table order."""
        out = dict(METADATA)
        out.update(self.key_columns)
        for column in self.data_columns:
            out[column.name] = column.type
        for column in self.data_columns:
            out[column.deleted] = "boolean"
        for column in self.data_columns:
            if column.elements_type is not None:
                out[column.deleted_elements] = column.elements_type
        return out

    def create_statement(self, ttl: int = 0) -> str:
        columns = ", ".join(f"{quote(n)} {t}" for n, t in self.columns().items())
        comment = f"CDC log for {self.keyspace}.{self.base}".replace("'", "''")
        options = [f"CLUSTERING ORDER BY ({quote(TIME)} ASC, {quote(BATCH_SEQ_NO)} ASC)", f"comment = '{comment}'"]
        if ttl > 0:
            # As ScyllaDB sets up a log with a TTL: no grace period, time windows of ttl/24 in minutes.
            window = max(1, math.ceil(math.ceil(ttl / 24) / 60))
            options += [
                f"default_time_to_live = {int(ttl)}", "gc_grace_seconds = 0",
                "compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'MINUTES',"
                f" 'compaction_window_size': {window}}}",
            ]
        return (
            f"CREATE TABLE IF NOT EXISTS {self.qualified_table} ({columns},"
            f" PRIMARY KEY (({quote(STREAM_ID)}), {quote(TIME)}, {quote(BATCH_SEQ_NO)}))"
            f" WITH {' AND '.join(options)}"
        )

    def add_statement(self, existing: Iterable[str]) -> str | None:
        """The ALTER TABLE adding the columns `existing` lacks, or None."""
        have = set(existing)
        missing = [(n, t) for n, t in self.columns().items() if n not in have]
        if not missing:
            return None
        added = ", ".join(f"{quote(n)} {t}" for n, t in missing)
        return f"ALTER TABLE {self.qualified_table} ADD IF NOT EXISTS ({added})"

    def insert_statement(self) -> str:
        names = list(self.columns())
        return (
            f"INSERT INTO {self.qualified_table} ({', '.join(map(quote, names))})"
            f" VALUES ({', '.join('?' * len(names))}) USING TIMESTAMP ?"
        )

    @classmethod
    def of_table(cls, table: Table, user_types: Mapping[str, UserTypeDefinition], counters: bool = False
                 ) -> LogLayout:
        """The layout for a base table as system_schema describes it; counters only with `counters`
        (a Cassandra table cannot hold them beside other columns, as ScyllaDB's log does not)."""
        udts = _definitions(user_types)
        by_name = {u.name: u for u in udts}
        keys = tuple((c.name, c.type) for c in (*table.partition_key, *table.clustering))
        data = tuple(
            data_column(c.name, c.type, by_name, table.keyspace)
            for c in sorted((*table.static_columns, *table.regular_columns), key=lambda c: c.name)
            if counters or not parse_type(c.type, by_name, table.keyspace).counter
        )
        return cls(table.keyspace, table.name, keys, data, udts)

    @classmethod
    def of_log_table(cls, keyspace: str, base: str, columns: Mapping[str, str],
                     user_types: Mapping[str, UserTypeDefinition]) -> LogLayout:
        """The layout an existing log table has (for a base table that is gone): its data columns
        are those with a cdc$deleted_ companion, the rest after the metadata are key columns."""
        udts = _definitions(user_types)
        by_name = {u.name: u for u in udts}
        metadata = dict(METADATA)
        names = [n for n in columns if n not in metadata and not n.startswith(DELETED)]
        data = []
        for name in sorted(n for n in names if DELETED + n in columns):
            elements = columns.get(DELETED_ELEMENTS + name)
            fields = None
            if elements is not None:
                cql = parse_type(columns[name], by_name, keyspace)
                fields = tuple(cql.field_names) if isinstance(cql, UserType) else None
            data.append(DataColumn(name, columns[name], elements, fields))
        keys = tuple((n, columns[n]) for n in names if DELETED + n not in columns)
        return cls(keyspace, base, keys, tuple(data), udts)


def typed_log_layout(base: Table | None, user_types: Mapping[str, UserTypeDefinition], existing: LogLayout | None
                     ) -> LogLayout | None:
    """The layout of a typed log (one per base table, counters too): the base table's columns and the
    data columns its `existing` log has that the base table no longer lists (a column dropped since
    keeps taking the values of rows written before the drop); the log's own when the base table is
    gone; None: neither exists."""
    if base is None:
        return existing
    layout = LogLayout.of_table(base, user_types, counters=True)
    if existing is None:
        return layout
    dropped = [c for c in existing.data_columns if c.name not in layout.data_names]
    columns = tuple(sorted((*layout.data_columns, *dropped), key=lambda c: c.name))
    return dataclasses.replace(layout, data_columns=columns)


def _definitions(user_types: Mapping[str, Any]) -> tuple[UdtDefinition, ...]:
    return tuple(
        UdtDefinition(name, tuple(u.field_names), tuple(u.field_types)) for name, u in sorted(user_types.items())
    )


def entries(mapping: Any) -> Iterable[tuple[Any, Any]]:
    """Entries of a map column: a dict (Spark Row) or a list of pairs (Arrow to_pylist)."""
    if mapping is None:
        return ()
    return mapping if isinstance(mapping, list) else mapping.items()  # not typing's Mapping: slow, per row


def other_columns(row: Mapping[str, Any], known: frozenset[str]) -> dict[str, str | None]:
    """A log row's values of the columns `known` lacks (dropped from the base table before its log had
    them), as a typed log keeps them in `cdc$other_columns`: name → the value's JSON text (null: the row
    deleted the column), `cdc$deleted_elements_<name>` → the keys removed."""
    other = {name: text for name, text in entries(row["columns"]) if name not in known}
    other.update((name, None) for name in row["deleted_columns"] or () if name not in known and name not in other)
    other.update((DELETED_ELEMENTS + name, text) for name, text in entries(row["deleted_elements"])
                 if name not in known)
    return other


class LogRowValues:
    """LOG_ROW rows of one base table → the value of each column of its log, as a change event carries a
    value of the column's CQL type (`spark.mirror.values`), for stores that write from those forms
    (PostgreSQL's and MySQL's typed logs): the stream id as `0x…`, a non-frozen list (logged as
    `frozen<map<timeuuid, T>>`) as [timeuuid, value] pairs, a UDT's deleted fields as their indices."""

    def __init__(self, layout: LogLayout) -> None:
        self.layout = layout
        udts = {u.name: u for u in layout.user_types}
        self._maps = {c.name for c in layout.data_columns
                      if isinstance(parse_type(c.type, udts, layout.keyspace), MapType)}
        self._fields = {c.name: {f: i for i, f in enumerate(c.udt_fields)} for c in layout.data_columns
                        if c.udt_fields is not None}
        self._known = layout.data_names

    def values(self, row: Mapping[str, Any]) -> dict[str, Any]:
        stream = row[STREAM_ID]
        out = {STREAM_ID: None if stream is None else "0x" + bytes(stream).hex(), TIME: row[TIME],
               BATCH_SEQ_NO: row[BATCH_SEQ_NO], OPERATION: row[OPERATION], TTL: row[TTL],
               END_OF_BATCH: row[END_OF_BATCH], **json.loads(row["key"])}
        for name, text in entries(row["columns"]):
            if name in self._known and text is not None:
                value = json.loads(text)
                out[name] = ([[k, v] for k, v in value.items()] if name in self._maps and isinstance(value, dict)
                             else value)
        out.update((DELETED + name, True) for name in row["deleted_columns"] or () if name in self._known)
        for name, text in entries(row["deleted_elements"]):
            if name in self._known and text is not None:
                keys = json.loads(text)
                fields = self._fields.get(name)
                out[DELETED_ELEMENTS + name] = keys if fields is None else [fields[k] for k in keys]
        return out


class UnknownColumn(KeyError):
    pass


class LogRowEncoder:
    """Turns LOG_ROW rows of one base table into the bound values of the layout's INSERT.

    Absent columns are bound UNSET, so a row writes only its own cells and a replay rewrites
    exactly those (with the change's write time as the cell timestamp)."""

    def __init__(self, layout: LogLayout) -> None:
        self.layout = layout
        udts = {u.name: u for u in layout.user_types}
        names = list(layout.columns())
        self.width = len(names)
        self._position = {name: i for i, name in enumerate(names)}
        convert = lambda t: type_converter(t, udts, layout.keyspace)  # noqa: E731
        self._keys: dict[str, tuple[int, Converter]] = {
            name: (self._position[name], convert(t)) for name, t in layout.key_columns
        }
        self._values: dict[str, tuple[int, Converter]] = {}
        self._deleted: dict[str, int] = {}
        self._elements: dict[str, tuple[int, Converter]] = {}
        for column in layout.data_columns:
            self._values[column.name] = (self._position[column.name], convert(column.type))
            self._deleted[column.name] = self._position[column.deleted]
            if column.elements_type is not None:
                elements = (field_indices(column.udt_fields) if column.udt_fields is not None
                            else convert(column.elements_type))
                self._elements[column.name] = (self._position[column.deleted_elements], elements)

    def encode(self, row: Mapping[str, Any], *, skip_unknown: bool = True) -> list[Any]:
        """Values for :meth:`LogLayout.insert_statement`, the write time (µs) last.

        Columns the layout lacks (dropped from the base table before the log had them) are
        skipped, or raise :class:`UnknownColumn` when `skip_unknown` is false."""
        values = [UNSET_VALUE] * (self.width + 1)
        values[0] = row[STREAM_ID]
        if values[0] is None:
            raise ValueError("a log row without a stream id")
        values[0] = bytes(values[0])
        values[1] = uuid.UUID(row[TIME])
        values[2] = row[BATCH_SEQ_NO]
        values[3] = row[OPERATION]
        if row[TTL] is not None:
            values[4] = row[TTL]
        values[5] = row[END_OF_BATCH]
        for name, value in json.loads(row["key"]).items():
            self._set(values, self._keys, name, value, skip_unknown)
        for name, text in entries(row["columns"]):
            self._set(values, self._values, name, None if text is None else json.loads(text), skip_unknown)
        for name in row["deleted_columns"] or ():
            position = self._deleted.get(name)
            if position is not None:
                values[position] = True
            elif not skip_unknown:
                raise UnknownColumn(name)
        for name, text in entries(row["deleted_elements"]):
            self._set(values, self._elements, name, None if text is None else json.loads(text), skip_unknown)
        values[-1] = row["write_time_us"]
        return values

    @staticmethod
    def _set(values: list, columns: Mapping[str, tuple[int, Converter]], name: str, value: Any,
             skip_unknown: bool) -> None:
        target = columns.get(name)
        if target is None:
            if skip_unknown:
                return
            raise UnknownColumn(name)
        if value is not None:  # a null cell is left unset: the log row reads null either way
            values[target[0]] = target[1](value)
