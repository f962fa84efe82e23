"""Confluent framing, the registry wrapper's caching and typed errors, and serialized events;
the registry is a stand-in here (tests/integration/test_avro_registry.py uses the real one)."""
import json
import socket
import time

import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from fastavro import parse_schema

from schemas.avro import (ChangeEncoder, ChangeSerializer, MalformedPayload, RegistryError, SchemaRegistry,
                            SchemaRejected, UnknownSchemaId, topic_name)
from schemas.avro.reader import EventReaders
from schemas.avro.wire import frame, unframe
from schemas.runtime.access import RegistrySecurity
from tests.unit.connector.commitlog.testdata import SCHEMA_50 as SCHEMA, SEGMENT_50 as SEGMENT, changes_50 as changes
from tests.unit.schemas.avro.support import PROCESSED_MS, SOURCE

SCHEMA_INT = {"type": "record", "name": "R", "namespace": "ns", "fields": [{"name": "n", "type": "int"}]}


class FakeRegistryClient:
    """Records calls; ids by schema text, like a registry; `refuse` makes registration fail."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.refuse = refuse
        self.calls = []
        self.schemas: dict[int, str] = {}

    def set_compatibility(self, subject, level):
        self.calls.append(("set_compatibility", subject, level))
        return {"compatibility": level}

    def register_schema(self, subject, schema):
        self.calls.append(("register_schema", subject))
        if self.refuse:
            raise self.refuse
        ids = {text: i for i, text in self.schemas.items()}
        schema_id = ids.get(schema.schema_str) or len(self.schemas) + 1
        self.schemas[schema_id] = schema.schema_str
        return schema_id

    def get_schema(self, schema_id):
        self.calls.append(("get_schema", schema_id))
        if schema_id not in self.schemas:
            raise SchemaRegistryError(404, 40403, f"Schema {schema_id} not found")
        return type("Schema", (), {"schema_str": self.schemas[schema_id]})


def test_frame_layout():
    payload = frame(258, parse_schema(SCHEMA_INT), {"n": -1})
    assert payload == b"\x00\x00\x00\x01\x02" + b"\x01"  # magic, id 258 big-endian, zigzag -1
    assert unframe(payload, parse_schema(SCHEMA_INT)) == {"n": -1}


@pytest.mark.parametrize("payload, message", [
    (b"\x00\x00\x01", "too few"), (b"\x01\x00\x00\x00\x01\x02", "magic byte 1"),
    (b"\x00\x00\x00\x00\x01\x02\x02", "1 bytes follow"),
])
def test_malformed_payloads(payload, message):
    with pytest.raises(MalformedPayload, match=message):
        unframe(payload, parse_schema(SCHEMA_INT))


def test_register_sets_compatibility_once_and_caches_ids():
    client = FakeRegistryClient()
    registry = SchemaRegistry(client)
    first = registry.register("t-value", SCHEMA_INT, "ks.t")
    assert registry.register("t-value", json.loads(json.dumps(SCHEMA_INT)), "ks.t") == first
    evolved = {**SCHEMA_INT, "fields": [*SCHEMA_INT["fields"], {"name": "m", "type": ["null", "int"], "default": None}]}
    second = registry.register("t-value", evolved, "ks.t")
    assert second != first
    assert client.calls == [("set_compatibility", "t-value", "BACKWARD"), ("register_schema", "t-value"),
                            ("register_schema", "t-value")]
    assert registry.deserialize(registry.serialize(second, {"n": 1, "m": 2})) == {"n": 1, "m": 2}
    assert not [c for c in client.calls if c[0] == "get_schema"]  # registered schemas are known by id


def test_rejected_schema_names_subject_table_and_reason():
    client = FakeRegistryClient(SchemaRegistryError(409, 409, "Incompatible artifact: b at /fields/3"))
    with pytest.raises(SchemaRejected) as raised:
        SchemaRegistry(client).register("t-value", SCHEMA_INT, "ks.t")
    assert (raised.value.subject, raised.value.table) == ("t-value", "ks.t")
    assert str(raised.value) == "subject t-value, table ks.t: Incompatible artifact: b at /fields/3"


@pytest.mark.parametrize("failure", [SchemaRegistryError(500, 50001, "store failed"),
                                     httpx.ConnectError("connection refused")])
def test_other_registry_failures_are_retryable_errors(failure):
    with pytest.raises(RegistryError) as raised:
        SchemaRegistry(FakeRegistryClient(failure)).register("t-value", SCHEMA_INT, "ks.t")
    assert not isinstance(raised.value, SchemaRejected) and raised.value.subject == "t-value"



def test_a_registry_that_never_answers_is_a_registry_error_naming_its_address_not_a_wait_for_ever():
    """A real socket that takes the connection and says nothing: the client's timeout (RegistrySecurity.client)
    turns it into a RegistryError with the address asked, whose password is nowhere in it."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        config = RegistrySecurity(username="ringtail", password="s3cret").client(f"http://127.0.0.1:{port}",
                                                                             timeout=0.3)
        client = SchemaRegistryClient({**config, "max.retries": 1, "retries.wait.ms": 10})
        began = time.monotonic()
        with pytest.raises(RegistryError) as raised:
            SchemaRegistry(client).schema(7)
    assert time.monotonic() - began < 5
    assert f"registry unreachable at http://127.0.0.1:{port}/schemas/ids/7: ReadTimeout" in str(raised.value)
    assert "s3cret" not in str(raised.value) and not isinstance(raised.value, UnknownSchemaId)

