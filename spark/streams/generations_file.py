"""Generations as plain JSON, for files and for ``--json`` output.

::

    {"generations": [
        {"timestamp": 1700000000000000,          # microseconds, like write timestamps
         "expired": null,                        # microseconds, once known
         "entries": [                            # null when only the timestamp is known
             {"token_range_end": -100, "sharding_ignore_msb": 12,
              "streams": ["0x...", "0x..."]}]}]} # shard order
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import InvalidGenerationsFile, StreamsError
from .generations import DEFAULT_LEEWAY, Generation, Generations
from .stream_id import StreamId
from .topology import TokenRangeDescription, TopologyDescription


def entry_to_json(entry: TokenRangeDescription, *, sharding: bool = True) -> dict[str, Any]:
    fields: dict[str, Any] = {"token_range_end": entry.token_range_end}
    if sharding:
        fields["sharding_ignore_msb"] = entry.sharding_ignore_msb
    fields["streams"] = [stream.hex() for stream in entry.streams]
    return fields


def generations_to_json(generations: Iterable[Generation]) -> dict[str, Any]:
    return {
        "generations": [
            {
                "timestamp": generation.timestamp,
                "expired": generation.expired,
                "entries": None
                if generation.description is None
                else [entry_to_json(entry) for entry in generation.description.entries],
            }
            for generation in generations
        ]
    }


def _entry_from_json(fields: dict[str, Any]) -> TokenRangeDescription:
    return TokenRangeDescription(
        _integer(fields["token_range_end"]),
        tuple(StreamId.from_hex(text) for text in fields["streams"]),
        _integer(fields["sharding_ignore_msb"]),
    )


def _integer(value: Any) -> int:
    # JSON has one number type; 12.0 or true must not pass for a token or a timestamp.
    if type(value) is not int:
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def generations_from_json(data: Any, *, leeway: int = DEFAULT_LEEWAY) -> Generations:
    try:
        generations = []
        for fields in data["generations"]:
            entries = fields.get("entries")
            expired = fields.get("expired")
            generations.append(
                Generation(
                    _integer(fields["timestamp"]),
                    None if entries is None else TopologyDescription(map(_entry_from_json, entries)),
                    None if expired is None else _integer(expired),
                )
            )
        return Generations(generations, leeway=leeway)
    except StreamsError as exc:
        raise InvalidGenerationsFile(f"invalid generations: {exc}") from exc
    except KeyError as exc:
        raise InvalidGenerationsFile(f"not a generations document: no {exc} field") from exc
    except (TypeError, AttributeError) as exc:
        raise InvalidGenerationsFile(f"not a generations document: {exc}") from exc


def write_generations(path: Path | str, generations: Iterable[Generation]) -> None:
    Path(path).write_text(json.dumps(generations_to_json(generations), indent=1) + "\n")


def read_generations(path: Path | str, *, leeway: int = DEFAULT_LEEWAY) -> Generations:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InvalidGenerationsFile(f"cannot read generations file {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise InvalidGenerationsFile(f"generations file {path} is not JSON: {exc}") from exc
    return generations_from_json(data, leeway=leeway)
