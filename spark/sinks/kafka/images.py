"""The Kafka sink's images (`sinks.images`): Avro in Confluent's wire format (`schemas.avro.image`), on a
compacted topic per table, `<topic>.<keyspace>.<table>`, keyed by primary key, with a tombstone after a
row's removal so that compaction drops it."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from schemas.avro.image import ImageSchemas
from schemas.avro.registry import SchemaRegistry
from schemas.avro.wire import frame
from spark.mirror.images import RowImage
from spark.mirror.layout import MirrorLayout

from ..images import Encoded, Envelope, image_schemas


@dataclass(frozen=True)
class AvroImage:
    """A table's images framed with its schemas' registry ids (`ImageEncoder`); picklable."""

    key_id: int
    key_schema: dict
    value_id: int
    value_schema: dict

    def __call__(self, schemas: ImageSchemas, image: RowImage, envelope: Envelope) -> Encoded:
        key = frame(self.key_id, self.key_schema, schemas.key(image.key))
        value = schemas.value(envelope.op, image.before, image.after, envelope.source, envelope.made)
        records = [(key, frame(self.value_id, self.value_schema, value))]
        if image.after is None:
            records.append((key, None))
        return records


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
        return topic, AvroImage(key_id, self.registry.parsed_schema(key_id), value_id,
                                self.registry.parsed_schema(value_id))
