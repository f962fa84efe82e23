"""Ending a streaming query between micro-batches: the running one finishes, no other starts.

`StreamingQuery.stop()` interrupts the query's thread wherever it is. In the middle of a batch that
cuts the sink write (replayed at the next start, a no-op there, but the sink kept writing until the
cut), cancels its Spark jobs (`SPARK_JOB_CANCELLED`, state stores that fail to load), and a Python
`foreachBatch` cut inside a Py4J call comes back to Spark as an error whose message (the Python
traceback, with the Java one inside) Spark matches against `StreamExecution.PROXY_ERROR`, a regex of
the form `((.|\\r\\n|\\r|\\n)*)` that recurses once per character: on a long message the stream thread
dies of a `StackOverflowError`.

Spark has no stop that waits for the running batch. Its trigger loop, though, checks the query's
state before each trigger and ends when the state is TERMINATED — the state `stop()` sets before it
interrupts. Setting that state alone lets the running batch finish (sink write, then commit), starts
no other, and ends the loop by itself, interrupting nothing. The state is Spark's internal
`StreamExecution.state`; where a Spark build lacks it, `request_end` says so and the caller stops the
query the ordinary way.
"""
from __future__ import annotations

import logging

from pyspark import SparkContext
from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger(__name__)

_TERMINATED = "org.apache.spark.sql.execution.streaming.TERMINATED$"


def request_end(query: StreamingQuery) -> bool:
    """Have `query` end once its running micro-batch (if any) is committed, starting no other; at once
    when it waits between triggers. False when this Spark build offers no way to (nothing was done)."""
    try:
        # No public API ends a query between batches: Spark's own state, through Py4J.
        state = SparkContext._jvm.py4j.reflection.ReflectionUtil.classForName(_TERMINATED)
        terminated = state.getField("MODULE$").get(None)
        query._jsq.streamingQuery().state().set(terminated)  # noqa: SLF001
    except Exception as exc:  # noqa: BLE001 - another Spark: the caller falls back to stop()
        log.warning("this Spark cannot end a query between micro-batches (%s: %s); it is stopped at once, its "
                    "running batch replayed at the next start", type(exc).__name__, str(exc).splitlines()[0][:200])
        return False
    return True
