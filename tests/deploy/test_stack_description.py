"""What the stack's description says of its JVMs: the options each running one was started with, not those of
the latest start, which leaves running services as they are (the tests start the stack with their own)."""
import dataclasses
import os

from deploy.local.stack import Settings, running_jvm_options, services

SLOWED = "-XX:TieredStopAtLevel=1"


def test_the_description_gives_the_options_the_running_jvms_were_started_with(tmp_path, monkeypatch):
    monkeypatch.setenv("RINGTAIL_STACK_RUN_DIR", str(tmp_path))
    monkeypatch.delenv("RINGTAIL_STACK_JVM_OPTIONS", raising=False)
    tests = dataclasses.replace(Settings.from_env(), jvm_options=(SLOWED,))  # a start with the tests' options
    every = services(tests)
    by_kind = {s.kind: s for s in every if s.index == 1}

    def running(kind: str, record: str | None) -> None:
        service = by_kind[kind]
        service.pid_file.parent.mkdir(parents=True, exist_ok=True)
        service.pid_file.write_text(f"{os.getpid()}\n")  # alive
        if record is not None:
            service.jvm_record.write_text(record)

    assert running_jvm_options(tests, every) == []  # nothing runs
    running("cassandra", "")  # started earlier without options: the new start left them running
    running("kafka", "")
    running("postgres", None)  # not a JVM
    assert running_jvm_options(tests, every) == []
    running("registry", SLOWED)  # started by this start
    assert running_jvm_options(tests, every) == [SLOWED]
    running("s3", None)  # a JVM started before the record was kept: taken to have this start's options
    assert running_jvm_options(dataclasses.replace(tests, jvm_options=(SLOWED, "-Xss1m")), every) == [SLOWED, "-Xss1m"]
