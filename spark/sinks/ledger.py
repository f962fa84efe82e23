"""The rule every sink's ledger follows: a batch id is a replay only with the offsets it was written with.

A sink records, with each batch id it writes, the digest of the source offsets the batch covered
(`spark.delivery.checkpoint.planned_batch`). Spark replays a batch with the same id and offsets, and only
the newest one a sink holds; a batch whose id the sink holds with other offsets, or older than the
newest it holds, is another batch that a second checkpoint numbered the same way. Skipping it would
lose its changes in silence; it is refused instead (`BatchMismatch`), and nothing of it is written.
"""
from __future__ import annotations


class BatchMismatch(Exception):
    """A batch id the sink holds already, for other source offsets: not a replay."""

    def __init__(self, app_id: str, batch_id: int, offsets: str, written: str | None,
                 newest: int | None = None) -> None:
        self.app_id, self.batch_id, self.offsets, self.written, self.newest = app_id, batch_id, offsets, written, newest
        if newest is not None and newest > batch_id:
            held = f"holds batch {newest} of {app_id} already, so batch {batch_id} cannot be a replay"
        else:
            held = (f"holds batch {batch_id} of {app_id} for other source offsets ({written} there,"
                    f" {offsets} now)")
        super().__init__(
            f"the sink {held}: it is another batch with the same id, and none of it is written. The query's "
            "checkpoint is not the one that wrote this sink: runners that do not share checkpoint_dir, or a "
            "checkpoint deleted or reset outside ringtail. Reset the subscription (or give the job a new app_id) "
            "to start over, or restore the checkpoint that wrote the sink")


def is_replay(app_id: str, batch_id: int, offsets: str, written: str | None) -> bool:
    """For a ledger keeping every batch: a batch whose id it holds, `written` with those offsets (None:
    recorded before ledgers kept them, taken on trust), is a replay; with others it raises."""
    if written is None or written == offsets:
        return True
    raise BatchMismatch(app_id, batch_id, offsets, written)


def is_newest_replay(app_id: str, batch_id: int, offsets: str, newest: int | None, written: str | None) -> bool:
    """For a ledger keeping the newest batch only (`newest`, `written` with those offsets): whether
    `batch_id` is its replay (skip it), a new batch (False), or neither (raises)."""
    if newest is None or batch_id > newest:
        return False
    if batch_id < newest:
        raise BatchMismatch(app_id, batch_id, offsets, None, newest)
    return is_replay(app_id, batch_id, offsets, written)
