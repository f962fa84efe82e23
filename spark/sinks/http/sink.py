"""HTTP + JSON: each micro-batch POSTed to a URL as JSON arrays of log rows (or, in the image layout, of
images: `http.images`), in chunks.

The executors post the log rows, each task the rows of its partition: a batch's rows are grouped by
partition key (a key's changes in one task, in write-time order, as a Kafka partition keeps them) and
sorted, so a task cuts its part into chunks the same way on every replay. The driver posts the dead
letters and the generations, and carries no row.

At least once, with an `Idempotency-Key` the receiver can use to drop repeats: the key names the
writer (the subscription and its epoch), the batch, the digest of its source offsets, the part (a
digest of its chunks' bodies, `parts`) and the chunk, so a repeat carries the key its first delivery
had, while another batch given the same id (by another checkpoint) never does. Parts are posted side by
side, chunks of one part in order. The `Ringtail-Content` header says what the array holds: `log-rows`,
`dead-letters` or `generations`. Each log row has `late`: true when the job read it more than
`dedup_watermark` after its write, when a replica's copy of the change may have been posted before (the
receiver drops it if it holds that `change_id` and `cdc$batch_seq_no`).

In the image layout (`layout=image`), each task posts the images its part of the batch made
(`sinks.images`, `Ringtail-Content: images`), and the driver writes the merged states once every part and
the dead letters are posted: a replay makes the same images, posted under the same keys. Expired rows'
images are posted between batches (`purge`), under keys naming the purge's time.

A 5xx, 408, 429, a timeout or a refused connection is retried with exponential backoff, up to
`attempts`; then the batch fails (its subscription goes `failing` and is retried whole). Any other
4xx fails the batch at once with the status and the response body: the receiver refused the rows,
and skipping them would lose them. Executors post with the sink's `ca` file: it must be at that path
on them.
"""
from __future__ import annotations

import functools
import itertools
import json
import logging
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from schemas.runtime.access import tls_context
from spark.streams.generations import Generations

from ..contract import MicroBatch, Resolved, Sink, chunks, resolved_rows
from ..images import ImagesAt, ImageWriter
from ..json_rows import NotJsonError, dead_letter_json, generations_json, log_row_texts, resolved_json
from ..parts import part_digest, write_each_part
from .images import JsonImages, PurgeMark

log = logging.getLogger(__name__)
_RETRIED = {408, 429}
_ORDER = ("write_time_us", "change_id", "cdc$batch_seq_no", "keyspace", "table")


class HttpSinkError(RuntimeError):
    """The receiver did not take a chunk: says which batch and chunk, and what it answered."""


@functools.cache
def _tls(ca: Path | None, verify: bool) -> ssl.SSLContext | None:
    """One context per process (the driver's, each executor's Python worker)."""
    if ca is not None:
        return tls_context(ca, None, None, None, verify_hostname=True)
    return None if verify else ssl._create_unverified_context()


def _body(items: list) -> bytes:
    return json.dumps(items, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Poster:
    """How the sink posts, on the driver and on the executors (picklable, so Spark ships it to them)."""

    url: str
    app_id: str
    batch_size: int
    timeout: float
    token: str | None = field(repr=False)
    ca: Path | None
    verify: bool
    attempts: int
    backoff: float

    def post_all(self, content: str, items: Iterable[dict], batch: str) -> int:
        """`items` in chunks of `batch_size`, each under the key of its place in the batch."""
        count = 0
        for index, chunk in enumerate(chunks(items, self.batch_size)):
            self.post(content, _body(chunk), f"{self.app_id}:{batch}:{content}:{index}")
            count += len(chunk)
        return count

    def post_log_part(self, batch: str, batches: Iterator[pa.RecordBatch]) -> int | None:
        """One part of a batch's log rows (run by `parts.write_each_part`), each as its JSON text; how many rows
        it posted (None: it had none)."""
        texts = []
        for rows in batches:
            try:
                texts.extend(log_row_texts(rows).to_pylist())
            except NotJsonError as exc:
                raise HttpSinkError(str(exc)) from None
        return self.post_texts("log-rows", batch, texts)

    def post_image_part(self, batch: str, batches: Iterator[pa.RecordBatch]) -> int | None:
        """One part of a batch's images (each one's JSON as bytes, `value`, as `http.images` makes it)."""
        return self.post_texts("images", batch, [value.decode() for rows in batches
                                                  for value in rows.column("value").to_pylist()])

    def post_texts(self, content: str, batch: str, texts: list[str]) -> int | None:
        """JSON texts in chunks, each under the key of the part's name (`parts.part_digest` of its bodies) and
        its place in it; how many it posted (None: none)."""
        if not texts:
            return None
        bodies = [f"[{','.join(chunk)}]".encode() for chunk in chunks(texts, self.batch_size)]
        part = part_digest(bodies)
        for index, body in enumerate(bodies):
            self.post(content, body, f"{self.app_id}:{batch}:{content}:{part}:{index}")
        return len(texts)

    def post(self, content: str, data: bytes, key: str) -> None:
        headers = {"Content-Type": "application/json", "Idempotency-Key": key, "Ringtail-Content": content}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout,
                                            context=_tls(self.ca, self.verify)) as response:
                    response.read()
                return
            except urllib.error.HTTPError as exc:
                answer = exc.read()[:1000].decode(errors="replace")
                if exc.code < 500 and exc.code not in _RETRIED:
                    raise HttpSinkError(f"{self.url} refused {key} with {exc.code}: {answer}") from None
                reason = f"{exc.code}: {answer}"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                reason = str(getattr(exc, "reason", exc))
            if attempt == self.attempts:
                raise HttpSinkError(f"{self.url} did not take {key} after {attempt} attempts; last: {reason}")
            wait = self.backoff * 2 ** (attempt - 1)
            log.warning("POST %s (%s) attempt %d failed (%s); again in %.1f s", self.url, key, attempt, reason, wait)
            time.sleep(wait)


