"""HTTP + JSON: each micro-batch POSTed to a URL as JSON arrays of log rows, in chunks.

At least once, with an `Idempotency-Key` the receiver can use to drop repeats: the key names the
writer (the subscription and its epoch), the batch, the digest of its source offsets and the chunk,
and a replayed batch is cut into the same chunks (rows in a fixed order), so a repeat carries the key
its first delivery had, while another batch given the same id (by another checkpoint) never does. The
`Ringtail-Content` header says what the array holds: `log-rows`, `dead-letters` or `generations`. Each
log row has `late`: true when the job read it more than `dedup_watermark` after its write, when a
replica's copy of the change may have been posted before (the receiver drops it if it holds that
`change_id` and `cdc$batch_seq_no`).

A 5xx, 408, 429, a timeout or a refused connection is retried with exponential backoff, up to
`attempts`; then the batch fails (its subscription goes `failing` and is retried whole). Any other
4xx fails the batch at once with the status and the response body: the receiver refused the rows,
and skipping them would lose them.
"""
from __future__ import annotations

import json
import logging
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from connector.access import tls_context
from spark.streams.generations import Generations

from .. import MicroBatch, Sink, chunks
from ..json_rows import dead_letter_json, generations_json, log_row_json

log = logging.getLogger(__name__)
_RETRIED = {408, 429}
_ORDER = ("write_time_us", "change_id", "cdc$batch_seq_no", "keyspace", "table")


class HttpSinkError(RuntimeError):
    """The receiver did not take a chunk: says which batch and chunk, and what it answered."""


class HttpSink(Sink):
    def __init__(self, url: str, *, app_id: str = "ringtail", batch_size: int = 500, timeout: float = 10.0,
                 token: str | None = None, verify: bool = True, ca: Path | None = None, attempts: int = 6,
                 backoff: float = 0.5) -> None:
        self.url, self.app_id, self.batch_size, self.timeout = url, app_id, batch_size, timeout
        self.token, self.attempts, self.backoff = token, attempts, backoff
        if ca is not None:
            self._tls = tls_context(ca, None, None, None, verify_hostname=True)
        else:
            self._tls = None if verify else ssl._create_unverified_context()

    def prepare(self) -> None:
        pass  # the receiver owns its storage

    def close(self) -> None:
        pass  # nothing is held between batches

    def write(self, batch: MicroBatch) -> None:
        rows, dead_letters, batch_id = batch.rows, batch.dead_letters, batch.id
        ordered = rows.orderBy(*(f"`{c}`" for c in _ORDER)).toLocalIterator()
        name = f"{batch_id}:{batch.offsets}"
        sent = self._post_all("log-rows", (log_row_json(r) for r in ordered), name)
        letters = dead_letters.orderBy("topic", "partition", "offset").toLocalIterator()
        dead = self._post_all("dead-letters", (dead_letter_json(r) for r in letters), name)
        log.info("batch %d: %d log rows and %d dead letters posted to %s", batch_id, sent, dead, self.url)

    def publish_generations(self, generations: Generations) -> None:
        body = generations_json(generations)
        newest = generations.generations[-1].timestamp if generations.generations else 0
        self._post("generations", body, f"{self.app_id}:generations:{newest}")

    def _post_all(self, content: str, items: Iterable[dict], batch: str) -> int:
        count = 0
        for index, chunk in enumerate(chunks(items, self.batch_size)):
            self._post(content, chunk, f"{self.app_id}:{batch}:{content}:{index}")
            count += len(chunk)
        return count

    def _post(self, content: str, body: list, key: str) -> None:
        data = json.dumps(body, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", "Idempotency-Key": key, "Ringtail-Content": content}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout, context=self._tls) as response:
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
