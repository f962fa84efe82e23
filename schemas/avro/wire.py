"""Confluent's wire format: magic byte 0, the schema id as a 4-byte big-endian integer, then
the Avro binary encoding of the datum (no container file, no schema)."""
from __future__ import annotations

import io
import struct

from fastavro import schemaless_reader, schemaless_writer

from .errors import MalformedPayload

MAGIC = 0
_HEADER = struct.Struct(">bi")  # the id is a Java int in Confluent's serializers: signed


def frame_header(schema_id: int) -> bytes:
    """What comes before the datum."""
    return _HEADER.pack(MAGIC, schema_id)


def frame(schema_id: int, parsed_schema, datum) -> bytes:
    """`parsed_schema` comes from fastavro.parse_schema (parsing per call would dominate)."""
    out = io.BytesIO()
    out.write(frame_header(schema_id))
    schemaless_writer(out, parsed_schema, datum)
    return out.getvalue()


def schema_id_of(payload: bytes) -> int:
    if len(payload) < _HEADER.size:
        raise MalformedPayload(f"{len(payload)} bytes are too few for a Confluent-framed payload")
    magic, schema_id = _HEADER.unpack_from(payload)
    if magic != MAGIC:
        raise MalformedPayload(f"magic byte {magic} instead of {MAGIC}: not a Confluent-framed payload")
    return schema_id


def unframe(payload: bytes, parsed_schema):
    """The datum of `payload`, written with `parsed_schema` (the one its schema id names)."""
    schema_id_of(payload)
    body = io.BytesIO(payload)
    body.seek(_HEADER.size)
    datum = schemaless_reader(body, parsed_schema)
    if body.tell() != len(payload):
        raise MalformedPayload(f"{len(payload) - body.tell()} bytes follow the datum")
    return datum
