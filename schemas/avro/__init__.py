"""Changes as Avro events: per-table key and value schemas (Debezium-style envelope), the
encoder filling them, and the Confluent wire format with a schema registry.

Producing to Kafka:

    registry = SchemaRegistry(SchemaRegistryClient({"url": registry_url}))
    events = ChangeSerializer(ChangeEncoder(SourceInfo(name, cluster, node), schema), registry)
    for change in reader.changes():
        events.encoder.schema = reader.schema
        topic, key, value = events.serialize(change, reader.path.name)
        producer.produce(topic, key=key, value=value)
"""
from .encoder import ChangeEncoder
from .errors import AvroError, MalformedPayload, NameClash, RegistryError, SchemaRejected, UnknownSchemaId
from .serializer import ChangeSerializer, Event, topic_name
from .table import SourceInfo, TableEncoder


def __getattr__(name: str):
    # Imported when first asked for: its client (httpx, authlib) takes a tenth of a second to import, which
    # a process reading values or events (a Spark task, the snapshot's planner) does not need.
    if name == "SchemaRegistry":
        from .registry import SchemaRegistry

        return SchemaRegistry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AvroError", "ChangeEncoder", "ChangeSerializer", "Event", "MalformedPayload", "NameClash", "RegistryError",
    "SchemaRegistry", "SchemaRejected", "SourceInfo", "TableEncoder", "UnknownSchemaId", "topic_name",
]
