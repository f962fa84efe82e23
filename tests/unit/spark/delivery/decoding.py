"""Change events as the connector frames them, and their decoding by both of the job's decoders: what the
decoding tests share."""
import datetime

import pyarrow as pa
from fastavro import parse_schema

from schemas.avro import ChangeEncoder, SchemaRegistry, SourceInfo, TableEncoder
from schemas.avro.errors import UnknownSchemaId
from schemas.avro.reader import EventReaders
from schemas.avro.wire import frame
from spark.delivery.events import decode_records
from spark.delivery.native_events import NativeEvents
from tests.unit.connector.commitlog.native_oracle import schema_ids
from tests.unit.connector.commitlog.testdata import SCHEMA_50 as SCHEMA, SEGMENT_50 as SEGMENT, changes_50 as changes
from tests.unit.schemas.avro.support import PROCESSED_MS, SOURCE

KAFKA_TIME = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def preloaded_cache(schemas: dict[int, dict]) -> EventReaders:
    """Readers that already hold the schemas (the registry round trip is tested against the real one),
    with a registry nothing answers at."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    readers = EventReaders(SchemaRegistry(SchemaRegistryClient({"url": "http://127.0.0.1:9", "max.retries": 0})))
    for schema_id, schema in schemas.items():
        readers._schemas[schema_id] = schema
    return readers


def framed_events(source: SourceInfo = SOURCE, processed_ms: int = PROCESSED_MS):
    """(value schemas by id, framed values) of the real segment's changes, as the connector reading
    them on `source`'s node at `processed_ms` frames them."""
    encoder = ChangeEncoder(source, SCHEMA)
    schemas, payloads = {}, []
    for change in changes():
        if change.table.keyspace != "ringtail_decoder_check":
            continue
        _, value = encoder.encode(change, str(SEGMENT), processed_ms)
        table = encoder.table(change.table)
        schema_id = 1 if table.table.name == "everything" else 2
        schemas[schema_id] = table.value_schema
        payloads.append(frame(schema_id, parse_schema(table.value_schema), value))
    return schemas, payloads


def records(payloads: list[bytes]) -> pa.RecordBatch:
    n = len(payloads)
    return pa.RecordBatch.from_pydict({
        "topic": ["ringtail.ringtail_decoder_check.everything"] * n, "partition": [0] * n,
        "offset": list(range(n)), "timestamp": [KAFKA_TIME] * n, "key": [b"k"] * n, "value": payloads})


# The wire format's own refusals, which both decoders word alike; an Avro datum that cannot be read is
# worded by each reader (fastavro's exceptions, the native reader's position).
WORDED_ALIKE = ("MalformedPayload: a record", "UnknownSchemaId", "MalformedPayload: magic",
                "MalformedPayload: 0 bytes", "MalformedPayload: 1 bytes", "MalformedPayload: 4 bytes",
                "MalformedPayload: source.position")


class Registry:
    """The registry's answers for the ids it holds, and its refusal for any other."""

    def __init__(self, schemas: dict[int, dict]) -> None:
        self.schemas = schemas

    def schema(self, schema_id: int) -> dict:
        if schema_id not in self.schemas:
            raise UnknownSchemaId(None, None, f"the registry has no schema with id {schema_id}")
        return self.schemas[schema_id]


def value_schemas(schema) -> dict[int, dict]:
    ids = schema_ids(schema)
    return {ids[table.id][1]: TableEncoder(table, schema.types_of(table.keyspace)).value_schema
            for table in schema.tables.values()}


def assert_same(batch: pa.RecordBatch, schemas: dict[int, dict]) -> list[dict]:
    """Both decoders' rows of `batch`, with and without cells: equal, dead letters aside from how an
    unreadable datum is worded. The reference's rows."""
    for cells in (False, True):
        expected = decode_records(batch, EventReaders(Registry(schemas)), cells)
        actual = NativeEvents(EventReaders(Registry(schemas)), cells).decode(batch)
        assert actual.schema == expected.schema
        if actual.equals(expected):
            continue
        for want, got in zip(_rows(expected), _rows(actual), strict=True):
            if want["failure"] is not None and not want["failure_detail"].startswith(WORDED_ALIKE):
                assert got["failure"] == want["failure"], (want, got)
                got["failure_detail"] = want["failure_detail"]
            assert got == want
    return _rows(expected)


def _rows(batch: pa.RecordBatch) -> list[dict]:
    """The rows, times as µs (damage can make a write time no datetime holds)."""
    return pa.RecordBatch.from_arrays(
        [c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c for c in batch.columns],
        names=batch.schema.names).to_pylist()
