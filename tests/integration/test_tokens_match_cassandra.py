"""Tokens computed by spark.streams equal `SELECT token(...)` on the real Cassandra."""

from __future__ import annotations

import random
import uuid

from spark.streams import token_of


def test_single_key_tokens_match(cql, keyspace: str) -> None:
    cql.execute(f"CREATE TABLE {keyspace}.b (k blob PRIMARY KEY)")
    cql.execute(f"CREATE TABLE {keyspace}.t (k text PRIMARY KEY)")
    rng = random.Random(7)
    # Lengths 0..40 cover every tail length; high bytes exercise Cassandra's sign-extended tail.
    blobs = [bytes(rng.randrange(256) for _ in range(n)) for n in range(1, 41)] + [b"\xff" * 15, b"\x80" * 17]
    texts = ["", "a", "héllo wörld", "日本語のキー", "x" * 33] + [uuid.UUID(int=rng.getrandbits(128)).hex for _ in range(10)]
    insert_b = cql.prepare(f"INSERT INTO {keyspace}.b (k) VALUES (?)")
    insert_t = cql.prepare(f"INSERT INTO {keyspace}.t (k) VALUES (?)")
    for blob in blobs:
        cql.execute(insert_b, (blob,))
    for text in texts[1:]:  # an empty text key is not allowed
        cql.execute(insert_t, (text,))

    got_b = {row.k: row.tok for row in cql.execute(f"SELECT k, token(k) AS tok FROM {keyspace}.b")}
    got_t = {row.k: row.tok for row in cql.execute(f"SELECT k, token(k) AS tok FROM {keyspace}.t")}
    assert len(got_b) == len(blobs) and len(got_t) == len(texts) - 1
    for blob, token in got_b.items():
        assert token_of([blob], ["blob"]) == token, blob.hex()
    for text, token in got_t.items():
        assert token_of([text], ["text"]) == token, text


def test_composite_key_tokens_match(cql, keyspace: str) -> None:
    cql.execute(
        f"CREATE TABLE {keyspace}.c (a int, b text, c uuid, d bigint, e boolean, PRIMARY KEY ((a, b, c, d, e)))"
    )
    rng = random.Random(11)
    insert = cql.prepare(f"INSERT INTO {keyspace}.c (a, b, c, d, e) VALUES (?, ?, ?, ?, ?)")
    rows = [
        (rng.randrange(-2**31, 2**31), f"key-{i}-ü", uuid.UUID(int=rng.getrandbits(128)),
         rng.randrange(-2**63, 2**63), bool(i % 2))
        for i in range(50)
    ]
    for row in rows:
        cql.execute(insert, row)
    types = ["int", "text", "uuid", "bigint", "boolean"]
    result = cql.execute(f"SELECT a, b, c, d, e, token(a, b, c, d, e) AS tok FROM {keyspace}.c")
    checked = 0
    for row in result:
        assert token_of([row.a, row.b, row.c, row.d, row.e], types) == row.tok
        checked += 1
    assert checked == len(rows)
