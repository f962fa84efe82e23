"""A table's existing rows, read by token range, as log rows with operation `read`.

One statement per table: the token, the primary key, every other column with its newest write
time (`MAXWRITETIME`, Cassandra 5.0) and, for single-cell columns, its TTL. Cassandra 4.x reads the
write time and TTL of single-cell columns only (`WRITETIME`): a non-frozen collection or UDT's elements
take the snapshot version's start as their write time and no TTL — exact for every element written before
that start with an ordinary timestamp; one written `USING TIMESTAMP` later than it may lose, in a mirror,
to a later change Cassandra would not apply; and an element's TTL is not carried. Values arrive as the
bytes Cassandra stores (`raw`) and go through the CQL type layer and the event contract's value
readers, so they are written exactly as the log writes them: same JSON, same key, same partition
key bytes. A page is read whole by the native core (`schemas._native.SnapshotRows`, without a Python object
per row or value) and row by row here (`log_rows`, the reference it is tested against, which a mirror's cells
need). Two differences, both CQL's: a non-frozen list is its values in order (CQL does not
return the elements' timeuuids, which the log uses as keys), and a non-frozen UDT names the fields
that hold a value.

A read row's write time is the newest write time of its cells, so a change the log delivers later
orders after it exactly when Cassandra would apply it later; a row of primary key only has no
readable write time and takes the snapshot version's start.
"""
from __future__ import annotations

import hashlib
import json
import struct
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from schemas.avro.reader import as_is, value_reader
from schemas.avro.types import value_type
from schemas.cql import CqlType, CqlValueError, UserType, maybe_quote, parse_type
from schemas.cql.composite import compose
from schemas.cql.tree import type_tree
from schemas.tables.model import Column, ColumnKind, Table
from spark import rows as R
from spark.delivery.events import log_time
from spark.mirror.layout import LIST, MAP, SET, read_list_key, storage_of
from spark.streams.generations import Generation

from .raw import RowsSection

try:
    from schemas._native import SnapshotRows
except ImportError:  # pages are read in Python, as the reference does
    SnapshotRows = None

_BIGINT = np.dtype(">i8")
DECODED_ARROW = R.arrow_schema(R.DECODED)
_SOURCE = {"node": "snapshot"}
# writetime() and ttl() of a multi-cell column: one per element (Cassandra 5.0), a TTL null without one.
_LONGS, _INTS = parse_type("frozen<list<bigint>>", {}, ""), parse_type("frozen<list<int>>", {}, "")
_NUMBERS: dict[tuple[int, int], struct.Struct] = {}  # (count, width) -> the layout of that many with no null
_NO_TIME = np.iinfo(np.int64).min  # Cassandra's own "no timestamp" (LivenessInfo.NO_TIMESTAMP)
# What the native core reads of each row of a page; the rest is the same for every row, or the stream ids.
_NATIVE_COLUMNS = ("cdc$time", "cdc$ttl", "key", "columns", "write_time_us", "partition_key", "change_id")


def column_json(cql: CqlType, namespace: str) -> Callable[[bytes], Any]:
    """Serialized bytes of `cql` → the JSON-able value a log row holds for it."""
    avro = value_type(cql, namespace)
    convert = avro.convert or (lambda v: v)
    read = value_reader(avro.schema)
    decode = cql.decode_or_empty
    if isinstance(cql, UserType) and cql.multi_cell:
        return lambda raw: {k: v for k, v in read(convert(decode(raw))).items() if v is not None}
    if avro.convert is None and read is as_is:  # the decoded value is the JSON one (numbers, text)
        return decode
    return lambda raw: read(convert(decode(raw)))


# One encoder for every value: `json.dumps` with options builds a new one per call.
_dumps = json.JSONEncoder(ensure_ascii=False).encode


def _json_text(value: Any) -> str:
    """`_dumps(value)`; an int's text directly (the encoder's slow path, and the commonest value)."""
    return str(value) if type(value) is int else _dumps(value)


@dataclass(frozen=True)
class _Cell:
    name: str
    json: Callable[[bytes], Any]
    ttl: bool  # a TTL is selected for it (single-cell columns)
    elements: str | None = None  # a multi-cell column's storage (list, set, map, udt), read cell by cell
    fields: tuple[str, ...] = ()  # a non-frozen UDT's fields
    written: bool = True  # its newest write time is selected (on Cassandra 4.x, a single-cell column's only)
    element_times: bool = False  # each element's write time and TTL are selected (Cassandra 5.0)


