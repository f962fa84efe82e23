"""Where the services of a running local stack are (`<run dir>/stack.json`, written by
`deploy/local/start`), once they answer: what the integration tests, the benchmarks and the demo use."""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
START_HINT = "start it with `deploy/local/start` (or set RINGTAIL_TEST_BACKEND=containers with a Docker daemon)"


class StackUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class Node:
    """One Cassandra node of the stack: `cassandra@i` on its own address, with its own directories."""

    name: str
    host: str
    cdc_raw: Path
    commitlog: Path
    data: Path


def nodes_of(description: dict) -> tuple[Node, ...]:
    """The nodes a `stack.json` lists."""
    return tuple(Node(n["name"], n["host"], Path(n["cdc_raw"]), Path(n["commitlog"]), Path(n["data"]))
                 for n in description["cassandra"]["nodes"])


@dataclass(frozen=True)
class ObjectStore:
    """The stack's S3-compatible store: one bucket, its keys in an AWS shared-credentials file."""

    endpoint: str
    bucket: str
    credentials_file: Path
    jars: tuple[str, ...]  # Hadoop's S3A, for Spark

    def environment(self) -> dict[str, str]:
        """What a process reaching the store sets (spark.location.S3Access reads it): the keys by their file."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_SHARED_CREDENTIALS_FILE": str(self.credentials_file)}


@dataclass(frozen=True)
class Stack:
    cassandra_host: str  # node 1's
    cassandra_port: int
    cdc_raw: Path  # node 1's
    kafka_bootstrap: str  # every broker's
    registry_url: str
    postgres_dsn: str
    mysql_dsn: str
    spark_jars: tuple[str, ...]
    nodes: tuple[Node, ...] = ()  # every node of the ring (one on the default stack)
    run_dir: Path | None = None  # the local stack's (for `stack.py` commands on it)
    object_store: ObjectStore | None = None  # none on a secured stack
    jvm_options: tuple[str, ...] = ()  # what RINGTAIL_STACK_JVM_OPTIONS gave every service's JVM


def _answers(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((host, port)) == 0


def stack_run_dir() -> Path:
    """The local stack's run directory (RINGTAIL_STACK_RUN_DIR, by default `.run` in the checkout)."""
    return Path(os.environ.get("RINGTAIL_STACK_RUN_DIR") or ROOT / ".run")


def connect_stack() -> Stack:
    """The local stack described by `<run dir>/stack.json`, once every service's port answers."""
    run_dir = stack_run_dir()
    description = run_dir / "stack.json"
    if not description.exists():
        raise StackUnavailable(f"the local stack is not running ({description} is missing): {START_HINT}")
    d = json.loads(description.read_text())
    stack = Stack(
        cassandra_host=d["cassandra"]["host"],
        cassandra_port=d["cassandra"]["port"],
        cdc_raw=Path(d["cassandra"]["cdc_raw"]),
        kafka_bootstrap=d["kafka"]["bootstrap_servers"],
        registry_url=d["registry"]["url"],
        postgres_dsn=d["postgres"]["dsn"],
        mysql_dsn=d["mariadb"]["dsn"],
        spark_jars=tuple(d["spark-jars"]["jars"]),
        nodes=nodes_of(d),
        run_dir=run_dir,
        object_store=ObjectStore(d["s3"]["endpoint"], d["s3"]["bucket"], Path(d["s3"]["credentials_file"]),
                                 tuple(d["s3"]["jars"])) if "s3" in d else None,
        jvm_options=tuple(d.get("jvm_options", ())),
    )
    kafka = urlsplit(f"//{stack.kafka_bootstrap}")
    registry = urlsplit(stack.registry_url)
    postgres = urlsplit(stack.postgres_dsn)
    mysql = urlsplit(stack.mysql_dsn)
    for name, host, port in (
        ("Cassandra", stack.cassandra_host, stack.cassandra_port),
        ("Kafka", kafka.hostname, kafka.port),
        ("the schema registry", registry.hostname, registry.port),
        ("PostgreSQL", postgres.hostname, postgres.port),
        ("MariaDB", mysql.hostname, mysql.port),
    ):
        if not _answers(host, port):
            raise StackUnavailable(f"{name} does not answer on {host}:{port}: {START_HINT}")
    return stack


def spark_class_options(timeout: float = 600) -> str:
    """The JVM options that map the stack's Spark class archive (deploy/local/spark_classes.py), once its
    build in the background has ended; "" for a stack without one."""
    description = json.loads((stack_run_dir() / "stack.json").read_text())
    classes = description.get("spark-classes")
    if not classes:
        return ""
    deadline = time.monotonic() + timeout
    while _builds(Path(classes["builder_pid_file"])) and time.monotonic() < deadline:
        time.sleep(1)
    if not Path(classes["archive"]).exists():
        raise StackUnavailable(f"the stack's Spark class archive {classes['archive']} was not built (its build "
                               f"failed, or ran past {timeout:.0f} s); see {classes['logs']}")
    return classes["java_options"]


def _builds(pid_file: Path) -> bool:
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return False
    return stat[stat.rfind(")") + 2] != "Z"  # ended, not yet reaped by its parent
