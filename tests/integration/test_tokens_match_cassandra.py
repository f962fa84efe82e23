"""Tokens computed by spark.streams equal `SELECT token(...)` on the real Cassandra."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from cassandra.concurrent import execute_concurrent_with_args

from spark.streams import token_of, tokens_of
from tests.unit.spark.streams.vectors import DTEST_INT_TOKENS, REFERENCE_TOKENS

# Scripts whose UTF-8 bytes are all >= 0x80, mixed with ASCII so tails vary.
ALPHABET = "abcXYZ019 -_éüßøçñЖщ日本語キー한국어😀🚀"


def random_int(rng: random.Random) -> int:
    return rng.randrange(-(2**31), 2**31)


def random_bigint(rng: random.Random) -> int:
    return rng.randrange(-(2**63), 2**63)


def random_boolean(rng: random.Random) -> bool:
    return rng.random() < 0.5


def random_text(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 40)))


def random_blob(rng: random.Random) -> bytes:
    # High bytes everywhere, so tail bytes >= 0x80 take Cassandra's sign-extended path.
    return bytes(rng.randrange(0x60, 0x100) for _ in range(rng.randrange(1, 70)))


def random_uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128))


# Table → (CQL type per key column, value makers, row count); 11,500 random keys in all.
KEY_KINDS: dict[str, tuple[list[str], list[Callable[[random.Random], Any]], int]] = {
    "k_int": (["int"], [random_int], 2000),
    "k_bigint": (["bigint"], [random_bigint], 2000),
    "k_text": (["text"], [random_text], 2000),
    "k_blob": (["blob"], [random_blob], 2000),
    "k_uuid": (["uuid"], [random_uuid], 1000),
    "k_int_text": (["int", "text"], [random_int, random_text], 1000),
    "k_bigint_blob_uuid": (["bigint", "blob", "uuid"], [random_bigint, random_blob, random_uuid], 1000),
    "k_mixed": (
        ["int", "text", "uuid", "bigint", "boolean"],
        [random_int, random_text, random_uuid, random_bigint, random_boolean],
        500,
    ),
}
# Range limits and all-high tails, on top of the random keys.
EDGE_KEYS = {
    "k_int": [(-1,), (0,), (-(2**31),), (2**31 - 1,)],
    "k_bigint": [(-1,), (-(2**63),), (2**63 - 1,)],
    "k_blob": [(b"\xff" * 15,), (b"\x80" * 17,), (b"\x80",), (bytes(range(256)),)],
    "k_text": [("é",), ("😀" * 4,)],
}


def create_and_fill(cql, keyspace: str, table: str, types: Sequence[str], rows: list[tuple]) -> None:
    columns = [f"c{i}" for i in range(len(types))]
    definitions = ", ".join(f"{column} {cql_type}" for column, cql_type in zip(columns, types))
    cql.execute(f"CREATE TABLE {keyspace}.{table} ({definitions}, PRIMARY KEY (({', '.join(columns)})))")
    insert = cql.prepare(
        f"INSERT INTO {keyspace}.{table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    )
    execute_concurrent_with_args(cql, insert, rows, concurrency=128, raise_on_first_error=True)


def cassandra_tokens(cql, keyspace: str, table: str, arity: int) -> dict[tuple, int]:
    columns = ", ".join(f"c{i}" for i in range(arity))
    result = cql.execute(f"SELECT {columns}, token({columns}) AS tok FROM {keyspace}.{table}")
    return {tuple(row[:arity]): row.tok for row in result}


def test_ten_thousand_random_keys_match(cql, keyspace: str) -> None:
    rng = random.Random(20240611)
    expected_rows = 0
    for table, (types, makers, count) in KEY_KINDS.items():
        rows = list({tuple(make(rng) for make in makers) for _ in range(count)} | set(EDGE_KEYS.get(table, ())))
        create_and_fill(cql, keyspace, table, types, rows)
        got = cassandra_tokens(cql, keyspace, table, len(types))
        assert len(got) == len(rows), table
        keys = list(got)
        scalar = [token_of(key, types) for key in keys]
        assert scalar == [got[key] for key in keys], table
        assert tokens_of(keys, types).tolist() == scalar, table
        expected_rows += len(rows)
    assert expected_rows >= 10_000


def test_reference_vectors_on_the_live_node(cql, keyspace: str) -> None:
    """Reference §10.1, including the vectors it marks as not yet checked against a live node."""
    by_types: dict[tuple[str, ...], list[tuple[tuple, int]]] = {}
    for values, types, token in REFERENCE_TOKENS:
        by_types.setdefault(tuple(types), []).append((tuple(values), token))
    by_types.setdefault(("int",), []).extend(((n,), token) for n, token in zip(range(1, 21), DTEST_INT_TOKENS))
    for number, (types, vectors) in enumerate(by_types.items()):
        table = f"ref_{number}"
        create_and_fill(cql, keyspace, table, types, [values for values, _ in vectors])
        got = cassandra_tokens(cql, keyspace, table, len(types))
        assert {values: got[values] for values, _ in vectors} == dict(vectors), types
