"""Wake-ups on changes of one directory, from watchdog's observer (inotify on Linux): the main loop
sleeps until cdc_raw changes (Cassandra links a segment, rewrites an index) instead of polling it. Where
no watch can be had (no inotify, the kernel's watch limit), `DirectoryWatch` says so once and wakes
nobody; the loop's poll interval then does the waking.

Stopping is where watchdog 7.1's inotify emitter needs care: its `stop` drops the emitter's watch group
from another thread while the emitter's own thread may be between its loop's "keep running?" and its
read, which then finds no group and logs an error (an event arriving during a stop made that happen
within seconds under Cassandra's index rewrites). `_InotifyEmitter` keeps the group until its thread
ends: the stop only deactivates it, which ends the read, and the loop ends on the stop it sees next.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

import sys

from watchdog.events import (FileClosedEvent, FileCreatedEvent, FileDeletedEvent, FileModifiedEvent,
                             FileMovedEvent, FileSystemEvent, FileSystemEventHandler)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

log = logging.getLogger("ringtail.connector")

# An entry created (a segment linked), written or closed after writing (an index rewritten), moved in or
# out, or removed. Not opened or read: the connector's own reads of cdc_raw wake nothing.
_CHANGES = (FileCreatedEvent, FileModifiedEvent, FileClosedEvent, FileMovedEvent, FileDeletedEvent)


if sys.platform.startswith("linux"):
    from watchdog.observers.inotify import InotifyEmitter, InotifyObserver

    class _InotifyEmitter(InotifyEmitter):
        def on_thread_stop(self) -> None:
            group = self._inotify
            if group is not None:
                group.deactivate()  # ends a read in progress; the group stays for the thread to see

    def _observer() -> BaseObserver:
        observer = InotifyObserver()
        observer._emitter_class = _InotifyEmitter
        return observer
else:
    def _observer() -> BaseObserver:
        return Observer()


class _Wake(FileSystemEventHandler):
    """Sets the event on any change of the directory's entries (which one does not matter: the loop looks
    at all), until silenced."""

    def __init__(self, wake: threading.Event) -> None:
        self._wake = wake
        self.silenced = False

    def on_any_event(self, event: FileSystemEvent) -> None:
        if not self.silenced:
            self._wake.set()


class DirectoryWatch:
    """Sets `wake` whenever an entry of `directory` changes, from watchdog's threads. After `close`,
    nothing is set or logged."""

    def __init__(self, directory: Path, wake: threading.Event) -> None:
        self._directory = directory
        self._handler = _Wake(wake)
        self._observer: BaseObserver | None = None
        self._watch: ObservedWatch | None = None

    @property
    def watching(self) -> bool:
        return self._watch is not None

    def start(self) -> DirectoryWatch:
        try:
            self._observer = _observer()  # an inotify instance of its own: the kernel may refuse one
            self._observer.name = "ringtail-wake"
            self._watch = self._observer.schedule(self._handler, str(self._directory), recursive=False,
                                                  event_filter=list(_CHANGES))
            self._observer.start()
        except OSError as exc:  # the watch failed as the observer started it: no emitter, no thread
            log.warning("%s: changes of %s wake nothing; it is looked at every poll interval", exc, self._directory)
            self._watch = None
        return self

    def close(self) -> None:
        self._handler.silenced = True
        if self._watch is not None:
            self._observer.unschedule(self._watch)  # the emitter stops reading before its descriptor goes
        if self._observer is not None and self._observer.is_alive():
            self._observer.stop()
            self._observer.join()
