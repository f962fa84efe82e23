"""`NativeDecoders`: which tables a schema version's native decoder emits, hands off or leaves out — with the
real serializer, encoder and native core, and a registry that numbers the schemas it is given."""
from schemas.avro import ChangeEncoder, ChangeSerializer, SchemaRejected
from schemas.tables.model import SchemaSnapshot

from connector.native_source import NativeDecoders
from tests.unit.connector.commitlog.native_oracle import SOURCE
from tests.unit.connector.commitlog.testdata import SCHEMA_50


class NumberingRegistry:
    """Numbers each subject's schema; refuses the subjects of the tables named in `refusing`."""

    def __init__(self, refusing: frozenset[str] = frozenset()) -> None:
        self.subjects: list[str] = []
        self.refusing = refusing

    def register(self, subject: str, schema, table: str) -> int:
        if table.split(".")[1] in self.refusing:
            raise SchemaRejected(subject, table, "incompatible")
        self.subjects.append(subject)
        return len(self.subjects)


def decoders(registry: NumberingRegistry, rejected: list) -> NativeDecoders:
    serializer = ChangeSerializer(ChangeEncoder(SOURCE, SCHEMA_50), registry)
    return NativeDecoders(serializer, lambda table: True, lambda table: False,
                          lambda table, error: rejected.append((table.name, error.subject)))


def emitted(decoder) -> list[str]:
    return sorted(t.split(".")[-1] for t in decoder.topics if t is not None)


def test_every_captured_table_is_registered_and_emitted():
    registry, rejected = NumberingRegistry(), []
    decoder = decoders(registry, rejected).decoder(SCHEMA_50, "CommitLog-7-1.log", 1, 12)
    names = sorted(t.name for t in SCHEMA_50.tables.values())
    assert emitted(decoder) == names
    assert len(registry.subjects) == 2 * len(names) and rejected == []


def test_a_table_whose_types_the_snapshot_lacks_is_left_out_not_raised():
    """A snapshot read while a keyspace was dropped holds a table whose user type is gone: its Avro schema
    cannot be made. The decoder is made without it (its changes then meet the decoder as an unknown table's,
    which refreshes the schema); the other tables are registered and emitted."""
    lacking = SchemaSnapshot(SCHEMA_50.tables, {})
    registry, rejected = NumberingRegistry(), []
    decoder = decoders(registry, rejected).decoder(lacking, "CommitLog-7-1.log", 1, 12)
    names = sorted(t.name for t in SCHEMA_50.tables.values())
    assert "everything" in names
    assert emitted(decoder) == [n for n in names if n != "everything"]
    assert SCHEMA_50.table_by_name("ringtail_decoder_check", "everything").id not in decoder.ids
    assert not any("everything" in s for s in registry.subjects) and rejected == []
    assert decoder.snapshot is lacking  # the reference path still sees the schema as read


def test_a_table_the_registry_refuses_is_handed_off_and_reported():
    registry, rejected = NumberingRegistry(refusing=frozenset({"counters"})), []
    decoder = decoders(registry, rejected).decoder(SCHEMA_50, "CommitLog-7-1.log", 1, 12)
    assert [name for name, _ in rejected] == ["counters"]
    assert "counters" not in emitted(decoder)
    assert "everything" in emitted(decoder)
