"""The generations each sink holds: every version published once per sink target, in the background.

A sink is given the generations its rows' stream ids belong to, at start and whenever they change.
At start that is a fixed cost (a Delta sink rewrites two tables: 0.4 s on two cores), begun once
the query has started so that the query's start-up covers part of it (begun before, it slowed the
start-up itself). A writer waits for its target's publication before its rows go in, so a row is
never in a sink before its generation.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait

log = logging.getLogger(__name__)


class Publications:
    """The publication of the generations to each sink target, shared by the writers of one process
    (subscriptions delivering to the same sink): one per version and target, in the order of versions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._targets: dict[str, tuple[int, Future]] = {}

    def publish(self, target: str, version: int, publish: Callable[[], None]) -> Future:
        """The publication of `version` to `target`: the one under way or done, else `publish` run in
        the background once the target's previous publication has ended (a failed one runs again)."""
        with self._lock:
            held = self._targets.get(target)
            if held is not None and held[0] == version and not _failed(held[1]):
                return held[1]
            future: Future = Future()
            threading.Thread(target=_run, args=(future, held[1] if held else None, publish), daemon=True,
                             name="ringtail-generations").start()
            self._targets[target] = (version, future)
            return future


def _failed(future: Future) -> bool:
    return future.done() and future.exception() is not None


def _run(future: Future, previous: Future | None, publish: Callable[[], None]) -> None:
    if previous is not None:
        wait([previous])  # however it ended: versions reach a target in order
    try:
        publish()
    except BaseException as exc:  # the writer waiting for it raises it; the next batch publishes again
        # Not the target: it names the sink's settings, credentials included.
        log.error("publishing the CDC generations to the sink failed: %s: %s", type(exc).__name__, exc)
        future.set_exception(exc)
    else:
        future.set_result(None)