class HttpSink(Sink):
    def __init__(self, url: str, *, app_id: str = "ringtail", batch_size: int = 500, timeout: float = 10.0,
                 token: str | None = None, verify: bool = True, ca: Path | None = None, attempts: int = 6,
                 backoff: float = 0.5, images: ImagesAt | None = None) -> None:
        self.url, self.app_id = url, app_id
        self.poster = Poster(url, app_id, batch_size, timeout, token, ca, verify, attempts, backoff)
        _tls(ca, verify)  # an unreadable or invalid ca fails here, on the driver
        self.images_at = images
        self.merges_cells = images is not None  # images are made from a mirror's state
        # The log is posted in one action over the batch's partitions, on the executors; images are merged
        # first, table by table.
        self.reads_batch_whole = images is None
        self._images: ImageWriter | None = None
        self._marks = None if images is None else PurgeMark(images.state_path, app_id)
        self._purged = 0  # the time (s) up to which expired rows are imaged

    def prepare(self) -> None:
        """The receiver owns its storage; the image layout finishes a purge a crash cut short, before any batch."""
        if self.images_at is None or self._images is not None:
            return
        self._images = self.images_at.writer(self.app_id, JsonImages())
        self._purged, purging = self._marks.read()
        if purging is not None:
            log.info("a purge of expired rows at %d was cut short: it is made again", purging)
            self._purge(purging)

    def close(self) -> None:
        if self._images is not None:
            self._images.layouts.close()

    def write(self, batch: MicroBatch) -> None:
        name = f"{batch.id}:{batch.offsets}"
        if self._images is None:
            grouped = batch.rows.repartition("partition_key").sortWithinPartitions(*(f"`{c}`" for c in _ORDER))
            sent = write_each_part(grouped, functools.partial(self.poster.post_log_part, name))
            self._post_dead_letters(batch, name)
            log.info("batch %d: %d log rows posted to %s", batch.id, sent, self.url)
            return
        planned = self._images.plan(batch.rows, batch.planned_ms, self._purged)
        try:
            sent = sum(write_each_part(table.records().select("value"),
                                       functools.partial(self.poster.post_image_part, name)) for table in planned)
            self._post_dead_letters(batch, name)
            for table in planned:  # after every image is posted: a replay makes them again
                table.save_states()
        finally:
            for table in planned:
                table.imaged.unpersist()
        log.info("batch %d: %d images posted to %s", batch.id, sent, self.url)

    def _post_dead_letters(self, batch: MicroBatch, name: str) -> None:
        if batch.has_dead_letters():
            letters = batch.dead_letters.orderBy("topic", "partition", "offset").toLocalIterator()
            dead = self.poster.post_all("dead-letters", (dead_letter_json(r) for r in letters), name)
            log.info("batch %d: %d dead letters posted to %s", batch.id, dead, self.url)

    def purge(self) -> None:
        """Post the images of the rows whose cells expired since the last purge, then write their states."""
        if self._images is not None:
            self._purge(int(time.time()))

    def _purge(self, now: int) -> None:
        """The purge at `now` (s), marked begun first: one repeated after a crash makes the same images, a
        table's under the same keys (a table whose states were written already has none left to make)."""
        self._marks.begin(self._purged, now)
        records, saves = self._images.expired(self._purged, now)
        posted = 0
        for target, images in itertools.groupby(records, key=lambda record: record[0]):
            posted += self.poster.post_texts("images", f"purge:{now}:{target}",
                                             [value.decode() for _, _, value in images]) or 0
        for table in saves:
            table.save()
        self._marks.end(now)
        self._purged = now
        if posted:
            log.info("%d images of expired rows posted to %s", posted, self.url)

    def publish_resolved(self, resolved: list[Resolved]) -> None:
        self.poster.post("resolved", _body(resolved_json(resolved_rows(self.app_id, resolved))),
                         f"{self.app_id}:resolved:{max(r.time_us for r in resolved)}")

    def publish_generations(self, generations: Generations) -> None:
        newest = generations.generations[-1].timestamp if generations.generations else 0
        self.poster.post("generations", _body(generations_json(generations)), f"{self.app_id}:generations:{newest}")
