"""ringtail's native core (Rust, the cargo workspace in Cargo.toml): the connector's half reads commit-log
segments into change events (`Segment`, `Decoder`), Spark's half reads events back into CDC log rows
(`EventDecoder`, `ReplicaCopies`) and a snapshot's result rows into them (`SnapshotRows`). The reference for
every value here is the Python code named beside it; `tests/unit/test_native_stub.py` holds this stub to the
module."""
from __future__ import annotations

from typing import Protocol, TypeAlias

# -- the connector's half (connector/native, `connector.native_source`, `connector.native_core`) --------

# `schemas.cql.tree.type_tree`: ("native", Kind's name, bits, counter, time_ordered, ascii)
# | ("list" | "set", element, multi_cell) | ("map", key, value, multi_cell) | ("tuple", [types])
# | ("udt", [field names], [types], multi_cell) | ("vector", element, dimension)
CqlTypeTree: TypeAlias = tuple


class ColumnSpecLike(Protocol):
    """`connector.native_core.ColumnSpec`, read by attribute."""

    name: str
    cql: CqlTypeTree
    live: bool


class TableSpecLike(Protocol):
    """`connector.native_core.TableSpec`, read by attribute."""

    id: bytes
    keyspace: str
    name: str
    key_schema_id: int
    value_schema_id: int
    partition_key: list[CqlTypeTree]
    clustering: list[CqlTypeTree]
    columns: list[ColumnSpecLike]
    mode: int  # `connector.native_core.Mode`


class SourceLike(Protocol):
    """`schemas.avro.table.SourceInfo`, read by attribute."""

    version: str
    name: str
    cluster: str
    node: str


