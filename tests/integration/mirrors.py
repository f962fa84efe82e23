"""Reading a base table (`SELECT *`) and its mirrors in PostgreSQL, MySQL and Delta into one form, to
compare them: each row a dict of column → value in `spark.mirror.values`' JSON form, rows sorted."""
from __future__ import annotations

import datetime as dt
import json
import struct
from collections.abc import Callable, Iterable
from typing import Any

from schemas.cql import CqlType, ListType, SetType, VectorType, maybe_quote
from schemas.tables.loader import read_table
from spark.mirror.layout import MirrorLayout
from spark.mirror.values import json_value
from spark.snapshot.raw import raw_rows
from spark.snapshot.rows import column_json

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def layout_of(session: Any, keyspace: str, table: str) -> MirrorLayout:
    base, user_types = read_table(session, keyspace, table)
    return MirrorLayout.of_table(base, user_types)


def _types(layout: MirrorLayout) -> dict[str, CqlType]:
    types = {c.name: c.type for c in (*layout.key_columns, *layout.columns)}
    return {name: layout.cql(types[name]) for name in layout.names()}


def ordered(rows: Iterable[dict]) -> list[dict]:
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True, default=str))


def source_rows(cluster: Any, layout: MirrorLayout, consistency: int | None = None) -> list[dict]:
    """`SELECT *` of the base table (at `consistency`, or the session's), values decoded from their bytes
    by the connector's CQL type layer."""
    from cassandra.query import SimpleStatement

    session = raw_rows(cluster.connect())
    try:
        types = _types(layout)
        reads = {n: (column_json(t, f"check.{n}"), json_value(t)) for n, t in types.items()}
        statement = SimpleStatement(f"SELECT * FROM {maybe_quote(layout.keyspace)}.{maybe_quote(layout.table)}",
                                    consistency_level=consistency)
        result = session.execute(statement)
        names = result.column_names
        out = []
        for raw in result:
            row = {}
            for name, value in zip(names, raw):
                read, canonical = reads[name]
                row[name] = None if value is None else canonical(read(value))
            out.append(row)
        return ordered(out)
    finally:
        session.shutdown()


def _from_pg(cql: CqlType) -> Callable[[Any], Any]:
    """A PostgreSQL mirror column's value (as psycopg reads it) → the event's form of it."""
    if isinstance(cql, (ListType, SetType, VectorType)) and not _is_json(cql):
        element = _from_pg(cql.element)
        return lambda values: [None if v is None else element(v) for v in values]
    name = cql.cql
    if name == "float":  # real's text is the shortest that reads back as the same float32
        return _float32
    if name == "blob":
        return lambda v: "0x" + bytes(v).hex()
    if name == "timestamp":  # timestamptz, or a timestamp (without zone) holding UTC
        return lambda v: ((v if v.tzinfo else v.replace(tzinfo=dt.timezone.utc)) - _EPOCH) // dt.timedelta(
            milliseconds=1)
    if name == "date":
        return lambda v: (v - _EPOCH.date()).days
    if name in ("uuid", "timeuuid", "inet", "decimal"):
        return str
    if name == "varint":
        return lambda v: str(int(v))
    return lambda v: v  # numbers, text, booleans; jsonb as parsed, already in the JSON column form


def _float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _is_json(cql: CqlType) -> bool:
    from spark.sinks.postgres.types import pg_column

    return pg_column("x", cql).type == "jsonb"


def postgres_values(conn: Any, table: str, types: dict[str, CqlType]) -> list[dict]:
    """The rows of a PostgreSQL table whose columns hold CQL types (`types`, by name) as ringtail writes
    them (`spark.sinks.postgres.types`), in `spark.mirror.values`' JSON forms."""
    reads = {}
    for name, cql in types.items():
        read, canonical = _from_pg(cql), json_value(cql)
        reads[name] = (lambda v: v) if _is_json(cql) else (lambda v, r=read, c=canonical: c(r(v)))
    cursor = conn.execute(f"SELECT * FROM {table}")
    names = [d.name for d in cursor.description]
    return ordered({n: None if v is None else reads[n](v) for n, v in zip(names, row)} for row in cursor.fetchall())


def postgres_rows(conn: Any, layout: MirrorLayout, table: str | None = None) -> list[dict]:
    """The rows of a PostgreSQL table holding `layout`'s columns: its mirror, or `table` (a quoted name)."""
    return postgres_values(conn, table or f'"{layout.keyspace}"."{layout.table}"', _types(layout))


