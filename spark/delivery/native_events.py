"""Kafka records → `DECODED` rows with the native core (`schemas._native.EventDecoder`, the Rust
crate's `events` modules): the Arrow buffers of Spark's batch go in by address and the columns come
back as buffers, without a Python object per row or value. `spark.delivery.events` is the reference it is
tested against byte for byte; the job uses it when the extension is missing or `decoder` is `python`.
"""
from __future__ import annotations

import json

import pyarrow as pa

from schemas.avro.errors import UnknownSchemaId
from schemas.avro.reader import EventReaders, event_readers
from schemas.runtime.access import RegistrySecurity
from spark.rows import DECODED, SOURCE, arrow_column, arrow_schema, column_address

try:
    from schemas._native import EventDecoder, ReplicaCopies
except ImportError:  # the job says so at start and decodes in Python
    EventDecoder = ReplicaCopies = None

_DECODED_ARROW = arrow_schema(DECODED)
_SOURCE_ARROW = arrow_schema(SOURCE)
_ALWAYS_NULL = ("cdc$stream_id", "token", "generation")  # filled by the stream assignment
# As Spark's Kafka source gives them (a timestamp's buffer holds µs as int64).
_KAFKA_TYPES = {"topic": pa.string(), "partition": pa.int32(), "offset": pa.int64(),
                "timestamp": pa.timestamp("us", tz="UTC"), "key": pa.binary(), "value": pa.binary()}


def _column(name: str, kind: pa.DataType, buffers: dict, length: int) -> pa.Array:
    if name in _ALWAYS_NULL:
        return pa.nulls(length, kind)
    if name == "write_time":
        return arrow_column(kind, buffers["write_time_us"], length)
    if name == "source":
        return pa.StructArray.from_arrays([_column(f.name, f.type, buffers, length) for f in _SOURCE_ARROW],
                                          fields=list(_SOURCE_ARROW))
    return arrow_column(kind, buffers[name], length)


class NativeEvents:
    """Decodes Kafka record batches with schemas from `readers`; `cells`: with each change's cells (for a
    mirror). One per Python worker and registry, like the readers."""

    def __init__(self, readers: EventReaders, cells: bool = False) -> None:
        self.readers = readers
        self._decoder = EventDecoder(cells)

    def decode(self, records: pa.RecordBatch, copies: ReplicaCopies | None = None) -> pa.RecordBatch:
        """`records` decoded; with `copies` (one per task), without the records whose change the task
        has already decoded: the other replicas' copies of it (`events::copies` in the Rust crate)."""
        columns = tuple(records.column(name).cast(kind) for name, kind in _KAFKA_TYPES.items())
        addresses = tuple(column_address(c) for c in columns)
        unknown = {}
        for schema_id in self._decoder.missing(addresses[-1]):
            try:  # a registry that fails raises: the batch fails and is retried, nothing is dead-lettered
                schema = self.readers.schema(schema_id)
            except UnknownSchemaId as exc:
                unknown[schema_id] = f"{type(exc).__name__}: {exc}"
                continue
            self._decoder.add_schema(schema_id, json.dumps(schema))
        buffers = self._decoder.decode(addresses, unknown, copies)
        length = buffers["rows"]
        return pa.RecordBatch.from_arrays([_column(f.name, f.type, buffers, length) for f in _DECODED_ARROW],
                                          schema=_DECODED_ARROW)


_decoders: dict[tuple[str, RegistrySecurity, bool], NativeEvents] = {}


def native_events(registry_url: str, cells: bool, security: RegistrySecurity = RegistrySecurity()) -> NativeEvents:
    """The process's decoder for `registry_url` (Spark reuses its Python workers: schemas are given once)."""
    decoder = _decoders.get((registry_url, security, cells))
    if decoder is None:
        decoder = _decoders[(registry_url, security, cells)] = NativeEvents(event_readers(registry_url, security),
                                                                            cells)
    return decoder
