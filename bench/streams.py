"""Stream-id assignment rate: numpy batches against a row-at-a-time loop, in one run.

    python bench/streams.py [--keys N] [--batch B] [--repeat R]

Both paths take partition key values and write timestamps and give each key its
16-byte stream id, across two generations of a 6-node ring (16 vnodes, 8 shards
per node; the second generation adds a node):

- row at a time: ``token_of`` then ``Generations.get_stream``, per key;
- vectorized, a batch at a time: ``tokens_of`` (keys serialized, then hashed by
  ``tokens_of_keys``), then ``Generations.stream_ids`` (searchsorted over
  generations and token ranges, then shard arithmetic).

"token → stream id" times the lookup alone, from precomputed tokens.
"""

from __future__ import annotations

import argparse
import random
import string
from collections.abc import Sequence
from typing import Any

import numpy as np

from timing import best_seconds  # bench/ is the script's directory
from spark.streams import Generation, Generations, build_topology_description, token_of, tokens_of
from spark.streams.tokens import MAX_TOKEN, MIN_TOKEN

SECOND = 1_000_000
T0 = 1_700_000_000 * SECOND
T1 = T0 + 3600 * SECOND


def vnode_tokens(rng: random.Random, count: int) -> list[int]:
    return [rng.randrange(MIN_TOKEN + 1, MAX_TOKEN + 1) for _ in range(count)]


def two_generations(rng: random.Random, nodes: int = 6, vnodes: int = 16, shards: int = 8) -> Generations:
    first = {f"node{i}": vnode_tokens(rng, vnodes) for i in range(nodes)}
    # A node joins: its vnodes split ranges of the first ring.
    second = {**first, "joining": vnode_tokens(rng, vnodes)}
    return Generations(
        [
            Generation(T0, build_topology_description(first, shards=shards, rand=rng)),
            Generation(T1, build_topology_description(second, shards=shards, rand=rng)),
        ]
    )


def bigint_keys(rng: random.Random, count: int) -> list[tuple[Any, ...]]:
    return [(rng.randrange(-(2**63), 2**63),) for _ in range(count)]


def int_text_keys(rng: random.Random, count: int) -> list[tuple[Any, ...]]:
    alphabet = string.ascii_letters + "éü日本"
    return [
        (rng.randrange(-(2**31), 2**31), "".join(rng.choices(alphabet, k=rng.randrange(4, 30)))) for _ in range(count)
    ]


def in_batches(count: int, batch: int) -> list[slice]:
    return [slice(start, start + batch) for start in range(0, count, batch)]


def bench(
    name: str, generations: Generations, keys: Sequence[tuple], types: list[str], args: argparse.Namespace
) -> None:
    timestamps = np.random.default_rng(1).integers(T0, T1 + (T1 - T0), size=len(keys))
    ts_list = timestamps.tolist()
    batches = in_batches(len(keys), args.batch)

    def rows() -> list[bytes]:
        return [generations.get_stream(ts, token_of(key, types)).value for ts, key in zip(ts_list, keys)]

    def vectorized() -> np.ndarray:
        return np.concatenate(
            [generations.stream_ids(timestamps[part], tokens_of(keys[part], types)) for part in batches]
        )

    tokens = np.concatenate([tokens_of(keys[part], types) for part in batches])
    token_list = tokens.tolist()

    def token_rows() -> list[bytes]:
        return [generations.get_stream(ts, token).value for ts, token in zip(ts_list, token_list)]

    def token_vectorized() -> np.ndarray:
        return np.concatenate([generations.stream_ids(timestamps[part], tokens[part]) for part in batches])

    if vectorized().tolist() != rows() or token_vectorized().tolist() != token_rows():
        raise SystemExit(f"{name}: the vectorized and row-at-a-time paths disagree")
    print(f"\n{name}: {len(keys):,} keys, batches of {args.batch:,}, 2 generations")
    for label, row_run, vector_run in (
        ("key -> stream id", rows, vectorized),
        ("token -> stream id", token_rows, token_vectorized),
    ):
        row_rate = len(keys) / best_seconds(row_run, args.repeat)
        vector_rate = len(keys) / best_seconds(vector_run, args.repeat)
        print(
            f"  {label:<19} row at a time {row_rate:>12,.0f} keys/s   vectorized {vector_rate:>12,.0f} keys/s"
            f"   {vector_rate / row_rate:>6.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(1)
    generations = two_generations(rng)
    bench("bigint keys", generations, bigint_keys(rng, args.keys), ["bigint"], args)
    bench("(int, text) keys", generations, int_text_keys(rng, args.keys), ["int", "text"], args)


if __name__ == "__main__":
    main()