class TableRows:
    """How one table's rows are selected by token range and become `DECODED` log rows; with `cells`, each
    with its cells and their write times and TTLs (`cell_changes`), for a mirror."""

    def __init__(self, table: Table, user_types: Mapping[str, Any], cells: bool = False,
                 element_times: bool = True) -> None:
        """`element_times`: Cassandra reads a multi-cell column's write times (5.0; not 4.x)."""
        self.table = table
        self.with_cells = cells
        namespace = f"ringtail.snapshot.{table.keyspace}.{table.name}"

        def typed(c: Column) -> tuple[str, CqlType]:
            return c.name, parse_type(c.type, user_types, table.keyspace)

        def json_of(name: str, cql: CqlType) -> Callable[[bytes], Any]:
            return column_json(cql, f"{namespace}.{name}")

        def native_spec(name: str, cql: CqlType) -> tuple[str, tuple, str]:
            return name, type_tree(cql), json.dumps(value_type(cql, f"{namespace}.{name}").schema)

        partition_key, clustering = [typed(c) for c in table.partition_key], [typed(c) for c in table.clustering]
        stored = [typed(c) for c in table.columns if c.kind in (ColumnKind.STATIC, ColumnKind.REGULAR)]
        self.partition_key = [(name, json_of(name, cql)) for name, cql in partition_key]
        self.clustering = [(name, json_of(name, cql)) for name, cql in clustering]
        self.key_names = [f"{_dumps(name)}: " for name, _ in self.partition_key + self.clustering]  # in its JSON
        self.cells = []
        self.static = frozenset(c.name for c in table.static_columns)
        for name, cql in stored:
            elements = storage_of(cql) if cells and cql.multi_cell else None
            single = not cql.multi_cell and not cql.counter
            self.cells.append(_Cell(name, json_of(name, cql), single, elements, tuple(getattr(cql, "field_names", ())),
                                    written=element_times or single,
                                    element_times=element_times and elements is not None))
        # The native core reads a page whole; a mirror's cells are read in Python.
        self._native = None if cells or SnapshotRows is None else SnapshotRows(
            table.keyspace, table.name, [native_spec(*c) for c in partition_key], [native_spec(*c) for c in clustering],
            [(*native_spec(name, cql), cell.written, cell.ttl) for (name, cql), cell in zip(stored, self.cells)])
        key = ", ".join(maybe_quote(c.name) for c in table.partition_key)
        selected = [f"token({key})", *(maybe_quote(n) for n, _ in self.partition_key),
                    *(maybe_quote(n) for n, _ in self.clustering)]
        newest = "maxwritetime" if element_times else "writetime"
        for cell in self.cells:
            name = maybe_quote(cell.name)
            selected += [name, *([f"{newest}({name})"] if cell.written else []),
                         *([f"ttl({name})"] if cell.ttl else [])]
            if cell.element_times:  # each element's write time and TTL, in element order
                selected += [f"writetime({name})", f"ttl({name})"]
        self.where = f"token({key}) > ? AND token({key}) <= ?"
        self.select = (f"SELECT {', '.join(selected)} FROM {maybe_quote(table.keyspace)}.{maybe_quote(table.name)}"
                       f" WHERE {self.where}")
        # The probe finds where a step of N partitions ends: the first row of each partition.
        self.probe = (f"SELECT token({key}) FROM {maybe_quote(table.keyspace)}.{maybe_quote(table.name)}"
                      f" WHERE {self.where} PER PARTITION LIMIT 1 LIMIT ?")

    def page_rows(self, page: RowsSection, generation: Generation, version_us: int) -> pa.RecordBatch:
        """`DECODED` rows of a page of `select`'s result: read whole by the native core when it is there and
        the rows need no cells, else row by row (`log_rows`, the reference)."""
        if self._native is None:
            return self.log_rows(page.rows, generation, version_us)
        try:
            buffers = self._native.read(page.body, version_us)
        except ValueError as exc:  # a value that does not fit its type, as the CQL type layer says it
            raise CqlValueError(f"{self.table.keyspace}.{self.table.name}: {exc}") from None
        n = buffers["rows"]
        tokens = np.frombuffer(buffers["token"][1], dtype=np.int64)
        return self._batch(n, tokens, generation, {
            name: R.arrow_column(DECODED_ARROW.field(name).type, buffers[name], n) for name in _NATIVE_COLUMNS})

    def log_rows(self, rows: list[tuple], generation: Generation, version_us: int) -> pa.RecordBatch:
        """`DECODED` rows of raw result rows (in `select`'s column order), with stream ids of `generation`; made
        column by column (a snapshot's cost is this Python per row)."""
        n = len(rows)
        if not n:
            return pa.RecordBatch.from_pylist([], schema=DECODED_ARROW)
        t = self.table
        selected = list(zip(*rows))  # one tuple per selected column
        tokens = np.frombuffer(b"".join(selected[0]), dtype=_BIGINT).astype(np.int64)
        keys, clusterings, partition_keys = self._keys(selected)
        texts, held, newest, ttls, read_cells = self._columns(selected, n)
        written_us = np.where(newest == _NO_TIME, version_us, newest).tolist()
        # The change's content, as the log digests it: the key, the write time, then each cell held as name=JSON.
        head = f"read\x1f{t.keyspace}\x1f{t.name}\x1f"
        named = [["" if text is None else f"\x1f{cell.name}={text}" for text in column]
                 for cell, column in zip(self.cells, texts)]
        contents = map("".join, zip([head + k + "\x1f" for k in keys], map(str, written_us), *named))
        digests = [hashlib.blake2b(pk + content.encode(), digest_size=16).digest()
                   for pk, content in zip(partition_keys, contents)]
        cells = None
        if self.with_cells:
            now = time.time_ns() // 1_000_000_000
            cells = [self._cells(list(c), read, now, version_us) for c, read in zip(clusterings, read_cells)]
        return self._batch(n, tokens, generation, {
            "cdc$time": list(map(log_time, written_us, digests)), "cdc$ttl": pa.array(ttls, mask=ttls < 0),
            "key": keys, "columns": self._column_map(texts, held), "write_time_us": pa.array(written_us, pa.int64()),
            "partition_key": partition_keys, "change_id": [d.hex() for d in digests], "cells": cells})

    def _batch(self, n: int, tokens: np.ndarray, generation: Generation, varying: Mapping[str, Any]
               ) -> pa.RecordBatch:
        """A `DECODED` batch of `n` read rows: the columns `varying` from row to row (`write_time_us` an Arrow
        array), the stream ids of their `tokens` in `generation`, and what every read row holds alike."""
        t = self.table
        alike = {"keyspace": t.keyspace, "table": t.name, "cdc$batch_seq_no": 0, "cdc$operation": R.ROW_READ,
                 "cdc$end_of_batch": True, "generation": generation.timestamp, "kafka_time": time.time_ns() // 1000,
                 "source": _SOURCE}
        empty_offsets = pa.array(np.zeros(n + 1, dtype=np.int32))  # pa.repeat of an empty list is slow
        return _columns_batch(n, {
            **{name: pa.repeat(pa.scalar(value, DECODED_ARROW.field(name).type), n) for name, value in alike.items()},
            "deleted_columns": pa.ListArray.from_arrays(empty_offsets, pa.array([], pa.string())),
            "deleted_elements": pa.MapArray.from_arrays(empty_offsets, pa.array([], pa.string()),
                                                        pa.array([], pa.string())),
            **varying, "cdc$stream_id": R.stream_id_column(generation.streams_for_tokens(tokens)), "token": tokens,
            "write_time": varying["write_time_us"].cast(DECODED_ARROW.field("write_time").type)})

    def _keys(self, selected: list[tuple]) -> tuple[list[str], list[tuple], list[bytes]]:
        """Each row's key JSON text (as `_dumps` of the key's dict writes it), clustering values and serialized
        partition key, from the selected columns."""
        n_pk, n_ck = len(self.partition_key), len(self.clustering)
        values = [[None if raw is None else read(raw) for raw in column]
                  for (_, read), column in zip(self.partition_key + self.clustering, selected[1:1 + n_pk + n_ck])]
        parts = [[None if raw is None else named + _json_text(value) for raw, value in zip(column, column_values)]
                 for named, column, column_values in zip(self.key_names, selected[1:], values)]
        keys = ["{" + ", ".join(p for p in row if p is not None) + "}" for row in zip(*parts)]
        clusterings = list(zip(*values[n_pk:])) if n_ck else [()] * len(keys)
        pk_raw = selected[1:1 + n_pk]
        return keys, clusterings, list(pk_raw[0]) if n_pk == 1 else [compose(list(raw)) for raw in zip(*pk_raw)]

    def _columns(self, selected: list[tuple], n: int
                 ) -> tuple[list[list], np.ndarray, np.ndarray, np.ndarray, list[list] | None]:
        """Of each cell column, its JSON texts (None where the row holds no value) and whether each row holds one
        (rows × cells); each row's newest write time of the cells it holds (`_NO_TIME`: none) and largest TTL
        (-1: none); and, with `cells`, what `_cells` reads of them."""
        texts, held = [], []
        newest, ttls = np.full(n, _NO_TIME, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        read_cells = [[] for _ in range(n)] if self.with_cells else None
        p = 1 + len(self.partition_key) + len(self.clustering)
        for cell in self.cells:
            raws, p = selected[p], p + 1
            written = ttl = element_times = element_ttls = None
            if cell.written:
                written, p = selected[p], p + 1
            if cell.ttl:
                ttl, p = selected[p], p + 1
            if cell.element_times:
                element_times, element_ttls, p = selected[p], selected[p + 1], p + 2
            present = np.fromiter((raw is not None for raw in raws), dtype=bool, count=n)
            values = [None if raw is None else cell.json(raw) for raw in raws]
            texts.append([None if raw is None else _json_text(value) for raw, value in zip(raws, values)])
            held.append(present)
            if written is not None:
                np.maximum(newest, np.where(present, _integers(written, 8, _NO_TIME), _NO_TIME), out=newest)
            if ttl is not None:
                np.maximum(ttls, np.where(present, _integers(ttl, 4, -1), -1), out=ttls)
            if read_cells is not None:
                for i in np.flatnonzero(present).tolist():
                    if cell.element_times:
                        read_cells[i].append((cell, values[i], _numbers(element_times[i], _LONGS),
                                              _numbers(element_ttls[i], _INTS)))
                    else:
                        read_cells[i].append((cell, values[i], None if written is None else written[i],
                                              None if ttl is None else ttl[i]))
        return texts, np.stack(held, axis=1) if held else np.zeros((n, 0), dtype=bool), newest, ttls, read_cells

    def _column_map(self, texts: list[list], held: np.ndarray) -> pa.MapArray:
        """The `columns` map of each row: the cells it holds, name → JSON text, in the table's column order; built
        from flat arrays, row by row (`held` is rows × cells)."""
        n, width = held.shape
        offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(held.sum(axis=1), out=offsets[1:])
        names = np.array([cell.name for cell in self.cells], dtype=object)
        matrix = np.empty((n, width), dtype=object)
        for c, column in enumerate(texts):
            matrix[:, c] = column
        keys = np.broadcast_to(names, held.shape)[held]
        return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(keys, pa.string()),
                                       pa.array(matrix[held], pa.string()), type=DECODED_ARROW.field("columns").type)

    def _cells(self, clustering: list, read: list[tuple], now: int, version_us: int) -> str:
        """A read row as the change a mirror merges (`spark.delivery.events.cell_changes`): each cell with its write
        time and TTL (expiring `now` + TTL), a partition of static values only as its static row. CQL reads
        no row marker: a row is taken as written by INSERT at its oldest cell's write time (the version's
        time without cells), expiring with its last cell when all of them expire; nor a list element's
        timeuuid: the elements get keys in list order, from 2010-01-01, between what later prepends and
        appends write."""
        static_only = bool(self.clustering) and all(v is None for v in clustering)
        cells, times, expiring = {}, [], []
        for cell, value, written, ttl in read:
            if static_only and cell.name not in self.static:
                continue
            if cell.elements is None:
                wt = int.from_bytes(written, "big", signed=True)
                left = 0 if ttl is None else int.from_bytes(ttl, "big", signed=True)
                cells[cell.name] = [wt, left, now + left if left else None, 0, value]
                element_cells = [(wt, left)]
            else:
                # One write time per element; a UDT's has one per field, null where it has no cell. Without
                # them (Cassandra 4.x) each element that holds a value takes the version's start.
                elements = _elements(cell, value)
                if not cell.element_times:
                    written, ttl = [None if cell.fields and v is None else version_us
                                    for _, v in elements], [None] * len(elements)
                element_cells = [(kv, wt, left or 0) for kv, wt, left in zip(elements, written, ttl)
                                 if wt is not None]
                cells[cell.name] = [None, [[k, wt, left, now + left if left else None, 0, v]
                                           for (k, v), wt, left in element_cells]]
                element_cells = [(wt, left) for _, wt, left in element_cells]
            if cell.name not in self.static:
                times += [wt for wt, _ in element_cells]
                expiring += [left for _, left in element_cells]
        if static_only:
            return _dumps({"k": None, "s": True, "l": None, "d": None, "c": cells})
        ttl = max(expiring) if expiring and all(expiring) else 0
        liveness = [min(times, default=version_us), ttl, now + ttl if ttl else None]
        return _dumps({"k": clustering, "s": False, "l": liveness, "d": None, "c": cells})


