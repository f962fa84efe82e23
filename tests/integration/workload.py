"""A seeded random CQL workload over tables with every kind of column (atomic types, frozen and
non-frozen collections, a UDT, static columns, clustering with DESC order, a quoted name): inserts and
updates (some with TTLs), collection element changes, cell, row, range and partition deletions, and
writes `USING TIMESTAMP` in the past, out of order and tied with others. The same seed gives the same
statements; what Cassandra holds after them is the oracle a mirror is compared with."""
from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from cassandra.concurrent import execute_concurrent
from cassandra.query import SimpleStatement

TABLES = ("wide", "events", "kv")


def execute(cql, statements: list[str]) -> None:
    """Run `statements` at once, 64 at a time; every one must succeed."""
    results = execute_concurrent(cql, [(SimpleStatement(s), ()) for s in statements], concurrency=64,
                                 raise_on_first_error=False)
    failed = [(s, r.result_or_exc) for s, r in zip(statements, results) if not r.success]
    assert not failed, failed[:5]


def ddl(keyspace: str) -> list[str]:
    return [
        f"CREATE TYPE {keyspace}.addr (street text, zip int, tags frozen<set<text>>)",
        f"""CREATE TABLE {keyspace}.wide (p int, c1 int, c2 text, s text static, s_set set<int> static,
            v_int int, v_text text, v_bigint bigint, v_decimal decimal, v_varint varint, v_double double,
            v_float float, v_boolean boolean, v_blob blob, v_timestamp timestamp, v_date date, v_time time,
            v_uuid uuid, v_timeuuid timeuuid, v_inet inet, v_duration duration, v_tinyint tinyint,
            v_smallint smallint, v_ascii ascii, v_vector vector<float, 3>,
            f_list frozen<list<int>>, f_map frozen<map<text, int>>, f_tuple frozen<tuple<int, text>>,
            f_udt frozen<addr>, f_nested frozen<map<int, frozen<list<text>>>>,
            l list<text>, st set<int>, m map<text, int>, mt map<timeuuid, text>, u addr,
            PRIMARY KEY ((p), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC) AND cdc = true""",
        f"""CREATE TABLE {keyspace}.events (p text, at timeuuid, id uuid, v int, tags set<text>,
            PRIMARY KEY ((p), at, id)) WITH CLUSTERING ORDER BY (at DESC, id ASC) AND cdc = true""",
        f"""CREATE TABLE {keyspace}.kv ("Key" text PRIMARY KEY, v int, w text, l list<int>,
            pairs set<frozen<tuple<int, blob>>>) WITH cdc = true""",
    ]


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _timeuuid(rnd: random.Random, seconds_ago: float) -> uuid.UUID:
    """A version 1 uuid of a time `seconds_ago`, its clock sequence and node random."""
    ticks = int((time.time() - seconds_ago) * 1e7) + 0x01B21DD213814000
    return uuid.UUID(fields=(ticks & 0xFFFFFFFF, (ticks >> 32) & 0xFFFF, ((ticks >> 48) & 0x0FFF) | 0x1000,
                             0x80 | rnd.randrange(64), rnd.randrange(256), rnd.getrandbits(48)))


