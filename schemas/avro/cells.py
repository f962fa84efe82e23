"""The record of one column in the `after` row, and the function filling it from decoded cells.

A frozen or simple column is one cell: Cell {value, timestamp, ttl, local_deletion_time,
tombstone}. A non-frozen collection or UDT is written element by element, so its record says
what this change did to it: Cell {deletion, added, removed}, where `deletion` is the column
deletion written before the elements (an overwrite `l = [...]`, or `DELETE l`), `added` the
elements written (each with its own timestamp and TTL) and `removed` the keys of the elements
deleted (list: the element's timeuuid; set: the element; map: the key; UDT: the field name).
"""
from __future__ import annotations

from typing import Callable

from schemas.change import Cell, ComplexColumn, DeletionTime
from schemas.cql import NATIVE_TYPES, CqlType, ListType, SetType, UserType

from .names import avro_name, field, record
from .types import AvroType, avro_type, value_type

CellEncoder = Callable[[Cell | ComplexColumn], dict]


def deletion_record(namespace: str) -> dict:
    return record("Deletion", namespace, [
        field("timestamp", "long", "write timestamp of the deletion, µs since the epoch"),
        field("local_deletion_time", "long", "when the node deleted it, seconds since the epoch")])


def deletion_datum(deletion: DeletionTime | None) -> dict | None:
    if deletion is None:
        return None
    return {"timestamp": deletion.marked_for_delete_at, "local_deletion_time": deletion.local_deletion_time}


def _live_fields() -> list[dict]:
    return [field("timestamp", "long"), field("ttl", "int"), field("local_deletion_time", ["null", "long"])]


def column_cell(cql: CqlType, namespace: str, deletion: dict) -> tuple[dict, CellEncoder]:
    """(schema of the column's record, encoder); `deletion` is the table's Deletion record."""
    if not cql.multi_cell:
        return _simple_cell(avro_type(cql, namespace), namespace)
    if isinstance(cql, UserType):
        return _user_type_cells(cql, namespace, deletion)
    return _collection_cells(cql, namespace, deletion)


def _simple_cell(value: AvroType, namespace: str) -> tuple[dict, CellEncoder]:
    schema = record("Cell", namespace, [field("value", ["null", value.schema]), *_live_fields(),
                                        field("tombstone", "boolean")])
    convert = value.convert

    def encode(cell: Cell) -> dict:
        v = cell.value
        return {"value": v if v is None or convert is None else convert(v), "timestamp": cell.timestamp,
                "ttl": cell.ttl, "local_deletion_time": cell.local_deletion_time, "tombstone": cell.tombstone}

    return schema, encode


def _collection_cells(cql: CqlType, namespace: str, deletion: dict) -> tuple[dict, CellEncoder]:
    if isinstance(cql, ListType):  # elements are keyed (and ordered) by a timeuuid
        key, value = avro_type(NATIVE_TYPES["timeuuid"], namespace), value_type(cql.element, f"{namespace}.element")
    elif isinstance(cql, SetType):  # the element is the key; there is no value
        key, value = value_type(cql.element, f"{namespace}.element"), None
    else:
        key, value = value_type(cql.key, f"{namespace}.key", hashable=True), value_type(cql.value, f"{namespace}.value")
    value_fields = [] if value is None else [field("value", value.schema)]
    element = record("Element", namespace, [field("key", key.schema), *value_fields, *_live_fields()])
    removed = record("Removed", namespace, [field("key", key.schema), *_removed_fields()])
    schema = _multi_cell_record(namespace, deletion, added_type={"type": "array", "items": element},
                                removed_type=removed)
    to_key, to_value = key.convert, None if value is None else value.convert
    with_value = value is not None

    def encode(column: ComplexColumn) -> dict:
        added, deleted = [], []
        for cell in column.cells:
            k = cell.path if to_key is None else to_key(cell.path)
            if cell.tombstone:
                deleted.append(_removed(k, cell))
                continue
            element = {"key": k}
            if with_value:
                element["value"] = cell.value if to_value is None else to_value(cell.value)
            element["timestamp"] = cell.timestamp
            element["ttl"] = cell.ttl
            element["local_deletion_time"] = cell.local_deletion_time
            added.append(element)
        return {"deletion": deletion_datum(column.deletion), "added": added, "removed": deleted}

    return schema, encode


def _user_type_cells(cql: UserType, namespace: str, deletion: dict) -> tuple[dict, CellEncoder]:
    """Fields written are in `added` (a record with a nullable entry per UDT field); fields set
    to null in `removed`, by CQL name."""
    fields, by_name = [], {}
    for name, cql_field in zip(cql.field_names, cql.field_types):
        path = f"{namespace}.{avro_name(name)}"
        value = value_type(cql_field, path)
        fields.append(field(name, ["null", record("Element", path, [field("value", value.schema), *_live_fields()])]))
        by_name[name] = (avro_name(name), value.convert)
    removed = record("Removed", namespace, [field("key", "string"), *_removed_fields()])
    schema = _multi_cell_record(namespace, deletion, added_type=record("Fields", namespace, fields),
                                removed_type=removed)
    nothing_added = dict.fromkeys(name for name, _ in by_name.values())

    def encode(column: ComplexColumn) -> dict:
        added, deleted = nothing_added.copy(), []
        for cell in column.cells:
            if cell.tombstone:
                deleted.append(_removed(cell.path, cell))
                continue
            name, convert = by_name[cell.path]
            v = cell.value
            added[name] = {"value": v if v is None or convert is None else convert(v), "timestamp": cell.timestamp,
                           "ttl": cell.ttl, "local_deletion_time": cell.local_deletion_time}
        return {"deletion": deletion_datum(column.deletion), "added": added, "removed": deleted}

    return schema, encode


def _removed_fields() -> list[dict]:
    return [field("timestamp", "long"), field("local_deletion_time", "long")]


def _removed(key, tombstone: Cell) -> dict:
    return {"key": key, "timestamp": tombstone.timestamp, "local_deletion_time": tombstone.local_deletion_time}


def _multi_cell_record(namespace: str, deletion: dict, added_type, removed_type: dict) -> dict:
    return record("Cell", namespace, [field("deletion", ["null", deletion]), field("added", added_type),
                                      field("removed", {"type": "array", "items": removed_type})])
