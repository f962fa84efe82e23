"""The images of the changes a real Cassandra 5.0 node wrote (the segment of test_mirror_segment): applied in
order, row by row, they give what `SELECT *` returns; merged again, they give none; and each is a datum of
its table's image schema."""
import io
import json

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from spark.mirror.engine import merge
from spark.mirror.images import Images
from spark.mirror.state import Rules
from spark.sinks.images import image_schemas
from tests.unit.spark.mirror.changes import NOW, PK, T, cell, insert, update
from tests.unit.spark.mirror.memory import MemoryStore, imaged as memory_imaged, ordered
from tests.unit.spark.mirror.segment import BEFORE_EXPIRY, FIRST_ROW


def imaged(layout, changes, store=None):
    """The images of `changes` merged into `store` as of `BEFORE_EXPIRY`, the same from the reference and the
    native core (`memory.imaged`)."""
    return memory_imaged(layout, changes, BEFORE_EXPIRY, store)


def key_of(row: dict) -> str:
    return json.dumps(row, sort_keys=True)


def test_the_images_applied_in_order_are_select_star(layout, changes):
    store, images = imaged(layout, changes)
    table: dict[str, dict] = {}
    for image in images:
        key = key_of(image.key)
        assert table.get(key) == image.before  # each image starts where the row's last one ended
        if image.after is None:
            del table[key]
        else:
            table[key] = image.after
    # SELECT * but a partition's static-only row (no image has its key: `spark.mirror.images`).
    assert ordered(table.values()) == [row for row in store.select() if row["c1"] is not None]
    assert FIRST_ROW in table.values()
    assert {i.before is None for i in images} == {True, False}  # rows created, rows changed


def test_a_partition_of_static_values_only_has_no_image_until_its_first_row(layout, changes):
    images = [i for i in imaged(layout, changes)[1] if (i.key["p1"], i.key["p2"]) == (1, "a")]
    first = images[0]
    assert (first.key["c1"], first.key["c2"]) == (10, "x") and first.before is None
    assert first.after["s"] == "static!"  # the static value written before the row, on it


def ops(images) -> list[list[tuple]]:
    """Per change, in order: (c1, op) of each row it altered, by c1 (the rows of a partition come in no order);
    the changes numbered by their origins (`numbered`)."""
    by_change: dict[int, list] = {}
    for i in images:
        op = "c" if i.before is None else "d" if i.after is None else "u"
        by_change.setdefault(i.origin, []).append((i.key["c1"], op))
    return [sorted(altered) for altered in by_change.values()]


def numbered(changes) -> list:
    return [c._replace(origin=n) for n, c in enumerate(changes)]


def test_deletions_image_every_row_they_remove_and_a_static_change_every_row_it_shows_on():
    from tests.unit.spark.mirror.test_mirror_rules import NOW, T, cell, change, insert, update

    store = MemoryStore()
    merge(Rules(T), store, [insert(1, 1, "a", v=cell(1, 1)), insert(1, 2, "a", v=cell(1, 2)),
                            insert(1, 3, "a", v=cell(1, 3))], NOW)
    store, images = memory_imaged(T, numbered([
        update(1, "a", v=cell(2, 10)),  # one row
        change(static=True, cells={"s": cell(3, "S")}),  # every row shows it
        change([2, "a"], deletion=4),  # a row deletion
        update(2, "a", v=cell(3, 99)),  # written before the deletion: shadowed, no image
        change(deletion=5, bounds=[[[3], True], None]),  # from c1 = 3 on (c1 descends): rows 3 and 1
        change(deletion=6),  # the partition
    ]), NOW, store)
    # The partition deletion finds no row left: only the static value, which shows on no row.
    assert ops(images) == [[(1, "u")], [(1, "u"), (2, "u"), (3, "u")], [(2, "d")], [(1, "d"), (3, "d")]]
    assert all(i.after == {**i.before, "s": "S"} for i in images[1:4])
    assert store.select() == []


def test_changes_merged_again_make_no_image(layout, changes):
    store, first = imaged(layout, changes)
    assert first
    again_store, again = imaged(layout, changes, store)
    assert again == []  # a replica's copy of a change already merged changes no row