def _numbers(raw: bytes, cql: CqlType) -> list[int | None]:
    """A frozen list of bigint or int (`_LONGS`, `_INTS`): its fixed layout unpacked at once when no element is
    null, a list of nulls when every one is (no TTL anywhere), else through the CQL type layer."""
    count = int.from_bytes(raw[:4], "big", signed=True)
    width = 8 if cql is _LONGS else 4
    if len(raw) == 4 + 4 * count and raw[4:] == b"\xff\xff\xff\xff" * count:
        return [None] * count
    if len(raw) == 4 + (4 + width) * count and count > 0:
        layout = _NUMBERS.get((count, width))
        if layout is None:
            layout = _NUMBERS.setdefault((count, width), struct.Struct(">" + ("iq" if width == 8 else "ii") * count))
        fields = layout.unpack_from(raw, 4)
        if all(size == width for size in fields[::2]):
            return list(fields[1::2])
    return cql.decode(raw)


def _integers(raws: tuple, width: int, null: int) -> np.ndarray:
    """Selected bigints (`width` 8) or ints (4), `null` where None, at once from their joined bytes."""
    joined = b"".join(null.to_bytes(width, "big", signed=True) if raw is None else raw for raw in raws)
    if len(joined) != width * len(raws):
        odd = next(raw for raw in raws if raw is not None and len(raw) != width)
        raise ValueError(f"a selected write time or TTL is not {width} bytes: {odd!r}")
    return np.frombuffer(joined, dtype=np.dtype(f">i{width}")).astype(np.int64)