def test_decoding_fetches_an_unknown_writer_schema_once():
    client = FakeRegistryClient()
    schema_id = SchemaRegistry(client).register("t-value", SCHEMA_INT, "ks.t")
    reader = SchemaRegistry(client)  # as in another process: it knows no ids yet
    payload = frame(schema_id, parse_schema(SCHEMA_INT), {"n": 5})
    assert [reader.deserialize(payload) for _ in range(2)] == [{"n": 5}] * 2
    assert [c for c in client.calls if c[0] == "get_schema"] == [("get_schema", schema_id)]
    with pytest.raises(UnknownSchemaId, match="the registry has no schema with id 99"):
        reader.deserialize(frame(99, parse_schema(SCHEMA_INT), {"n": 5}))


def test_readers_ask_for_an_unknown_id_again_only_after_a_while():
    client = FakeRegistryClient()
    readers = EventReaders(SchemaRegistry(client), unknown_for=0.05)
    for _ in range(3):  # a topic of records whose schema is gone: one request, not one per record
        with pytest.raises(UnknownSchemaId):
            readers.get(99)
    assert client.calls == [("get_schema", 99)]
    time.sleep(0.06)
    with pytest.raises(UnknownSchemaId):
        readers.get(99)
    assert client.calls == [("get_schema", 99)] * 2


def test_serialized_events():
    client = FakeRegistryClient()
    encoder = ChangeEncoder(SOURCE, SCHEMA)
    serializer = ChangeSerializer(encoder, SchemaRegistry(client))
    ours = [c for c in changes() if c.table.keyspace == "ringtail_decoder_check"]
    events = [serializer.serialize(c, str(SEGMENT), PROCESSED_MS) for c in ours]
    everything = topic_name("demo", "ringtail_decoder_check", "everything")
    counters = topic_name("demo", "ringtail_decoder_check", "counters")
    assert everything == "demo.ringtail_decoder_check.everything"
    assert {e.topic for e in events} == {everything, counters}
    registered = [c[1] for c in client.calls if c[0] == "register_schema"]
    assert registered == [f"{everything}-key", f"{everything}-value", f"{counters}-key", f"{counters}-value"]
    reader = SchemaRegistry(client)
    for change, event in zip(ours, events):
        key, value = encoder.encode(change, str(SEGMENT), PROCESSED_MS)
        assert reader.deserialize(event.key) == key
        assert reader.deserialize(event.value) == value
