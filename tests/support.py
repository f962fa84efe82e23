"""Small helpers shared by tests: waiting for a condition, a port nothing listens on."""
from __future__ import annotations

import socket
import time

import pytest


def wait_for(probe, timeout: float = 15.0, what: str = "condition"):
    """The first truthy value of `probe()`, polled until `timeout`; fails the test otherwise."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout}s waiting for {what}")


def unused_port() -> int:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        return unused.getsockname()[1]
