"""PySpark's Python worker daemon (`spark.python.daemon.module`, set by `spark.delivery.pipeline.spark_session`),
with three costs taken out of every task: a re-read of every zip archive on the path (Python 3.10 and 3.11),
the cycle collector's full passes, and the full collection a worker makes after each task over every
module it imported.

Before each task a PySpark worker calls `importlib.invalidate_caches()`. On those versions that re-reads the
directory of every zip archive the worker imported from — pyspark.zip, py4j's, and the spark-core jar Spark
puts on the workers' path (5,000 entries) — once per package imported from each: about 0.2 s of CPU per
task, more than many of the job's tasks take in all (CPython gh-103200; 3.12 re-reads lazily). Here an
archive's directory is read again only when the archive changed on disk, which is what the re-reading is
for.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
import zipimport

# A task holds many live objects that form no cycles: a batch's rows, a mirror's states, a page of a
# snapshot. Each full pass of the cycle collector (by default after every ten passes of the middle
# generation, so every 70,000 net allocations) walks all of them again: a third of a mirror merge's time.
# Passes over the young generations still run, so a cycle dropped soon is still collected soon; a full
# pass now comes a thousand times less often. Set before the workers are forked: each inherits it.
FULL_COLLECTION_EVERY = 10_000  # passes of the middle generation

# What the tasks import, imported once here, before the workers are forked: each worker has them at once
# (about 0.6 s a worker otherwise). They are then frozen (`gc.freeze`), out of the collector's reach: a
# PySpark worker calls `gc.collect()` after every task, which walked them all again (30 ms a task, a tenth
# of the job's Python time). A module that fails to import here is imported, and fails, in the task.
PRELOADED = ("pyspark.worker", "pyarrow", "pandas", "spark.delivery.events", "spark.sinks.registry",
             "spark.snapshot.source")


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def reread_when_changed(invalidate):
    """`zipimporter.invalidate_caches` that calls `invalidate` only when the archive is not as last read."""

    def invalidate_caches(self) -> None:
        stamp = _stamp(self.archive)
        if stamp is None or getattr(self, "_read_as", None) != stamp:
            invalidate(self)
            self._read_as = stamp

    return invalidate_caches


if sys.version_info < (3, 12):
    zipimport.zipimporter.invalidate_caches = reread_when_changed(zipimport.zipimporter.invalidate_caches)


if __name__ == "__main__":
    from pyspark import daemon

    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_EVERY)
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the task that needs it says why
            pass
    gc.freeze()

    daemon.manager()
