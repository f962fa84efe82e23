"""When the stack counts a service as ended: a process killed but not yet reaped by its parent, a
process other than the stack (a zombie), has ended; a running one has not."""
import os
import signal
import subprocess
import sys
import time

from deploy.local.stack import ended, pid_alive, zombie


def test_a_killed_service_its_parent_has_not_reaped_counts_as_ended(tmp_path):
    # A parent that starts the service and never reaps it; a shell may reap it before its own `exec`.
    never_reaps = (
        "import subprocess, time; child = subprocess.Popen(['sleep', '60']); "
        "print(child.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", never_reaps], stdout=subprocess.PIPE, text=True)
    service = int(parent.stdout.readline())
    pid_file = tmp_path / "service.pid"
    pid_file.write_text(f"{service}\n")
    try:
        assert pid_alive(pid_file) == service and not ended(pid_file, 0)
        os.kill(service, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not zombie(service):  # the kernel marks it so once its threads are gone
            assert time.monotonic() < deadline, "the killed service never became a zombie"
            time.sleep(0.01)
        assert pid_alive(pid_file) is None and ended(pid_file, 0)
    finally:
        parent.kill()
        parent.wait()
