"""Timing shared by the benchmarks: the best of several runs (the least disturbed by a noisy machine)."""
from __future__ import annotations

import time
from collections.abc import Callable


def best_seconds(run: Callable[[], object], repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings)
