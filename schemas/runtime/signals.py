"""SIGTERM and SIGINT for a long-running process: the first asks it to stop, a second exits at once.

The stop is asked for from a thread of its own, never from the handler: a handler runs between two
bytecodes of the main thread, which may at that moment hold the lock of the very `threading.Event`
the stop sets (the main loop waits on it), and taking it again there deadlocks the process for good.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Callable


def on_stop_signals(stop: Callable[[str], None], at_once: Callable[[str], None]) -> None:
    """Call `stop(signal name)` on the first SIGTERM or SIGINT; on a second, `at_once(name)`, then
    exit with 128 + the signal's number without any clean-up."""
    first = []

    def handler(signum: int, _frame) -> None:
        name = signal.Signals(signum).name
        if first:
            at_once(name)
            logging.shutdown()
            os._exit(128 + signum)
        first.append(name)
        threading.Thread(target=stop, args=(name,), name="ringtail-stop", daemon=True).start()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, handler)