def test_every_image_is_a_datum_of_its_tables_schemas(layout, changes):
    _, images = imaged(layout, changes)
    schemas = image_schemas(layout)
    key_schema, value_schema = parse_schema(schemas.key_schema), parse_schema(schemas.value_schema)
    source = {"name": "t", "node": "n1", "segment_id": 7, "entry_offset": 12, "ts_ms": 1, "ts_us": 1000,
              "change_id": "ab", "snapshot": "false"}
    read = []
    for image in images:
        for schema, datum in ((key_schema, schemas.key(image.key)),
                              (value_schema, schemas.value("u", image.before, image.after, source, 5))):
            out = io.BytesIO()
            schemaless_writer(out, schema, datum)
            out.seek(0)
            read.append(schemaless_reader(out, schema))
    # The first row's last image: the row as SELECT * shows it at the end.
    first = [r["after"] for r in read
             if "after" in r and r["after"] and (r["after"]["c1"], r["after"]["c2"]) == (10, "x")][-1]
    # Natural types: bytes, timestamps, uuids, records for tuples and UDTs, maps.
    assert first["v_blob"] == b"\x00\xff"
    assert str(first["v_uuid"]) == FIRST_ROW["v_uuid"]
    assert first["v_timestamp"].timestamp() * 1000 == FIRST_ROW["v_timestamp"]
    assert first["f_tuple"] == {"field1": 1, "field2": None}
    assert first["u"] == {"street": "S", "zip": 777}
    assert first["f_map"] == {"k": 1}
    assert first["v_varint"] == str(2**70) and first["v_decimal"] == "-12.345"


@pytest.mark.parametrize("bad", [{"v_int": "x"}])
def test_a_value_not_of_its_type_is_refused_by_the_schema(layout, bad):
    schemas = image_schemas(layout)
    with pytest.raises((ValueError, TypeError)):
        schemaless_writer(io.BytesIO(), parse_schema(schemas.value_schema),
                          schemas.value("c", None, {**FIRST_ROW, **bad}, {
                              "name": "t", "node": None, "segment_id": None, "entry_offset": None, "ts_ms": 1,
                              "ts_us": 1, "change_id": "x", "snapshot": "false"}, 1))


def test_rows_whose_cells_expired_are_imaged_as_they_were_and_as_they_are():
    store = MemoryStore()
    merge(Rules(T), store, [insert(1, 1, "a", ttl=10, v=cell(1, 1, ttl=10)),  # the whole row expires
                            insert(1, 2, "a", v=cell(1, 2)), update(2, "a", w=cell(2, "w", ttl=10))], NOW)
    record = json.loads(store.states[(PK, "")][0])
    rows = {row: json.loads(text) for (_, row), (text, _) in store.states.items() if row}
    later = Images(Rules(T), NOW + 20)
    later.expired(record, rows, NOW)
    changed = {i.key["c1"]: (i.before, i.after) for i in later.images}
    assert changed[1][0]["v"] == 1 and changed[1][1] is None  # removed
    assert changed[2][0]["w"] == "w" and changed[2][1] == {**changed[2][0], "w": None}  # a cell gone
    assert all(i.origin is None for i in later.images)
    early = Images(Rules(T), NOW + 5)
    early.expired(record, rows, NOW)
    assert early.images == []  # nothing expired yet


def test_a_column_added_to_the_table_keeps_its_image_schemas_readable_both_ways():
    """The schemas are rebuilt from the table each batch and registered under BACKWARD compatibility: a
    consumer on the new schema reads images written before the column came (the column null), and one on
    the old schema reads the new ones (without it)."""
    from schemas.avro.image import ImageSchemas
    from schemas.cql import parse_type

    key = [("id", parse_type("int", {}, "ks"))]
    old = ImageSchemas.of("ks", "t", key, [("v", parse_type("text", {}, "ks"))])
    new = ImageSchemas.of("ks", "t", key, [("v", parse_type("text", {}, "ks")),
                                           ("w", parse_type("set<int>", {}, "ks"))])
    source = {"name": "t", "node": None, "segment_id": None, "entry_offset": None, "ts_ms": 1, "ts_us": 1,
              "change_id": "c", "snapshot": "false"}

    def round_trip(writer: ImageSchemas, reader: ImageSchemas, after: dict) -> dict:
        out = io.BytesIO()
        schemaless_writer(out, parse_schema(writer.value_schema), writer.value("c", None, after, source, 1))
        out.seek(0)
        return schemaless_reader(out, parse_schema(writer.value_schema), parse_schema(reader.value_schema))["after"]

    assert round_trip(old, new, {"id": 1, "v": "x"}) == {"id": 1, "v": "x", "w": None}
    assert round_trip(new, old, {"id": 1, "v": "x", "w": [2]}) == {"id": 1, "v": "x"}
