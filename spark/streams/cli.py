"""Command line: ``python -m spark.streams {token,stream-id,generation} ... [--json]``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import StreamsError
from .stream_id import StreamId
from .tokens import token_of
from .topology import DEFAULT_IGNORE_MSB, TokenRangeDescription, TopologyDescription, build_topology_description


def _stream_fields(stream: StreamId) -> dict[str, Any]:
    return {
        "stream_id": stream.hex(),
        "token": stream.token,
        "index": stream.index,
        "version": stream.version,
        "random": stream.random_bits,
    }


def _stream_line(fields: dict[str, Any]) -> str:
    return " ".join(f"{name}={value}" for name, value in fields.items())


def _token(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    types = [name for name in args.type.split(",") if name]
    token = token_of(args.values, types)
    return {"token": token}, f"token: {token}"


def _stream_id(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    if args.action == "decode":
        stream = StreamId.from_hex(args.hex)
    else:
        stream = StreamId.create(args.token, args.index, args.random)
    fields = _stream_fields(stream)
    return fields, _stream_line(fields)


def _parse_node(text: str) -> tuple[str, list[int]]:
    node, _, tokens = text.partition("=")
    if not node or not tokens:
        raise argparse.ArgumentTypeError(f"expected NODE=TOKEN[,TOKEN...], got {text!r}")
    try:
        return node, [int(token) for token in tokens.split(",")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"tokens must be integers: {text!r}") from exc


def _load_ring(path: Path) -> tuple[dict[str, list[int]], dict[str, int], dict[str, int]]:
    """Ring JSON: ``{"node": [tokens]}`` or ``{"node": {"tokens": [...], "shards": n, "ignore_msb": m}}``.

    Tokens may be strings, as ``system.peers`` holds them.
    """
    ring, shards, ignore_msb = {}, {}, {}
    for node, spec in json.loads(path.read_text()).items():
        if isinstance(spec, dict):
            ring[node] = [int(token) for token in spec["tokens"]]
            if "shards" in spec:
                shards[node] = int(spec["shards"])
            if "ignore_msb" in spec:
                ignore_msb[node] = int(spec["ignore_msb"])
        else:
            ring[node] = [int(token) for token in spec]
    return ring, shards, ignore_msb


def _generation(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    ring, node_shards, node_msb = _load_ring(args.ring) if args.ring else ({}, {}, {})
    ring.update(dict(args.node))
    description = build_topology_description(
        ring,
        shards={node: node_shards.get(node, args.shards) for node in ring},
        ignore_msb={node: node_msb.get(node, args.ignore_msb) for node in ring},
        rand=args.seed,
    )
    result = {"entries": [_entry_fields(entry) for entry in description.entries]}
    lines = [
        f"range_end={entry['token_range_end']} ignore_msb={entry['sharding_ignore_msb']}\n"
        + "\n".join(f"  shard {shard}: {_stream_line(fields)}" for shard, fields in enumerate(entry["streams"]))
        for entry in result["entries"]
    ]
    if args.token:
        result["lookups"] = _lookups(description, args.token)
        lines += [f"token {lookup['token']} -> {lookup['stream_id']}" for lookup in result["lookups"]]
    return result, "\n".join(lines)


def _entry_fields(entry: TokenRangeDescription) -> dict[str, Any]:
    return {
        "token_range_end": entry.token_range_end,
        "sharding_ignore_msb": entry.sharding_ignore_msb,
        "streams": [_stream_fields(stream) for stream in entry.streams],
    }


def _lookups(description: TopologyDescription, tokens: Sequence[int]) -> list[dict[str, Any]]:
    return [{"token": token, "stream_id": description.get_stream(token).hex()} for token in tokens]


def _parser() -> argparse.ArgumentParser:
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser = argparse.ArgumentParser(prog="python -m spark.streams", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    token = commands.add_parser("token", parents=[output], help="Murmur3 token of a partition key")
    token.add_argument("--type", required=True, help="CQL type per key column, comma separated: int,text")
    token.add_argument("values", nargs="+", help="one value per key column; blobs as 0x...")
    token.set_defaults(run=_token)

    stream = commands.add_parser("stream-id", help="encode or decode a CDC stream id")
    actions = stream.add_subparsers(dest="action", required=True)
    encode = actions.add_parser("encode", parents=[output], help="stream id from its fields")
    encode.add_argument("--token", type=int, required=True)
    encode.add_argument("--index", type=int, required=True, help="vnode index")
    encode.add_argument("--random", type=int, default=0, help="random bits (38 are kept)")
    decode = actions.add_parser("decode", parents=[output], help="fields of a hex stream id")
    decode.add_argument("hex", help="32 hex digits, optionally 0x-prefixed")
    stream.set_defaults(run=_stream_id)

    generation = commands.add_parser(
        "generation", parents=[output], help="topology description ScyllaDB would build for a ring"
    )
    generation.add_argument("--ring", type=Path, help="JSON file: node -> tokens")
    generation.add_argument(
        "--node", type=_parse_node, action="append", default=[], metavar="NODE=T1,T2", help="a node's vnode tokens"
    )
    generation.add_argument("--shards", type=int, default=1, help="shards per node (default 1)")
    generation.add_argument("--ignore-msb", type=int, default=DEFAULT_IGNORE_MSB, help="sharding_ignore_msb")
    generation.add_argument("--seed", type=int, help="seed of the random stream id bits")
    generation.add_argument("--token", type=int, action="append", default=[], help="also look up this token")
    generation.set_defaults(run=_generation)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "generation" and not (args.ring or args.node):
        parser.error("generation needs --ring or --node")
    try:
        result, text = args.run(args)
    except StreamsError as exc:
        if args.json:
            print(json.dumps({"error": str(exc), "kind": type(exc).__name__}))
        else:
            print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result) if args.json else text)
    return 0
