"""The Kafka sink's images (`sinks.images`): Avro in Confluent's wire format (`schemas.avro.image`), on a
compacted topic per table, `<topic>.<keyspace>.<table>`, keyed by primary key, with a tombstone after a
row's removal so that compaction drops it."""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from schemas.avro.image import ImageSchemas
from schemas.avro.registry import SchemaRegistry, schema_text
from spark.mirror.images import RowImage
from spark.mirror.layout import MirrorLayout

from ..images import Encoded, Envelope, image_schemas


@dataclass(frozen=True)
class AvroImage:
    """A table's images framed with its schemas' registry ids (`ImageEncoder`); picklable. The native core writes
    them from the rows' JSON forms (`AvroFramer`, fastavro's bytes for the datums `schemas.avro.image` makes):
    an image took 4 times as long through fastavro, its datums made first."""

    key_id: int
    key_schema: str  # as registered (`schema_text`)
    value_id: int
    value_schema: str

    def __call__(self, schemas: ImageSchemas, image: RowImage, envelope: Envelope) -> Encoded:
        # The rows as they are, in their JSON forms: the native core reads those (the datums `schemas.key` and
        # `schemas.value` make of them are fastavro's input, the reference the tests hold it to).
        key = _framer(self.key_id, self.key_schema).frame(image.key)
        value = schemas.envelope(envelope.op, image.before, image.after, envelope.source, envelope.made)
        records = [(key, _framer(self.value_id, self.value_schema).frame(value))]
        if image.after is None:
            records.append((key, None))
        return records


@functools.lru_cache(maxsize=256)
def _framer(schema_id: int, schema: str):
    """One per schema and process (the driver's, each executor's Python worker): parsed once, not per image."""
    from schemas._native import AvroFramer

    return AvroFramer(schema_id, schema)


class AvroImages:
    """The Kafka sink's `ImageFormat`: a table's topic, created on first sight, and its schemas, registered."""

    def __init__(self, prefix: str, registry: SchemaRegistry, create_topic: Callable[[str], None]) -> None:
        self.prefix, self.registry, self.create_topic = prefix, registry, create_topic
        self._topics: set[str] = set()

    def table(self, layout: MirrorLayout) -> tuple[str, AvroImage]:
        topic = f"{self.prefix}.{layout.keyspace}.{layout.table}"
        if topic not in self._topics:
            self.create_topic(topic)
            self._topics.add(topic)
        schemas = image_schemas(layout)
        key_id = self.registry.register(f"{topic}-key", schemas.key_schema, layout.qualified)
        value_id = self.registry.register(f"{topic}-value", schemas.value_schema, layout.qualified)
        return topic, AvroImage(key_id, schema_text(schemas.key_schema), value_id, schema_text(schemas.value_schema))
