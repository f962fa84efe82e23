"""Changes to a small schema as the Spark job decodes them (`cell_changes`), for the mirror's unit tests, and
what `SELECT *` of its table `ks.t` shows."""
from schemas.tables import parse_ddl
from spark.mirror.engine import Change
from spark.mirror.layout import MirrorLayout
from tests.unit.spark.mirror.memory import mirrored

DDL = """
CREATE TYPE ks.pair (a int, b text);
CREATE TABLE ks.t (p int, c1 int, c2 text, s text static, v int, w text, l list<int>, st set<text>,
    m map<int, text>, u pair, PRIMARY KEY (p, c1, c2))
    WITH ID = 5a1c0de0-0000-4000-8000-000000000001 AND CLUSTERING ORDER BY (c1 DESC, c2 ASC);
CREATE TABLE ks.kv (k int PRIMARY KEY, v int) WITH ID = 5a1c0de0-0000-4000-8000-000000000002;
CREATE TABLE ks.pairs (k int PRIMARY KEY, sp set<frozen<tuple<int, blob>>>)
    WITH ID = 5a1c0de0-0000-4000-8000-000000000003;
"""
SCHEMA = parse_ddl(DDL)
T = MirrorLayout.of_table(SCHEMA.table_by_name("ks", "t"), SCHEMA.types_of("ks"))
KV = MirrorLayout.of_table(SCHEMA.table_by_name("ks", "kv"), {})
NOW = 1_800_000_000
PK = b"\x00\x00\x00\x01"  # p = 1, serialized
EMPTY = {"s": None, "v": None, "w": None, "l": None, "st": None, "m": None, "u": None}


def cell(ts, value, ttl=0):
    return [ts, ttl, NOW + ttl if ttl else None, 0, value]


def tombstone(ts):
    return [ts, 0, None, 1, None]


def change(k=None, *, cells=None, liveness=None, deletion=None, static=False, bounds=None, p=1):
    out = {"k": k, "s": static, "l": liveness, "d": deletion, "c": cells or {}}
    if bounds is not None:
        out["r"] = bounds
    return Change(p.to_bytes(4, "big"), [p], out)


def insert(ts, c1, c2, ttl=0, **cells):
    return change([c1, c2], liveness=[ts, ttl, NOW + ttl if ttl else None], cells=cells)


def update(c1, c2, **cells):
    return change([c1, c2], cells=cells)


def row(c1, c2, **values):
    return {"p": 1, "c1": c1, "c2": c2, **EMPTY, **values}


def select(changes, now=NOW, layout=T):
    return mirrored(layout, changes, now).select()
