"""Command line: ``python -m spark.streams COMMAND ... [--json]``.

Bad input and lookup outcomes (no generation operating, a write outside the
acceptance window) print ``error: ...`` on stderr, with ``--json`` also
``{"error", "kind"}`` on stdout, and exit with status 2.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import InvalidKeyValue, InvalidTopology, StoreUnavailable, StreamsError
from .generations import DEFAULT_LEEWAY, Generation, Generations
from .generations_file import entry_to_json, generations_to_json, read_generations
from .ring import read_ring, read_ring_file
from .stream_id import StreamId
from .tokens import token_of
from .topology import DEFAULT_IGNORE_MSB, TopologyDescription, build_topology_description

EXIT_ERROR = 2
DEFAULT_PORT = 9042
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# Options whose value is a comma list that may start with a minus sign, which argparse takes for an option.
_LIST_OPTIONS = ("--tokens",)


def _id_fields(stream: StreamId) -> dict[str, Any]:
    return {"token": stream.token, "version": stream.version, "index": stream.index, "random": stream.random_bits}


def _stream_fields(stream: StreamId) -> dict[str, Any]:
    return {"stream_id": stream.hex(), **_id_fields(stream)}


def _line(fields: dict[str, Any]) -> str:
    return " ".join(f"{name}={value}" for name, value in fields.items())


def _when(micros: int) -> str:
    try:
        return (_EPOCH + dt.timedelta(microseconds=micros)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"
    except OverflowError:
        return "beyond the calendar"


def _types(text: str) -> list[str]:
    """Comma-separated CQL types; commas inside ``<...>`` belong to a type (``frozen<map<int,text>>``)."""
    types, depth, start = [], 0, 0
    for position, char in enumerate(text):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            types.append(text[start:position].strip())
            start = position + 1
    types.append(text[start:].strip())
    if not all(types):
        raise InvalidKeyValue(f"--type needs one CQL type per key column, comma separated: {text!r}")
    return types


def _token(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    token = token_of(args.values, _types(args.type))
    return {"token": token}, f"token: {token}"


def _decode(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    fields = _id_fields(StreamId.from_hex(args.hex))
    return fields, _line(fields)


def _stream_id(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    if args.action == "decode":
        stream = StreamId.from_hex(args.hex)
    else:
        stream = StreamId.create(args.token, args.index, args.random)
    fields = _stream_fields(stream)
    return fields, _line(fields)


@contextmanager
def _cassandra(args: argparse.Namespace) -> Iterator[Any]:
    """A driver session to `--cassandra`, with the Cassandra security of the server's settings (`--config`,
    RINGTAIL_SERVER_*); connection and query failures become :class:`StoreUnavailable`."""
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable
    from pydantic import ValidationError

    from pydantic_settings import SettingsConfigDict

    from schemas.runtime.access import AccessError, CassandraSecurity
    from schemas.runtime.settings import FileSettings
    from schemas.runtime.session import connect

    class ServerAccess(FileSettings):
        """Of the server's settings, the one this tool needs (the streams library knows no server)."""
        model_config = SettingsConfigDict(env_prefix="RINGTAIL_SERVER_", extra="ignore")
        cassandra_security: CassandraSecurity = CassandraSecurity()

    host, port = args.cassandra
    cluster = None
    try:
        security = ServerAccess.load(args.config).cassandra_security
        cluster, session = connect([host], port, security)
        yield session
    except (DriverException, NoHostAvailable, AccessError, ValidationError, FileNotFoundError) as exc:
        raise StoreUnavailable(f"Cassandra at {host}:{port}: {exc}") from exc
    finally:
        if cluster is not None:
            cluster.shutdown()


def _generations(args: argparse.Namespace, leeway: int = DEFAULT_LEEWAY) -> Generations:
    if args.generations is not None:
        return read_generations(args.generations, leeway=leeway)
    from .storage import DEFAULT_KEYSPACE, GenerationStore

    with _cassandra(args) as session:
        return GenerationStore(session, args.keyspace or DEFAULT_KEYSPACE).load(leeway=leeway)


