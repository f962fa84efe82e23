"""Events against the real schema registry: registration, standard consumers, evolution."""
from __future__ import annotations

import dataclasses
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connector.commitlog import Change
from deploy.local.endpoints import Stack
from schemas.avro import ChangeEncoder, ChangeSerializer, SchemaRegistry, SchemaRejected, SourceInfo
from schemas.tables import SchemaSnapshot, parse_ddl
from tests.unit.connector.commitlog.testdata import DDL_50, SCHEMA_50 as SCHEMA, SEGMENT_50 as SEGMENT
from tests.unit.connector.commitlog.testdata import changes_50 as changes

PROCESSED_MS = 1795323700000

DDL = DDL_50.read_text(encoding="utf-8")


@pytest.fixture
def serializer(stack: Stack):
    """A serializer with a logical name of its own, so every run has its own subjects (removed after)."""
    client = SchemaRegistryClient({"url": stack.registry_url})
    source = SourceInfo(name=f"it-{uuid.uuid4().hex[:8]}", cluster="Test Cluster", node="node-1")
    yield ChangeSerializer(ChangeEncoder(source, SCHEMA), SchemaRegistry(client))
    for subject in client.get_subjects():
        if subject.startswith(f"{source.name}."):
            client.delete_subject(subject)


def our_changes() -> list[Change]:
    return [c for c in changes() if c.table.keyspace == "ringtail_decoder_check"]


def decoded_with(change: Change, schema: SchemaSnapshot) -> Change:
    return dataclasses.replace(change, table=schema.table(change.table.id))


def test_registered_events_read_by_confluent_deserializer(serializer):
    ours = our_changes()
    events = [serializer.serialize(c, str(SEGMENT), PROCESSED_MS) for c in ours]
    topic = events[1].topic
    assert topic == f"{serializer.encoder.source.name}.ringtail_decoder_check.everything"
    client = serializer.registry.client
    assert client.get_compatibility(f"{topic}-value") == "BACKWARD"
    assert client.get_latest_version(f"{topic}-key").version == 1

    keys, values = AvroDeserializer(client), AvroDeserializer(client)
    for change, event in zip(ours, events):
        key, value = serializer.encoder.encode(change, str(SEGMENT), PROCESSED_MS)
        assert keys(event.key, SerializationContext(event.topic, MessageField.KEY)) == key
        assert values(event.value, SerializationContext(event.topic, MessageField.VALUE)) == value


def test_added_column_is_accepted_and_changed_type_rejected(serializer):
    registry = serializer.registry
    insert = our_changes()[1]
    first = serializer.serialize(insert, str(SEGMENT), PROCESSED_MS)
    subject = f"{first.topic}-value"

    added = parse_ddl(DDL + "ALTER TABLE ringtail_decoder_check.everything ADD n_new map<int, frozen<addr>>;")
    serializer.encoder.schema = added
    evolved = serializer.serialize(decoded_with(insert, added), str(SEGMENT), PROCESSED_MS)
    assert registry.client.get_latest_version(subject).version == 2
    assert registry.deserialize(evolved.value)["after"]["n_new"] is None
    assert registry.deserialize(first.value)["after"]["v_int"]["value"] == -7  # older events still read

    # Cassandra refuses this ALTER; a schema that differs so must be refused by the registry.
    changed = parse_ddl(DDL.replace("v_int int", "v_int text"))
    serializer.encoder.schema = changed
    with pytest.raises(SchemaRejected) as rejected:
        serializer.serialize(decoded_with(insert, changed), str(SEGMENT), PROCESSED_MS)
    assert rejected.value.subject == subject
    assert rejected.value.table == "ringtail_decoder_check.everything"
    assert "incompatible" in rejected.value.message.lower()
    assert registry.client.get_latest_version(subject).version == 2


def test_connectors_registering_a_new_subject_at_once_all_get_its_id(stack: Stack):
    """One connector per node: each registers a new table's subject at the same moment as the others (a
    registry may answer all but the first "already exists"); each gets the one id, none calls it rejected."""
    from concurrent.futures import ThreadPoolExecutor

    subject = f"it-{uuid.uuid4().hex[:8]}.ks.t-value"
    schema = {"type": "record", "name": "t", "fields": [{"name": "k", "type": "int"}]}
    registries = [SchemaRegistry(SchemaRegistryClient({"url": stack.registry_url})) for _ in range(6)]
    try:
        with ThreadPoolExecutor(len(registries)) as pool:
            ids = list(pool.map(lambda registry: registry.register(subject, schema, "ks.t"), registries))
        assert len(set(ids)) == 1
    finally:
        SchemaRegistryClient({"url": stack.registry_url}).delete_subject(subject)
