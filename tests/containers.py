"""The integration stack from containers (RINGTAIL_TEST_BACKEND=containers), for machines with Docker.

Cassandra runs with the local stack's cassandra.yaml, its cdc_raw bind-mounted from a host directory so
the tests (and the connector) read the segments it writes.
"""

from __future__ import annotations

import tempfile
import time
import urllib.request
from pathlib import Path
from string import Template

from deploy.local.endpoints import ROOT, Stack, StackUnavailable

CASSANDRA_IMAGE = "cassandra:5.0.8"
KAFKA_IMAGE = "apache/kafka:4.1.1"
REGISTRY_IMAGE = "apicurio/apicurio-registry-mem:2.6.13.Final"
POSTGRES_IMAGE = "postgres:15"
MARIADB_IMAGE = "mariadb:10.11"


def _cassandra_yaml(target: Path) -> None:
    template = Template((ROOT / "deploy" / "local" / "cassandra" / "cassandra.yaml").read_text())
    target.write_text(
        template.substitute(
            host="0.0.0.0", seed="127.0.0.1", storage_port=7000, native_port=9042, num_tokens=16,
            token_replication=1, concurrent_writes=8, data_dir="/var/lib/cassandra",
            cdc_total_space="512MiB", commitlog_segment_size="1MiB",
            commitlog_sync="commitlog_sync: periodic\ncommitlog_sync_period: 1000ms",
            storage_compatibility="storage_compatibility_mode: CASSANDRA_4", authenticator="AllowAllAuthenticator",
            client_encryption="",
        ).replace("rpc_address: 0.0.0.0", "rpc_address: 0.0.0.0\nbroadcast_rpc_address: 127.0.0.1")
        .replace("listen_address: 0.0.0.0", "listen_address: 127.0.0.1")
    )


def container_stack():
    try:
        import docker

        docker.from_env().ping()
    except Exception as exc:
        raise StackUnavailable(f"RINGTAIL_TEST_BACKEND=containers needs a Docker daemon ({exc})") from exc
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs
    from testcontainers.kafka import KafkaContainer
    from testcontainers.postgres import PostgresContainer

    work = Path(tempfile.mkdtemp(prefix="ringtail-containers-"))
    (work / "cdc_raw").mkdir()
    _cassandra_yaml(work / "cassandra.yaml")
    cassandra = (
        DockerContainer(CASSANDRA_IMAGE)
        .with_env("MAX_HEAP_SIZE", "1024M")
        .with_env("HEAP_NEWSIZE", "128M")
        .with_env("JVM_OPTS", "-Dcassandra.skip_wait_for_gossip_to_settle=0")
        .with_volume_mapping(str(work / "cassandra.yaml"), "/etc/cassandra/cassandra.yaml", "ro")
        .with_volume_mapping(str(work / "cdc_raw"), "/var/lib/cassandra/cdc_raw", "rw")
        .with_exposed_ports(9042)
    )
    kafka = KafkaContainer(KAFKA_IMAGE).with_kraft()
    registry = DockerContainer(REGISTRY_IMAGE).with_exposed_ports(8080)
    postgres = PostgresContainer(POSTGRES_IMAGE, username="ringtail", password="ringtail", dbname="ringtail")
    mariadb = (DockerContainer(MARIADB_IMAGE).with_env("MARIADB_USER", "ringtail")
               .with_env("MARIADB_PASSWORD", "ringtail").with_env("MARIADB_DATABASE", "ringtail")
               .with_env("MARIADB_RANDOM_ROOT_PASSWORD", "1").with_exposed_ports(3306))
    with cassandra, kafka, registry, postgres, mariadb:
        wait_for_logs(mariadb, "ready for connections", timeout=120)
        wait_for_logs(cassandra, "Starting listening for CQL clients", timeout=240)
        registry_url = (
            f"http://{registry.get_container_host_ip()}:{registry.get_exposed_port(8080)}/apis/ccompat/v7"
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{registry_url}/subjects", timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield Stack(
            cassandra_host=cassandra.get_container_host_ip(),
            cassandra_port=int(cassandra.get_exposed_port(9042)),
            cdc_raw=work / "cdc_raw",
            kafka_bootstrap=kafka.get_bootstrap_server(),
            registry_url=registry_url,
            postgres_dsn=postgres.get_connection_url(driver=None),
            mysql_dsn=(f"mysql://ringtail:ringtail@{mariadb.get_container_host_ip()}:"
                       f"{mariadb.get_exposed_port(3306)}/ringtail"),
            spark_jars=tuple(_local_spark_jars()),
        )


def _local_spark_jars() -> list[str]:
    # Spark runs in-process either way; its jars come from deploy/local/start spark-jars.
    jars = sorted(str(p) for p in (ROOT / ".run" / "dist" / "spark-jars").glob("*.jar"))
    if not jars:
        raise StackUnavailable("Spark's jars are missing: run `deploy/local/start spark-jars`")
    return jars
