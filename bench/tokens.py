"""Tokens per second: pure Python vs numpy-vectorized vs the mmh3 fast path.

    python bench/tokens.py [--keys N] [--repeat R]

Two workloads: ASCII text keys (the fast path always applies) and random blobs
(most have a tail byte >= 0x80 and fall back to pure Python).
"""

from __future__ import annotations

import argparse
import random
import string

import mmh3

from timing import best_seconds  # bench/ is the script's directory
from spark.streams.tokens import token_of_key, tokens_of_keys


def text_keys(rng: random.Random, count: int) -> list[bytes]:
    alphabet = string.ascii_letters + string.digits
    return ["".join(rng.choices(alphabet, k=rng.randrange(4, 40))).encode() for _ in range(count)]


def blob_keys(rng: random.Random, count: int) -> list[bytes]:
    return [rng.randbytes(rng.randrange(1, 40)) for _ in range(count)]


def bench(name: str, keys: list[bytes], repeat: int) -> None:
    expected = [token_of_key(key, fast=False) for key in keys]
    if [int(t) for t in tokens_of_keys(keys)] != expected or [token_of_key(k) for k in keys] != expected:
        raise SystemExit(f"{name}: implementations disagree")
    methods = {
        "pure Python": lambda: [token_of_key(key, fast=False) for key in keys],
        "mmh3 fast path": lambda: [token_of_key(key) for key in keys],
        "numpy vectorized": lambda: tokens_of_keys(keys),
        # Not Cassandra-exact for high tail bytes; shown only as the ceiling of a per-key C call.
        "raw mmh3 (ceiling)": lambda: [mmh3.hash64(key, 0, signed=True)[0] for key in keys],
    }
    rates = {method: len(keys) / best_seconds(run, repeat) for method, run in methods.items()}
    fast_share = sum(key[len(key) - len(key) % 16 :].isascii() for key in keys) / len(keys)
    print(f"\n{name}: {len(keys):,} keys, fast path applies to {fast_share:.0%}")
    base = rates["pure Python"]
    for method, rate in rates.items():
        print(f"  {method:<20} {rate:>14,.0f} tokens/s  {rate / base:>7.1f}x pure")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(1)
    bench("ASCII text keys", text_keys(rng, args.keys), args.repeat)
    bench("random blob keys", blob_keys(rng, args.keys), args.repeat)


if __name__ == "__main__":
    main()
