"""A batch written from the executors, part by part: the rule the SQL sinks' ledgers follow for it.

The driver carries no row. A micro-batch goes in in three steps:

1. the driver claims the batch in the ledger, with its source offsets: a replay of a finished batch is
   skipped there, a batch held with other offsets refused (`ledger`);
2. each task writes its part (the rows of one Spark partition) in a transaction of its own, which also
   claims the part in the ledger of parts under (app id, batch id, the part's digest) and records how
   many of its rows were new; a part some attempt has committed already is skipped;
3. the driver writes the dead letters and marks the batch finished, its rows the sum of its parts', in
   one transaction.

A part is named by the digest of its content, not by its partition's number: a replay cut in other
parts (another split of the same offsets) writes them, and the change's key in the log absorbs a row
already there, so nothing is doubled and nothing skipped. A crash between steps 1 and 3 leaves the batch
claimed and unfinished; its replay writes the parts not committed yet. Two writers of one batch (a
runner that lost its lease without knowing it) wait on each other's claims and write each part once.
"""
from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from .ledger import is_replay

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

# What a task reports: the rows its part added (0 when an earlier attempt had committed it); as Spark
# and as Arrow declare it.
_PART_COUNTS = "written bigint"
_COUNTS = pa.schema([pa.field("written", pa.int64())])


def part_digest(chunks: Iterable[bytes]) -> str:
    """The name of a part whose rows are `chunks` as the sink loads them (their encoding is fixed by the
    rows, so a replay of the same rows has the same name)."""
    digest = hashlib.blake2b(digest_size=16)
    for chunk in chunks:
        digest.update(len(chunk).to_bytes(8, "big"))
        digest.update(chunk)
    return digest.hexdigest()


def write_each_part(frame: DataFrame, write: Callable[[Iterator[pa.RecordBatch]], int | None]) -> int:
    """Step 2 as one action on the executors: `write` takes the Arrow batches of one partition and returns
    how many rows it added (None: it had none); the sum of them all. It runs as a DataFrame action, never
    an RDD one: Spark fills the batch's observations (its counts, `tally`) from the former only, and after
    an RDD action the job would wait for them in vain and then read the batch a second time."""
    return sum(row.written for row in frame.mapInArrow(functools.partial(_part, write), _PART_COUNTS).collect())


def _part(write: Callable[[Iterator[pa.RecordBatch]], int | None],
          batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    written = write(batches)
    if written is not None:
        yield pa.RecordBatch.from_pydict({"written": [written]}, schema=_COUNTS)


def held_to_write(app_id: str, batch_id: int, offsets: str, held: str | None, done: bool) -> bool:
    """For a batch its ledger holds already (`held`: the offsets it was claimed with): whether to write it
    (step 1) — False for a finished replay, True for one begun and not finished; other offsets raise
    (`ledger.BatchMismatch`)."""
    is_replay(app_id, batch_id, offsets, held)
    if done:
        log.info("batch %d of %s is already written; skipped", batch_id, app_id)
    else:
        log.info("batch %d of %s was begun and not finished: its parts not yet written are written", batch_id, app_id)
    return not done
