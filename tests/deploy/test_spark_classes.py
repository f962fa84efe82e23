"""The stack's Spark class archive as its users read it from stack.json: after its build in the background
has ended, its JVM options; a build that left no archive, a clear error naming its logs."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from deploy.local.endpoints import StackUnavailable, spark_class_options


def _describe(run_dir, builder_pid: int) -> tuple:
    archive, pid_file, logs = run_dir / "classes.jsa", run_dir / "builder.pid", run_dir / "logs"
    pid_file.write_text(str(builder_pid))
    (run_dir / "stack.json").write_text(json.dumps({"spark-classes": {
        "archive": str(archive), "java_options": f"-XX:SharedArchiveFile={archive}",
        "builder_pid_file": str(pid_file), "logs": str(logs)}}))
    return archive, logs


def test_the_options_come_once_the_build_has_written_the_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("RINGTAIL_STACK_RUN_DIR", str(tmp_path))
    archive = tmp_path / "classes.jsa"
    # A builder that writes the archive as it ends, 1.5 s from now; not this process's child (as the stack's
    # is not its readers'), so nothing here has to reap it.
    script = f"import time; time.sleep(1.5); open({str(archive)!r}, 'w').write('archive')"
    began = time.monotonic()
    started = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "{script}" & echo $!'], capture_output=True,
                             text=True, check=True)
    _describe(tmp_path, int(started.stdout))
    assert spark_class_options(timeout=30) == f"-XX:SharedArchiveFile={archive}"
    assert 1.0 < time.monotonic() - began < 20, "returned before the build ended, or long after"


def test_a_build_that_left_no_archive_is_an_error_naming_its_logs(tmp_path, monkeypatch):
    monkeypatch.setenv("RINGTAIL_STACK_RUN_DIR", str(tmp_path))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    _, logs = _describe(tmp_path, int(ended.stdout))
    with pytest.raises(StackUnavailable, match=f"was not built.*see {logs}"):
        spark_class_options(timeout=30)


def test_a_stack_without_an_archive_adds_no_options(tmp_path, monkeypatch):
    monkeypatch.setenv("RINGTAIL_STACK_RUN_DIR", str(tmp_path))
    (tmp_path / "stack.json").write_text(json.dumps({"cassandra": {}}))
    assert spark_class_options() == ""
