"""A mirror sink's expired values go between micro-batches too: `BatchWriter.purge_when_due`, on a sink of
this test's that counts its purges."""
from __future__ import annotations

import threading
import time

from spark.delivery.pipeline import BatchWriter
from spark.delivery.settings import StreamSettings


class CountingSink:
    merges_cells = True  # a mirror's

    def __init__(self, fails: bool = False) -> None:
        self.purges = 0
        self.fails = fails

    def purge(self) -> None:
        self.purges += 1
        if self.fails:
            raise ConnectionError("database unreachable")


def writer(sink, interval: float = 0.05) -> BatchWriter:
    return BatchWriter(StreamSettings(mirror_purge_interval=interval), sink, keeper=None)


def test_a_purge_comes_once_the_interval_has_passed():
    sink = CountingSink()
    w = writer(sink)
    w.purge_when_due()
    assert sink.purges == 0  # a writer starts as if it had just purged
    time.sleep(0.06)
    w.purge_when_due()
    w.purge_when_due()  # the interval starts again after a purge
    assert sink.purges == 1


def test_no_purge_while_a_batch_is_in_the_sink():
    sink = CountingSink()
    w = writer(sink, interval=0.01)
    time.sleep(0.02)
    in_sink, release = threading.Event(), threading.Event()
    w.write = lambda batch, batch_id: (in_sink.set(), release.wait(5))  # foreachBatch's write, held open
    thread = threading.Thread(target=w, args=(object(), 0))
    thread.start()
    in_sink.wait(5)
    w.purge_when_due(wait=0.05)
    assert sink.purges == 0  # not during the batch: tried again on the next call
    threading.Timer(0.1, release.set).start()
    w.purge_when_due(wait=5)  # waits for the batch to end
    thread.join(5)
    assert sink.purges == 1


def test_a_failed_purge_is_logged_and_tried_again_later(caplog):
    sink = CountingSink(fails=True)
    w = writer(sink, interval=0.01)
    time.sleep(0.02)
    w.purge_when_due()
    assert sink.purges == 1 and "database unreachable" in caplog.text
    w.purge_when_due()
    assert sink.purges == 1



class Keeper:
    """The generations as the job's keeper holds them (no cluster: one version, nothing to load)."""

    version, generations = 1, ()

    def refresh(self) -> None:
        pass


def test_no_purge_while_the_sink_is_given_the_generations():
    sink = CountingSink()
    publishing, release = threading.Event(), threading.Event()
    sink.publish_generations = lambda generations: (publishing.set(), release.wait(5))
    w = BatchWriter(StreamSettings(mirror_purge_interval=0.01), sink, keeper=Keeper())
    time.sleep(0.02)
    w.publish_generations()  # in the background, as at the start of a query
    publishing.wait(5)
    w.purge_when_due()
    assert sink.purges == 0  # the sink is used by one thread at a time
    release.set()
    w.generations_in_sink()
    w.purge_when_due()
    assert sink.purges == 1


def test_a_log_sink_is_never_purged():
    sink = CountingSink()
    sink.merges_cells = False  # a log's: nothing in it expires
    w = writer(sink, interval=0.01)
    time.sleep(0.02)
    w.purge_when_due()
    assert sink.purges == 0
