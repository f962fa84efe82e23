"""The HTTP sink's images (`sinks.images`): each image a JSON object, posted in arrays with
`Ringtail-Content: images`:

    {"key": {…}, "before": {…} | null, "after": {…} | null, "op": "c" | "u" | "d" | "r",
     "ts_ms": …, "source": {…}}

`key` holds the primary key columns, `before` and `after` every column, in the JSON forms of the log rows'
`columns`; `op`, `ts_ms` and `source` are the Avro envelope's (`schemas.avro.image`). A removal is its image
with `after` null: there is no compaction to send a tombstone for.

A purge's images are made from the mirror's states as of the purge's time; `PurgeMark` keeps that time
before the images are posted, so a purge repeated after a crash posts the same images under the same keys.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from schemas.avro.image import ImageSchemas
from spark.location import Location
from spark.mirror.images import RowImage
from spark.mirror.layout import MirrorLayout

from ..images import Encoded, Envelope


@dataclass(frozen=True)
class JsonImage:
    """An image as the JSON object posted (`ImageEncoder`), keyed by its key's JSON; picklable."""

    def __call__(self, schemas: ImageSchemas, image: RowImage, envelope: Envelope) -> Encoded:
        value = {"key": image.key, **schemas.envelope(envelope.op, image.before, image.after, envelope.source,
                                                      envelope.made)}
        return [(_json(image.key), _json(value))]


class JsonImages:
    """The HTTP sink's `ImageFormat`: a table's images go under its name, `<keyspace>.<table>`."""

    def table(self, layout: MirrorLayout) -> tuple[str, JsonImage]:
        return f"{layout.keyspace}.{layout.table}", JsonImage()


def _json(value: object) -> bytes:
    """Written by the native core (`json_bytes`: this encoder's bytes; the encoder took 3 times as long), which leaves
    to the encoder what it does not write as the encoder would."""
    from schemas._native import json_bytes

    text = json_bytes(value)
    return _ENCODE(value).encode() if text is None else text


# The mirror's values hold NaN and the infinities as strings: a float JSON cannot hold is a defect. One encoder
# for every image: `json.dumps` with options makes one a call.
_ENCODE = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


class PurgeMark:
    """When the sink's purges ran, in `<state_path>/purges/<app id>.json`: `purged`, the time (s) up to
    which expired rows are imaged, and `purging`, the time of a purge begun whose states are not all
    written yet (its images may have been posted)."""

    def __init__(self, state_path: str, app_id: str) -> None:
        self.location = Location(state_path) / "purges" / f"{app_id}.json"

    def read(self) -> tuple[int, int | None]:
        """(purged, purging); (0, None) before the first purge."""
        if not self.location.exists():
            return 0, None
        try:
            mark = json.loads(self.location.read_text())
            return int(mark["purged"]), None if mark.get("purging") is None else int(mark["purging"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{self.location}: not a purge mark ({exc})") from None

    def begin(self, purged: int, purging: int) -> None:
        self.location.write_text(json.dumps({"purged": purged, "purging": purging}))

    def end(self, purged: int) -> None:
        self.location.write_text(json.dumps({"purged": purged, "purging": None}))