class Segment:
    """A commit log segment mapped read-only, its descriptor verified (`connector.commitlog.reader`)."""

    def __init__(self, path: str) -> None: ...
    @property
    def segment_id(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def messaging_version(self) -> int: ...
    @property
    def header_length(self) -> int: ...
    @property
    def parameters(self) -> str:
        """The descriptor's parameters, as the JSON text written."""
    @property
    def compression(self) -> str | None: ...
    @property
    def size(self) -> int: ...
    def sections(self, limit: int | None = None) -> list[tuple[int, int, int]]:
        """(marker, start, end) of each section up to `limit`, the `_cdc.idx` offset."""
    def entries(self, limit: int | None = None, start: int | None = None) -> Entries:
        """The entries of the sections up to `limit` from logical position `start`."""
    def events(self, decoder: Decoder, file: str, ts_ms: int, limit: int | None = None, start: int | None = None,
               max_events: int | None = None, skip: int | None = None) -> Pass:
        """One pass over the entries, the GIL released."""


class Entries:
    """What one read of `Segment.entries` found."""

    @property
    def entries(self) -> list[tuple[int, bytes]]:
        """Each entry as (logical offset, mutation bytes)."""
    @property
    def end(self) -> int:
        """The logical end of the last section read."""
    @property
    def end_of_segment(self) -> bool:
        """Whether a zero entry size ended the segment."""
    @property
    def error(self) -> Exception | None:
        """The damage that ended the read, as `connector.commitlog.errors` names it, after the entries before it."""


class Events:
    """Events in log order, a column per field (`connector.batch.Batch` takes the columns as they are)."""

    @property
    def offsets(self) -> list[int]:
        """The offset of the entry holding each change."""
    @property
    def tables(self) -> list[int]:
        """The table of each change, by its place in the decoder's tables."""
    @property
    def updates(self) -> list[int]: ...
    @property
    def rows(self) -> list[int]: ...
    @property
    def write_times(self) -> list[int]: ...
    @property
    def keys(self) -> list[bytes]: ...
    @property
    def values(self) -> list[bytes]: ...
    def __len__(self) -> int: ...


class Pass:
    """What one pass of `Segment.events` read."""

    @property
    def events(self) -> Events: ...
    @property
    def end(self) -> int:
        """The logical end of the last section read completely."""
    @property
    def end_of_segment(self) -> bool:
        """Whether a zero entry size ended the segment."""
    @property
    def resume(self) -> int | None:
        """The offset of the first entry not read when `max_events` stopped the pass early."""
    @property
    def error(self) -> Exception | None:
        """The error that ended the pass (damage, an unknown table, a schema that does not fit), as the
        reference reader's exception, returned after the events before it."""
    @property
    def hand_off(self) -> tuple[int, bytes] | None:
        """(offset, mutation bytes) of an entry holding a change of a table the decoder hands off."""
    @property
    def skipped(self) -> int:
        """Changes of tables the decoder skips."""


class Decoder:
    """The mutations of one schema version into changes, or straight into framed events."""

    def __init__(self, tables: list[TableSpecLike], messaging_version: int, source: SourceLike) -> None: ...
    def changes(self, mutation: bytes, segment: str, entry_offset: int) -> Changes:
        """The changes of the mutation in the entry at `entry_offset` of `segment`."""
    def events(self, mutation: bytes, segment: str, segment_id: int, entry_offset: int, file: str, ts_ms: int
               ) -> Events:
        """The events of the mutation's changes to the tables that emit them; raises UnknownTable or
        SchemaMismatch with the entry's position."""


class Changes:
    """What `Decoder.changes` decoded of one entry."""

    @property
    def changes(self) -> list[RawChange]: ...
    @property
    def bare_keys(self) -> list[BareUpdate]:
        """The updates that hold no change, whose keys the reference reader decodes all the same."""
    @property
    def miss(self) -> Exception | None:
        """The entry's UnknownTable or SchemaMismatch, for the caller to raise once it has decoded the
        values before it."""


class BareUpdate:
    """A partition update that holds no change."""

    @property
    def table(self) -> int: ...
    @property
    def update_index(self) -> int: ...
    @property
    def key(self) -> bytes: ...


class RawChange:
    """One change, its values still raw bytes (`connector.native_changes` decodes them)."""

    @property
    def table(self) -> int: ...
    @property
    def update_index(self) -> int: ...
    @property
    def row_index(self) -> int: ...
    @property
    def op(self) -> str: ...
    @property
    def partition_key(self) -> bytes: ...
    @property
    def clustering(self) -> tuple[bytes | None, ...]: ...
    @property
    def liveness(self) -> tuple[int, int, int | None] | None:
        """(timestamp, ttl, expires at when the ttl is set)."""
    @property
    def deletion(self) -> tuple[int, int] | None:
        """(marked for delete at, local deletion time)."""
    @property
    def shadowable(self) -> bool: ...
    @property
    def is_static(self) -> bool: ...
    @property
    def range_start(self) -> tuple[tuple[bytes | None, ...], bool] | None:
        """(clustering values, inclusive) of a range deletion's start."""
    @property
    def range_end(self) -> tuple[tuple[bytes | None, ...], bool] | None: ...
    @property
    def columns(self) -> list[RawColumn]: ...


class RawColumn:
    """One column of a change: its number among the table's columns, its cells (one unless multi-cell)."""

    @property
    def index(self) -> int: ...
    @property
    def multi_cell(self) -> bool: ...
    @property
    def deletion(self) -> tuple[int, int] | None:
        """(marked for delete at, local deletion time) of a multi-cell column's deletion."""
    @property
    def cells(self) -> list[RawCell]: ...


class RawCell:
    @property
    def timestamp(self) -> int: ...
    @property
    def ttl(self) -> int: ...
    @property
    def local_deletion_time(self) -> int | None: ...
    @property
    def tombstone(self) -> bool: ...
    @property
    def path(self) -> bytes | None:
        """The element's key in a multi-cell column."""
    @property
    def value(self) -> bytes: ...


# -- Spark's half (spark/native, `spark.delivery.native_events`, `spark.snapshot.rows`) --------------------------------

# (validity address or 0, offsets address or 0, data address, data size, offset, length) of an Arrow column
ColumnAddress: TypeAlias = tuple[int, int, int, int, int, int]


class AvroFramer:
    """Values in the log's JSON forms as datums of a registered schema, in Confluent's wire format: fastavro's bytes
    for the datums `schemas.avro.json_values` makes of them (`spark.sinks.kafka.images`)."""

    def __init__(self, schema_id: int, schema: str) -> None:
        """`schema`: its JSON text; ValueError for one the decoder cannot read (records, arrays, maps, nullable
        unions and primitive types only)."""
    def frame(self, value: object) -> bytes:
        """The magic byte, the schema id, then `value`'s datum; ValueError naming where a value does not fit."""


class EventDecoder:
    """A Kafka batch's Confluent-framed Avro values → the `DECODED` columns' Arrow buffers."""

    def __init__(self, cells: bool = False) -> None: ...
    def add_schema(self, schema_id: int, text: str) -> None:
        """A writer schema, by its registry id."""
    def missing(self, values: ColumnAddress) -> list[int]:
        """Schema ids of the batch's framed values not given yet."""
    def decode(self, columns: tuple[ColumnAddress, ColumnAddress, ColumnAddress, ColumnAddress, ColumnAddress,
                                    ColumnAddress], unknown: dict[int, str], copies: ReplicaCopies | None = None
               ) -> dict[str, object]:
        """The buffers of the `DECODED` columns by name (topic, partition, offset, timestamp, key and value
        columns in); with `copies`, without the records whose change the task has decoded already."""


class ReplicaCopies:
    """The changes one task has decoded, so that it skips the other replicas' copies of them."""

    def __init__(self) -> None: ...
    @property
    def skipped(self) -> int:
        """Records skipped as copies so far."""


class SnapshotRows:
    """One table's snapshot statement, compiled once (`spark.snapshot.rows.TableRows`): a page's rows section →
    the columns of its log rows that differ from row to row."""

    def __init__(self, keyspace: str, table: str, partition_key: list[tuple[str, CqlTypeTree, str]],
                 clustering: list[tuple[str, CqlTypeTree, str]],
                 cells: list[tuple[str, CqlTypeTree, str, bool, bool]]) -> None:
        """Each column as (name, CQL type, Avro schema of its values as JSON); a cell also with whether its newest
        write time and its TTL follow it in the statement."""
    def read(self, section: bytes, version_us: int) -> dict[str, object]:
        """The buffers of `rows`, `token`, `partition_key`, `key`, `columns`, `cdc$ttl`, `write_time_us`,
        `change_id` and `cdc$time`, as `EventDecoder.decode` gives columns; ValueError naming the row and column
        of a value that does not fit its type."""


class MirrorRules:
    """A mirror's merge rules for one table layout (`spark.mirror.native`)."""

    def __init__(self, partition_key: list[str], clustering: list[str],
                 columns: list[tuple[str, str, bool, bool, str, list[str]]], dropped: list[tuple[str, int]]) -> None:
        """The key columns' names; each non-key column as (name, storage, static, element keys stored as strings,
        element order: text, integer, timeuuid or other, a UDT's fields), in the layout's order; each dropped
        column with when (µs)."""
    def touched(self, cells: str) -> str | None:
        """The row key of the one row a change's cells touch; None: beyond one row, or read by the reference."""
    def merge(self, key: str | None, record: str | None, stored: list[tuple[str, str]], changes: list[str], now: int,
              due: set[str], whole: bool, images: bool = False
              ) -> tuple[list, list[tuple[str, str | None, int | None]], list[tuple[list | None, dict | None]],
                         list[tuple[int, dict, dict | None, dict | None]]] | None:
        """One partition's changes (cells texts, in order) merged into its record and stored row states (texts):
        (the partition key values, each state to write as (row key, text or None, next expiry), each mirror row
        as (clustering values or None for the static-only row, values or None), and with `images` each image as
        (its change's place in `changes`, the row's key, its values before and after or None), in
        `spark.mirror.images`' order); None: the reference merges it."""


class LogInsertValues:
    """A log table's INSERT values made natively from the Cassandra sink's log rows
    (`spark.sinks.cassandra.native`), as `LogRowEncoder.encode` and the driver's `bind` make them."""

    def __init__(self, width: int, keys: list[tuple[str, int, CqlTypeTree]], values: list[tuple[str, int, CqlTypeTree]],
                 deleted: list[tuple[str, int]],
                 elements: list[tuple[str, int, CqlTypeTree | None, list[str] | None]]) -> None:
        """`width`: the log table's columns; each key and data column's name, position and type; each
        `cdc$deleted_X`'s name and position; each `cdc$deleted_elements_X`'s name, position, and its keys' type
        or a UDT's field names."""
    def batches(self, rows: tuple[ColumnAddress, ...], query_id: bytes, limit: int
                ) -> tuple[list[tuple[bytes, bytes, list[int]]], list[int]]:
        """The rows as unlogged BATCH requests of the prepared INSERT `query_id`: for each, its routing key (the
        stream id), the BATCH body's count and statements as the protocol lays them out, and the rows it writes
        (a partition's rows together, at most `limit` bytes of values a request, a row alone may be more); and
        the rows left to the reference.
        `rows`: the stream id, time, batch seq no, operation, ttl, end of batch (int8) and key columns, then
        (offsets, names, texts) of `columns`, (offsets, names) of `deleted_columns`, (offsets, names, texts) of
        `deleted_elements`, and the write time (µs) column."""


# (name, kind, its columns' addresses, how many of the entries after it are its fields): a column of log rows
# made JSON. Kinds, with their columns: "text", "json", "hex" (the column); "integer", "boolean", "time" (its
# values as int64, a time in µs); "json_map" (the map's validity, offsets, keys, values); "text_list" (the
# list's validity, offsets, items); "row" (the struct's validity, then its fields as the entries after it).
JsonFieldSpec: TypeAlias = tuple[str, str, list[ColumnAddress], int]


def json_bytes(value: object) -> bytes | None:
    """`value`'s JSON as `json.JSONEncoder(separators=(",", ":"), allow_nan=False)` writes it; None for a value
    left to that encoder (NaN or an infinity, a str with a lone surrogate, a key not a str, another type)."""


def log_row_texts(fields: list[JsonFieldSpec], len: int) -> tuple[bytes, bytes] | int:
    """Each of `len` rows' JSON text as a text column's (32-bit offsets, data); or the row of the first that
    holds a value's JSON text (a "json" column's, a "json_map"'s value) that is not JSON as `json.loads` reads
    it."""
