"""Stop signals in a real child process whose main thread spins on the very Event the stop sets: the
first SIGTERM stops it cleanly every time (a handler that set the Event itself could deadlock), a
second one exits at once with 128 + the signal's number."""
import signal
import subprocess
import sys
import time

from tests.unit.connector.commitlog.testdata import REPO_ROOT

CHILD = """
import sys, threading
from schemas.runtime.signals import on_stop_signals
stop = threading.Event()
stops = sys.argv[1] == "stops"
on_stop_signals(lambda name: stop.set() if stops else None, lambda name: print("again", name, flush=True))
print("ready", flush=True)
while not stop.wait(0):  # takes and releases the Event's lock all the time
    pass
print("stopped", flush=True)
"""


def child(mode: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", CHILD, mode], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "ready\n"
    return process


def test_the_first_signal_stops_the_main_loop_every_time():
    for _ in range(10):
        process = child("stops")
        time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=10)
        assert (process.returncode, out) == (0, "stopped\n")


def test_a_second_signal_exits_at_once():
    process = child("never")
    process.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=10)
    assert (process.returncode, out) == (128 + signal.SIGINT, "again SIGINT\n")