def postgres_mirror(dsn: str, layout: MirrorLayout) -> list[dict]:
    """The PostgreSQL mirror's rows at `dsn`, none before its table exists."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        try:
            return postgres_rows(conn, layout)
        except psycopg.errors.UndefinedTable:
            return []


def _from_nested(cql: CqlType, avro: bool) -> Callable[[Any], Any]:
    """A Delta mirror column's value (Arrow's Python form of its Spark type, `typed_log`), or with `avro` an
    image's (fastavro's reading of its natural Avro type, `schemas.avro.types`) → the event's form of it."""
    from schemas.avro.names import avro_name
    from schemas.cql import MapType, TupleType, UserType

    def nullable(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return lambda v: None if v is None else convert(v)

    if isinstance(cql, (ListType, SetType, VectorType)):
        element = _from_nested(cql.element, avro)
        return nullable(lambda values: [element(v) for v in values])
    if isinstance(cql, MapType):
        key, value = _from_nested(cql.key, avro), _from_nested(cql.value, avro)

        def pairs(entries: Any) -> list:
            if isinstance(entries, dict):  # an Avro map
                return [[key(k), value(v)] for k, v in entries.items()]
            return [[key(e["key"]), value(e["value"])] if isinstance(e, dict) else [key(e[0]), value(e[1])]
                    for e in entries]
        return nullable(pairs)
    if isinstance(cql, TupleType):
        elements = [(f"field{i}" if avro else f"_{i}", _from_nested(t, avro)) for i, t in enumerate(cql.elements, 1)]
        return nullable(lambda value: [e(value[name]) for name, e in elements])
    if isinstance(cql, UserType):
        fields = [(n, avro_name(n) if avro else n, _from_nested(t, avro))
                  for n, t in zip(cql.field_names, cql.field_types)]
        return nullable(lambda value: {n: f(value.get(a)) for n, a, f in fields})
    name = cql.cql
    if name == "blob":
        return nullable(lambda v: "0x" + v.hex())
    if name == "timestamp":
        return nullable(lambda v: (v - _EPOCH) // dt.timedelta(milliseconds=1))
    if name == "date":
        return nullable(lambda v: (v - _EPOCH.date()).days)
    if name in ("uuid", "timeuuid"):
        return nullable(str)  # fastavro reads a uuid as a UUID
    return lambda v: v


def delta_rows(spark: Any, path: Any, layout: MirrorLayout) -> list[dict]:
    types = _types(layout)
    reads = {n: (_from_nested(t, avro=False), json_value(t)) for n, t in types.items()}
    table = spark.read.format("delta").load(f"{path}/mirror/{layout.keyspace}/{layout.table}").toArrow()
    return ordered({n: canonical(read(v)) for n, (read, canonical) in reads.items() for v in [row[n]]}
                   for row in table.to_pylist())


def keyed_rows(rows: list[dict], layout: MirrorLayout) -> list[dict]:
    """`SELECT *`'s rows that have a primary key: not a partition's static-only row (clustering columns null),
    which has no image (`spark.mirror.images`)."""
    return [row for row in rows if all(row[c.name] is not None for c in layout.clustering)]


def image_values(layout: MirrorLayout) -> Callable[[dict], dict]:
    """An image's row (`before` or `after`, as fastavro reads it) → `SELECT *`'s row in the event's form."""
    from schemas.avro.names import avro_name

    reads = [(n, avro_name(n), _from_nested(t, avro=True), json_value(t)) for n, t in _types(layout).items()]
    return lambda row: {n: canonical(read(row[a])) for n, a, read, canonical in reads}


def imaged_rows(stack: Any, topic: str, layout: MirrorLayout, ops: list[str] | None = None) -> list[dict]:
    """What a `read_committed` consumer of a table's image topic holds at its end: each key's newest
    `after`, none after its tombstone; each image's op goes to `ops`. Each image must begin where its key's
    previous one ended."""
    import uuid

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from confluent_kafka.schema_registry import SchemaRegistryClient

    from schemas.avro.registry import SchemaRegistry

    registry = SchemaRegistry(SchemaRegistryClient({"url": stack.registry_url}))
    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"images-{uuid.uuid4()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    values = image_values(layout)
    rows: dict[bytes, dict | None] = {}
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        ended: set[int] = set()
        while len(ended) < len(partitions):
            message = consumer.poll(10)
            assert message is not None, f"{topic} did not reach its end"
            if message.error():
                ended.add(message.partition())
                continue
            if message.value() is None:  # a tombstone: follows the removal's image
                assert rows.get(message.key()) is None, "a tombstone of a row still there"
                rows.pop(message.key(), None)
                continue
            image = registry.deserialize(message.value())
            _fold(rows, message.key(), image, None if image["before"] is None else values(image["before"]),
                  None if image["after"] is None else values(image["after"]))
            if ops is not None:
                ops.append(image["op"])
    finally:
        consumer.close()
    return ordered(row for row in rows.values() if row is not None)


def posted_rows(bodies: Iterable[list[dict]], layout: MirrorLayout) -> list[dict]:
    """What a receiver of the HTTP sink's images holds after `bodies` (each accepted request's, in the order
    received): each key's newest `after` of the table's images, with `layout`'s columns (one added after an
    image null in it). Each image must begin where its key's previous one ended."""
    names = list(_types(layout))

    def shown(row: dict | None) -> dict | None:
        return None if row is None else {name: row.get(name) for name in names}

    rows: dict[str, dict | None] = {}
    for body in bodies:
        for image in body:
            if (image["source"]["keyspace"], image["source"]["table"]) != (layout.keyspace, layout.table):
                continue
            _fold(rows, json.dumps(image["key"], sort_keys=True), image, shown(image["before"]), shown(image["after"]))
    return ordered(row for row in rows.values() if row is not None)


def _fold(rows: dict, key: Any, image: dict, before: dict | None, after: dict | None) -> None:
    """Fold an image (its rows `before` and `after` in the form compared) into `rows`, under `key`: it must
    begin where the key's last image ended, and its op must say what it did."""
    assert rows.get(key) == before, (image["op"], image["source"])
    rows[key] = after
    made = "c" if before is None else "d" if after is None else "u"
    assert image["op"] == ("r" if image["source"]["snapshot"] == "true" and after else made)


def without_negative_zero(rows: list[dict], layout: MirrorLayout) -> list[dict]:
    """`rows` with -0.0 as 0.0 in float and double columns, as MySQL stores them."""
    floats = [n for n, t in _types(layout).items() if t.cql in ("float", "double")]
    return ordered({**row, **{n: 0.0 for n in floats if row[n] == 0.0}} for row in rows)


def mysql_values(conn: Any, table: str, types: dict[str, CqlType]) -> list[dict]:
    """The rows of a MySQL table whose columns hold CQL types (`types`) as ringtail writes them
    (`spark.sinks.mysql.types`), in `spark.mirror.values`' JSON forms."""
    from spark.sinks.mysql.types import mysql_column

    reads = {}
    for name, cql in types.items():
        canonical = json_value(cql)
        if mysql_column(name, cql).type == "JSON":
            reads[name] = json.loads
        elif cql.cql == "boolean":
            reads[name] = bool
        elif cql.cql == "timestamp":
            reads[name] = lambda v: (v.replace(tzinfo=dt.timezone.utc) - _EPOCH) // dt.timedelta(milliseconds=1)
        else:
            reads[name] = lambda v, r=_from_pg(cql), c=canonical: c(r(v))
    with conn.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cursor.description]
        return ordered({n: None if v is None else reads[n](v) for n, v in zip(names, row)} for row in cursor.fetchall())


def mysql_rows(conn: Any, layout: MirrorLayout) -> list[dict]:
    """The MySQL mirror (`SELECT *`: its invisible key stays out), in the event's form."""
    return mysql_values(conn, f"`{layout.keyspace}`.`{layout.table}`", _types(layout))


def mysql_absent(exc: Exception) -> bool:
    """Whether `exc` is MySQL's answer to a query of a database or table not created yet."""
    return exc.args[0] in (1049, 1146)  # unknown database, unknown table


def mysql_mirror(dsn: str, layout: MirrorLayout) -> list[dict]:
    """The MySQL mirror's rows at `dsn`, none before its database and table exist."""
    import pymysql

    from spark.sinks.mysql.connection import connect_dsn

    conn = connect_dsn(dsn)
    try:
        return mysql_rows(conn, layout)
    except (pymysql.err.OperationalError, pymysql.err.ProgrammingError) as exc:
        if mysql_absent(exc):
            return []
        raise
    finally:
        conn.close()


def log_json(cql: CqlType, value: Any) -> Any:
    """A value in `spark.mirror.values`' JSON form → the JSON log's (`spark.rows`): a map with text keys
    as [key, value] pairs, as every map."""
    from schemas.cql import MapType, TupleType, UserType

    if value is None:
        return None
    if isinstance(cql, (ListType, SetType, VectorType)):
        return [log_json(cql.element, v) for v in value]
    if isinstance(cql, MapType):
        pairs = value.items() if isinstance(value, dict) else value
        return [[log_json(cql.key, k), log_json(cql.value, v)] for k, v in pairs]
    if isinstance(cql, TupleType):
        return [log_json(t, v) for t, v in zip(cql.elements, value)]
    if isinstance(cql, UserType):
        return {n: log_json(t, value.get(n)) for n, t in zip(cql.field_names, cql.field_types)}
    return value


def diff(source: list[dict], mirror: list[dict], limit: int = 20) -> str:
    """The rows only one side has (at most `limit` of each), or '' when the two are equal."""
    def key(row: dict) -> str:
        return json.dumps(row, sort_keys=True, default=str)

    theirs, ours = {key(r) for r in mirror}, {key(r) for r in source}
    missing = [r for r in source if key(r) not in theirs]
    extra = [r for r in mirror if key(r) not in ours]
    if not missing and not extra:
        return ""
    lines = [f"{len(source)} rows in the source, {len(mirror)} in the mirror;"
             f" {len(missing)} only in the source, {len(extra)} only in the mirror"]
    lines += [f"  source: {key(r)}" for r in missing[:limit]]
    lines += [f"  mirror: {key(r)}" for r in extra[:limit]]
    return "\n".join(lines)

