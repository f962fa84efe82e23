"""One connector per cdc_raw and per state directory: a second one would release segments the first
is still reading, and both would write the same state."""
from __future__ import annotations

import fcntl
import json
import os
import socket
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

LOCK_NAME = ".ringtail-connector.lock"


class AlreadyRunning(RuntimeError):
    """Another connector holds the lock."""


@contextmanager
def exclusive(*directories: Path) -> Iterator[None]:
    """Hold an exclusive lock on each directory (a lock file in it) for the life of the block; the lock
    files name the holder, so a refused start says who has it."""
    with ExitStack() as stack:
        for directory in directories:
            stack.enter_context(_locked(directory))
        yield


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    path = directory / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = Path(path).read_text().strip() or "unknown"
            raise AlreadyRunning(f"another connector holds {directory} ({holder}); one connector per cdc_raw "
                                 f"and state directory") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
