"""Wake-ups on changes of one directory, from inotify: the main loop sleeps until cdc_raw changes
(Cassandra links a segment, rewrites an index) instead of polling it. Where inotify is missing or
refuses a watch (another OS, the kernel's watch limit), `DirectoryWatch` says so once and wakes
nobody; the loop's poll interval then does the waking."""
from __future__ import annotations

import ctypes
import logging
import os
import select
import threading
from pathlib import Path

log = logging.getLogger("ringtail.connector")

# <sys/inotify.h>: an entry created, written, moved in or out, or removed.
_IN_MODIFY, _IN_CLOSE_WRITE, _IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = (
    0x002, 0x008, 0x040, 0x080, 0x100, 0x200)
_CHANGES = _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
_READ_SIZE = 64 * 1024


def _inotify(directory: Path) -> int:
    """A non-blocking inotify descriptor watching `directory`; OSError when there can be none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add_watch = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError) as exc:
        raise OSError(f"inotify is not available here ({exc})") from None
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"inotify_init1: {os.strerror(number)}")
    if add_watch(fd, os.fsencode(directory), _CHANGES) < 0:
        number = ctypes.get_errno()
        os.close(fd)
        raise OSError(number, f"inotify_add_watch {directory}: {os.strerror(number)}")
    return fd


class DirectoryWatch:
    """Sets `wake` whenever an entry of `directory` changes, from a thread of its own. `close` ends
    the thread through a pipe its poll also waits on, so nothing is read, set or logged after it."""

    def __init__(self, directory: Path, wake: threading.Event) -> None:
        self._wake = wake
        try:
            self._fd: int | None = _inotify(directory)
        except OSError as exc:
            log.warning("%s: changes of %s wake nothing; it is looked at every poll interval", exc, directory)
            self._fd = None
        self._stop_read, self._stop_write = os.pipe()
        self._thread = threading.Thread(target=self._run, name="ringtail-wake", daemon=True)

    @property
    def watching(self) -> bool:
        return self._fd is not None

    def start(self) -> DirectoryWatch:
        if self._fd is not None:
            self._thread.start()
        return self

    def _run(self) -> None:
        poller = select.poll()  # not select(): descriptors beyond 1024 are common in a busy process
        poller.register(self._fd, select.POLLIN)
        poller.register(self._stop_read, select.POLLIN)
        while True:
            if any(fd == self._stop_read for fd, _ in poller.poll()):
                return
            try:
                os.read(self._fd, _READ_SIZE)  # which entry changed does not matter: the loop looks at all
            except BlockingIOError:
                continue
            self._wake.set()

    def close(self) -> None:
        os.write(self._stop_write, b"\0")
        if self._thread.is_alive():
            self._thread.join()
        for fd in (self._fd, self._stop_read, self._stop_write):
            if fd is not None:
                os.close(fd)