@dataclass
class Workload:
    keyspace: str
    seed: int

    def __post_init__(self) -> None:
        self.rnd = random.Random(self.seed)
        now_us = int(time.time() * 1e6)
        # Tied timestamps: several writes share each, so ties are broken as Cassandra breaks them.
        self.tied = [now_us - 120_000_000 + i for i in range(4)]
        self.words = ["", "a", "b", "é", "it's", "z" * 40]
        self.timeuuids = [_timeuuid(self.rnd, s) for s in range(0, 200, 10)]
        self.uuids = [uuid.UUID(int=self.rnd.getrandbits(128), version=4) for _ in range(4)]

    # Values, as CQL literals

    def word(self) -> str:
        return _text(self.rnd.choice(self.words))

    def words_sample(self, least: int, most: int) -> list[str]:
        """Distinct words: a set's elements, a map's keys."""
        return [_text(w) for w in self.rnd.sample(self.words, self.rnd.randint(least, most))]

    def value(self, column: str) -> str:
        r = self.rnd
        values: dict[str, Callable[[], str]] = {
            "v_int": lambda: str(r.randint(-3, 3)), "v_text": self.word, "s": self.word, "w": self.word,
            "v": lambda: str(r.randint(-3, 3)),
            "v_bigint": lambda: str(r.choice([-(2 ** 63), -1, 0, 2 ** 63 - 1, r.getrandbits(40)])),
            "v_decimal": lambda: r.choice(["0", "-12.345", "1.50", "1.5", "99999999999999999999.1"]),
            "v_varint": lambda: str(r.choice([0, -1, 2 ** 70, -(2 ** 64) - 3])),
            # No NaN or infinities: MySQL cannot hold them (its mirror refuses them with an error).
            "v_double": lambda: r.choice(["1.5", "-0.0", "0.0", "1e300", "-2.5e-300"]),
            "v_float": lambda: r.choice(["0.25", "-1.5", "0.1", "3.4e38"]),
            "v_boolean": lambda: r.choice(["true", "false"]),
            "v_blob": lambda: "0x" + bytes(r.getrandbits(8) for _ in range(r.randint(0, 4))).hex(),
            "v_timestamp": lambda: str(r.choice([0, -1, 1_700_000_000_123, 253402300799999])),
            "v_date": lambda: _text(r.choice(["1970-01-01", "2024-02-29", "1900-12-31", "9999-12-31"])),
            "v_time": lambda: str(r.choice([0, 1, 86_399_999_999_999, 48_654_234_000_000])),
            "v_uuid": lambda: str(r.choice(self.uuids)), "v_timeuuid": lambda: str(r.choice(self.timeuuids)),
            "v_inet": lambda: _text(r.choice(["10.0.0.1", "::1", "2001:db8::ff00:42:8329", "0.0.0.0"])),
            "v_duration": lambda: r.choice(["1mo2d3ns", "0s", "1y", "36h", "-2d"]),
            "v_tinyint": lambda: str(r.randint(-128, 127)), "v_smallint": lambda: str(r.randint(-32768, 32767)),
            "v_ascii": lambda: _text(r.choice(["", "abc", "A-Z"])),
            "v_vector": lambda: f"[{r.uniform(-2, 2):.3f}, 0.5, {r.choice(['1.0', '-0.0'])}]",
            "f_list": lambda: f"[{', '.join(str(r.randint(-2, 2)) for _ in range(r.randint(0, 3)))}]",
            "f_map": lambda: "{" + ", ".join(f"{w}: {r.randint(0, 9)}" for w in self.words_sample(0, 2)) + "}",
            "f_tuple": lambda: f"({r.choice(['null', '1', '-7'])}, {r.choice(['null', self.word()])})",
            "f_udt": self.udt, "u": self.udt,
            "f_nested": lambda: "{" + ", ".join(f"{k}: [{self.word()}]" for k in r.sample(range(5), 2)) + "}",
            "l": lambda: f"[{', '.join(self.word() for _ in range(r.randint(1, 3)))}]",
            "st": lambda: "{" + ", ".join(str(v) for v in r.sample(range(-3, 4), r.randint(1, 3))) + "}",
            "s_set": lambda: "{" + ", ".join(str(v) for v in r.sample(range(5), r.randint(1, 2))) + "}",
            "tags": lambda: "{" + ", ".join(self.words_sample(1, 2)) + "}",
            "m": lambda: "{" + ", ".join(f"{w}: {r.randint(0, 9)}" for w in self.words_sample(1, 2)) + "}",
            "mt": lambda: "{" + f"{r.choice(self.timeuuids)}: {self.word()}" + "}",
        }
        return values[column]()

    def udt(self) -> str:
        r = self.rnd
        fields = [f"street: {self.word()}", f"zip: {r.randint(0, 3)}", f"tags: {{{self.word()}}}"]
        return "{" + ", ".join(r.sample(fields, r.randint(1, 3))) + "}"

    # Statements

    WIDE_COLUMNS = ("v_int", "v_text", "v_bigint", "v_decimal", "v_varint", "v_double", "v_float", "v_boolean",
                    "v_blob", "v_timestamp", "v_date", "v_time", "v_uuid", "v_timeuuid", "v_inet", "v_duration",
                    "v_tinyint", "v_smallint", "v_ascii", "v_vector", "f_list", "f_map", "f_tuple", "f_udt",
                    "f_nested", "l", "st", "m", "mt", "u")

    def using(self, ttl: bool = True) -> str:
        r = self.rnd
        parts = []
        if ttl and r.random() < 0.12:
            # Short TTLs expire while the test runs (the mirror must drop them); a day's does not.
            parts.append(f"TTL {r.choice([1, 2, 3, 86_400])}")
        roll = r.random()
        if roll < 0.25:
            parts.append(f"TIMESTAMP {int(time.time() * 1e6) - r.randrange(30_000_000)}")  # in the past
        elif roll < 0.35:
            parts.append(f"TIMESTAMP {r.choice(self.tied)}")
        return f" USING {' AND '.join(parts)}" if parts else ""

    def wide_key(self) -> tuple[int, int, str]:
        return self.rnd.randrange(40), self.rnd.randrange(6), self.rnd.choice(["a", "b", "c"])

    def wide(self) -> str:
        r, ks = self.rnd, self.keyspace
        p, c1, c2 = self.wide_key()
        where = f"WHERE p = {p} AND c1 = {c1} AND c2 = '{c2}'"
        roll = r.random()
        if roll < 0.28:
            columns = r.sample(self.WIDE_COLUMNS, r.randint(0, 6)) + (["s"] if r.random() < 0.1 else [])
            values = [self.value(c) for c in columns]
            return (f"INSERT INTO {ks}.wide (p, c1, c2{''.join(', ' + c for c in columns)}) VALUES"
                    f" ({p}, {c1}, '{c2}'{''.join(', ' + v for v in values)}){self.using()}")
        if roll < 0.58:
            assignments = [self.assignment(c) for c in r.sample(self.WIDE_COLUMNS, r.randint(1, 3))]
            return f"UPDATE {ks}.wide{self.using()} SET {', '.join(assignments)} {where}"
        if roll < 0.66:
            static = r.choice([f"s = {self.word()}", f"s_set = s_set + {self.value('s_set')}",
                               f"s_set = s_set - {self.value('s_set')}", "s = null"])
            return f"UPDATE {ks}.wide{self.using()} SET {static} WHERE p = {p}"
        if roll < 0.74:
            columns = r.sample(["v_int", "v_text", "l", "m", "u", "f_udt", "v_double", f"m[{self.word()}]"], 2)
            return f"DELETE {', '.join(columns)} FROM {ks}.wide{self.using(ttl=False)} {where}"
        if roll < 0.78:
            return f"DELETE s FROM {ks}.wide{self.using(ttl=False)} WHERE p = {p}"
        if roll < 0.87:
            return f"DELETE FROM {ks}.wide{self.using(ttl=False)} {where}"
        if roll < 0.97:
            low, high = sorted(r.sample(range(7), 2))
            bounds = r.choice([f"c1 >= {low} AND c1 < {high}", f"c1 > {low} AND c1 <= {high}", f"c1 = {low}",
                               f"c1 = {low} AND c2 > 'a'", f"c1 = {low} AND c2 <= 'b'", f"c1 > {high}",
                               f"c1 < {low}"])
            return f"DELETE FROM {ks}.wide{self.using(ttl=False)} WHERE p = {p} AND {bounds}"
        return f"DELETE FROM {ks}.wide{self.using(ttl=False)} WHERE p = {p}"

    def assignment(self, column: str) -> str:
        r = self.rnd
        if column == "l":
            return r.choice([f"l = l + {self.value('l')}", f"l = {self.value('l')} + l", f"l = {self.value('l')}",
                             f"l = l - [{self.word()}]"])
        if column == "st":
            return r.choice([f"st = st + {self.value('st')}", f"st = st - {self.value('st')}",
                             f"st = {self.value('st')}"])
        if column == "m":
            return r.choice([f"m = m + {self.value('m')}", f"m[{self.word()}] = {r.randint(0, 9)}",
                             f"m = m - {{{self.word()}}}", f"m = {self.value('m')}"])
        if column == "mt":
            return r.choice([f"mt = mt + {self.value('mt')}", f"mt = mt - {{{r.choice(self.timeuuids)}}}"])
        if column == "u":
            return r.choice([f"u = {self.udt()}", f"u.zip = {r.randint(0, 9)}", f"u.street = {self.word()}",
                             "u.zip = null"])
        if r.random() < 0.1:
            return f"{column} = null"
        return f"{column} = {self.value(column)}"

    def events(self) -> str:
        r, ks = self.rnd, self.keyspace
        p, at, id_ = r.choice(["x", "y", "z"]), r.choice(self.timeuuids), r.choice(self.uuids)
        where = f"WHERE p = '{p}' AND at = {at} AND id = {id_}"
        roll = r.random()
        if roll < 0.4:
            return (f"INSERT INTO {ks}.events (p, at, id, v, tags) VALUES ('{p}', {at}, {id_}, {self.value('v')},"
                    f" {self.value('tags')}){self.using()}")
        if roll < 0.65:
            return (f"UPDATE {ks}.events{self.using()} SET tags = tags + {self.value('tags')}, v = {self.value('v')}"
                    f" {where}")
        if roll < 0.8:
            return f"DELETE FROM {ks}.events{self.using(ttl=False)} {where}"
        if roll < 0.97:
            low, high = sorted(r.sample(self.timeuuids, 2), key=lambda u: u.time)
            bounds = r.choice([f"at > {low} AND at <= {high}", f"at >= {low}", f"at = {low} AND id > {id_}"])
            return f"DELETE FROM {ks}.events{self.using(ttl=False)} WHERE p = '{p}' AND {bounds}"
        return f"DELETE FROM {ks}.events{self.using(ttl=False)} WHERE p = '{p}'"

    def kv(self) -> str:
        r, ks = self.rnd, self.keyspace
        key = _text(r.choice(["k1", "k2", "k3", "k4", "k5", "é"]))
        roll = r.random()
        if roll < 0.4:
            return (f'INSERT INTO {ks}.kv ("Key", v, w, l) VALUES ({key}, {self.value("v")}, {self.word()},'
                    f' [{r.randint(0, 9)}]){self.using()}')
        if roll < 0.75:
            # A set of tuples: its elements are removed by value, as they were added.
            pair = f"({r.randint(0, 2)}, 0x{r.choice(['', '00', '01ff'])})"
            return (f"UPDATE {ks}.kv{self.using()} SET "
                    + r.choice([f"v = {self.value('v')}", f"w = {self.word()}", f"l = l + [{r.randint(0, 9)}]",
                                f"pairs = pairs + {{{pair}}}", f"pairs = pairs - {{{pair}}}"])
                    + f' WHERE "Key" = {key}')
        if roll < 0.85:
            return f'DELETE w, l FROM {ks}.kv{self.using(ttl=False)} WHERE "Key" = {key}'
        return f'DELETE FROM {ks}.kv{self.using(ttl=False)} WHERE "Key" = {key}'

    def statements(self, count: int) -> list[str]:
        out = []
        for _ in range(count):
            roll = self.rnd.random()
            out.append(self.wide() if roll < 0.6 else (self.events() if roll < 0.8 else self.kv()))
        return out