def _stream(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    token = token_of(args.values, _types(args.type))
    generations = _generations(args, args.leeway)
    if args.now is None:
        generation = generations.operating_at(args.ts)
    else:
        generation = generations.accept_write(args.ts, args.now)
    description = generation.topology()
    placement = description.place(token)
    result = {
        "token": token,
        "generation": generation.timestamp,
        "range": {"start": placement.start, "end": placement.end},
        "index": placement.index,
        "shard": placement.shard,
        "stream_id": placement.stream.hex(),
    }
    text = "\n".join(
        [
            f"token: {token}",
            f"generation: {generation.timestamp} ({_when(generation.timestamp)})",
            f"range: ({placement.start}, {placement.end}] (vnode index {placement.index})",
            f"shard: {placement.shard} of {len(description.entries[placement.index].streams)}",
            f"stream id: {placement.stream.hex()}",
        ]
    )
    return result, text


def _describe_generation(generation: Generation, until: int | None) -> list[str]:
    period = "onwards" if until is None else f"until {until} ({_when(until)})"
    lines = [f"generation {generation.timestamp} ({_when(generation.timestamp)}), {period}"]
    if generation.expired is not None:
        lines.append(f"  expired at {generation.expired} ({_when(generation.expired)})")
    description = generation.description
    if description is None:
        return lines + ["  streams unknown: only the timestamp is published"]
    lines.append(f"  {len(description)} token ranges, {len(description.streams)} streams")
    for index, entry in enumerate(description.entries):
        start, end = description.token_range(index)
        lines.append(f"  range ({start}, {end}] vnode {index}, ignore_msb {entry.sharding_ignore_msb}")
        lines += [f"    shard {shard}: {stream.hex()}" for shard, stream in enumerate(entry.streams)]
    return lines


def _describe(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    generations = _generations(args).generations
    successors = [generation.timestamp for generation in generations[1:]] + [None]
    lines = [line for g, until in zip(generations, successors) for line in _describe_generation(g, until)]
    return generations_to_json(generations), "\n".join(lines) or "no generations published"


def _ring(args: argparse.Namespace) -> tuple[dict[str, list[int]], dict[str, int], dict[str, int]]:
    """Node → tokens from every source given, with the per-node settings of a ring file."""
    ring: dict[str, list[int]] = {}
    shards: dict[str, int] = {}
    msb: dict[str, int] = {}
    if args.ring:
        parsed = read_ring_file(args.ring)
        ring, shards, msb = parsed.ring, parsed.shards, parsed.ignore_msb
    if args.cassandra:
        with _cassandra(args) as session:
            ring.update({node: list(tokens) for node, tokens in read_ring(session).items()})
    ring.update(dict(args.node))
    if args.tokens:
        ring["node"] = args.tokens
    if not ring:
        raise InvalidTopology("generation needs a ring: --tokens, --node, --ring or --cassandra")
    return ring, shards, msb


def _generation(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    ring, node_shards, node_msb = _ring(args)
    description = build_topology_description(
        ring,
        shards={node: node_shards.get(node, args.shards) for node in ring},
        ignore_msb={node: node_msb.get(node, args.ignore_msb) for node in ring},
        rand=args.seed,
    )
    result: dict[str, Any] = {"entries": [entry_to_json(entry, sharding=False) for entry in description.entries]}
    lines = []
    for index, entry in enumerate(description.entries):
        start, end = description.token_range(index)
        lines.append(f"range ({start}, {end}] ignore_msb={entry.sharding_ignore_msb}")
        lines += [f"  shard {shard}: {_line(_stream_fields(stream))}" for shard, stream in enumerate(entry.streams)]
    if args.token:
        result["lookups"] = _lookups(description, args.token)
        lines += [f"token {lookup['token']} -> {lookup['stream_id']}" for lookup in result["lookups"]]
    return result, "\n".join(lines)


def _lookups(description: TopologyDescription, tokens: Sequence[int]) -> list[dict[str, Any]]:
    return [{"token": token, "stream_id": description.get_stream(token).hex()} for token in tokens]


def _parse_node(text: str) -> tuple[str, list[int]]:
    node, _, tokens = text.partition("=")
    if not node or not tokens:
        raise argparse.ArgumentTypeError(f"expected NODE=TOKEN[,TOKEN...], got {text!r}")
    return node, _parse_tokens(tokens)


def _parse_tokens(text: str) -> list[int]:
    try:
        return [int(token) for token in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"tokens must be comma-separated integers: {text!r}") from None


def _parse_address(text: str) -> tuple[str, int]:
    try:
        parts = urlsplit(f"//{text}")
        if parts.hostname and not (parts.path or parts.query or parts.fragment):
            return parts.hostname, parts.port or DEFAULT_PORT
    except ValueError:
        pass  # a port out of range or not a number
    raise argparse.ArgumentTypeError(f"expected HOST[:PORT], got {text!r}")


def _add_key(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--type", required=True, help="CQL type per key column, comma separated: int,text")
    parser.add_argument("values", nargs="+", help="one value per key column; blobs as 0x...")


def _add_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--generations", type=Path, metavar="FILE", help="generations JSON file")
    source.add_argument("--cassandra", type=_parse_address, metavar="HOST[:PORT]", help="read the ringtail keyspace")
    parser.add_argument("--keyspace", help="keyspace with --cassandra (default ringtail_cdc)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spark.streams", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--config", type=Path, metavar="FILE.yaml",
                        help="with --cassandra: the server's settings file, for its cassandra_security "
                             "(RINGTAIL_SERVER_* variables override it)")
    # After the command too; SUPPRESS keeps an absent flag from resetting one given before it.
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON instead of text")
    commands = parser.add_subparsers(dest="command", required=True)

    token = commands.add_parser("token", parents=[output], help="Murmur3 token of a partition key")
    _add_key(token)
    token.set_defaults(run=_token)

    decode = commands.add_parser(
        "decode", parents=[output], help="token, version, vnode index and random bits of a stream id"
    )
    decode.add_argument("hex", help="32 hex digits, optionally 0x-prefixed")
    decode.set_defaults(run=_decode)

    stream_id = commands.add_parser("stream-id", help="encode or decode a CDC stream id")
    actions = stream_id.add_subparsers(dest="action", required=True)
    encode = actions.add_parser("encode", parents=[output], help="stream id from its fields")
    encode.add_argument("--token", type=int, required=True)
    encode.add_argument("--index", type=int, required=True, help="vnode index")
    encode.add_argument("--random", type=int, default=0, help="random bits (38 are kept)")
    decode_id = actions.add_parser("decode", parents=[output], help="fields of a hex stream id")
    decode_id.add_argument("hex", help="32 hex digits, optionally 0x-prefixed")
    stream_id.set_defaults(run=_stream_id)

    generation = commands.add_parser(
        "generation", parents=[output], help="topology description ScyllaDB would build for a ring"
    )
    generation.add_argument("--tokens", type=_parse_tokens, metavar="T1,T2,...", help="vnode tokens of one node")
    generation.add_argument(
        "--node", type=_parse_node, action="append", default=[], metavar="NODE=T1,T2", help="a node's vnode tokens"
    )
    generation.add_argument("--ring", type=Path, help="JSON file: node -> tokens")
    generation.add_argument("--cassandra", type=_parse_address, metavar="HOST[:PORT]", help="the live cluster's ring")
    generation.add_argument("--shards", type=int, default=1, help="shards per node (default 1)")
    generation.add_argument("--ignore-msb", type=int, default=DEFAULT_IGNORE_MSB, help="sharding_ignore_msb")
    generation.add_argument("--seed", type=int, help="seed of the random stream id bits")
    generation.add_argument("--token", type=int, action="append", default=[], help="also look up this token")
    generation.set_defaults(run=_generation)

    stream = commands.add_parser(
        "stream", parents=[output], help="generation, token range, shard and stream id of a key written at --ts"
    )
    stream.add_argument("--ts", type=int, required=True, metavar="MICROS", help="write timestamp")
    stream.add_argument(
        "--now", type=int, metavar="MICROS", help="coordinator time: also apply the write acceptance window"
    )
    stream.add_argument(
        "--leeway", type=int, default=DEFAULT_LEEWAY, metavar="MICROS",
        help="acceptance leeway with --now (default 5 s)",
    )
    _add_source(stream)
    _add_key(stream)
    stream.set_defaults(run=_stream)

    describe = commands.add_parser("describe", parents=[output], help="generations and their streams")
    _add_source(describe)
    describe.set_defaults(run=_describe)
    return parser


def _attach_list_values(argv: list[str]) -> list[str]:
    """``--tokens -5,7`` → ``--tokens=-5,7``."""
    glued: list[str] = []
    for arg in argv:
        if glued and glued[-1] in _LIST_OPTIONS and arg.startswith("-") and "," in arg:
            glued[-1] = f"{glued[-1]}={arg}"
        else:
            glued.append(arg)
    return glued


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(_attach_list_values(list(sys.argv[1:] if argv is None else argv)))
    try:
        result, text = args.run(args)
    except StreamsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if args.json:
            print(json.dumps({"error": str(exc), "kind": type(exc).__name__}))
        return EXIT_ERROR
    print(json.dumps(result) if args.json else text)
    return 0