def _columns_batch(n: int, columns: Mapping[str, Any]) -> pa.RecordBatch:
    """A `DECODED` batch of `n` rows of these columns' values (a column not given, or None, is null)."""
    arrays = []
    for field in DECODED_ARROW:
        values = columns.get(field.name)
        arrays.append(pa.nulls(n, field.type) if values is None else
                      values if isinstance(values, pa.Array) else pa.array(values, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=DECODED_ARROW)


def _elements(cell: _Cell, value: Any) -> list[tuple[Any, Any]]:
    """A multi-cell column's read value as (element key, element value), in element order; a UDT's every
    field."""
    if cell.elements == LIST:
        return [(read_list_key(i), v) for i, v in enumerate(value)]
    if cell.elements == SET:
        return [(e, None) for e in value]
    if cell.elements == MAP:
        return [(k, v) for k, v in value]
    return [(name, value.get(name)) for name in cell.fields]


def paged(session: Any, statement: Any, values: tuple, fetch_size: int) -> Iterator[RowsSection]:
    """The pages of a statement's result on a raw-rows session whose row factory is `raw.RAW_PAGES`, each its rows
    section; the next page is asked for before the current one is handed on, so Cassandra reads it while the
    caller converts this one."""
    statement.fetch_size = fetch_size
    pending = session.execute_async(statement, values)
    while pending is not None:
        result = pending.result()
        page = result.current_rows
        paging_state = result.paging_state
        pending = None if paging_state is None else session.execute_async(statement, values,
                                                                          paging_state=paging_state)
        if page:
            yield page.take()
