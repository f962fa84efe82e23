"""What every ringtail Spark process reads (Kafka, the registry, the cluster and its CDC generations,
Spark): YAML file plus environment variables, like the connector's. The job (`RINGTAIL_JOB_*`,
`spark.job.config`) adds its one sink, the subscription server (`RINGTAIL_SERVER_*`,
`spark.subscriptions.settings`) its runner settings.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from schemas.avro.serializer import table_topics_pattern, topic_name
from schemas.runtime.access import CassandraCluster, CassandraSecurity, KafkaSecurity, RegistrySecurity
from schemas.runtime.settings import FileSettings, split_hosts
from spark.location import Location
from spark.sinks.settings import SinkContext
from spark.streams.storage import replication_literal


class StreamSettings(FileSettings):
    kafka_bootstrap_servers: str = "127.0.0.1:9092"
    registry_url: str = "http://127.0.0.1:8081"
    # Authentication and TLS (schemas.runtime.access; README "Security"): for every session, Kafka client and
    # registry client of the process, its executors and its sinks on the same cluster.
    cassandra_security: CassandraSecurity = CassandraSecurity()
    kafka_security: KafkaSecurity = KafkaSecurity()
    registry_security: RegistrySecurity = RegistrySecurity()
    # The connector's topics are <topic_prefix>.<keyspace>.<table>; new tables are picked up.
    topic_prefix: str = "ringtail"
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    # Bounds a micro-batch (and so memory) while a backlog is read, in changes: a batch reads this many
    # Kafka records times the copies each change comes in (`spark.streams.ring.copies_per_change`: the
    # replication of the cluster's CDC keyspaces, read at start), copies being skipped before they are rows.
    max_changes_per_trigger: int = Field(200_000, ge=1)
    # The bound in Kafka records, copies included, when set (instead of the one above).
    max_offsets_per_trigger: int | None = Field(None, ge=1)
    trigger_interval: str = "1 second"

    # The cluster whose ring the generations describe; generations are stored in it.
    cassandra_hosts: Annotated[tuple[str, ...], NoDecode] = ("127.0.0.1",)
    cassandra_port: int = 9042
    generations_keyspace: str = "ringtail_cdc"
    # Its replication when ringtail creates it (an existing keyspace is left as it is: ALTER KEYSPACE
    # changes it). It holds the generations, subscriptions, leases and progress. Unset: NetworkTopologyStrategy
    # with min(3, nodes) copies in each data centre the cluster has (`spark.streams.storage.cluster_replication`).
    generations_replication: dict[str, str | int] | None = None
    shards: int = Field(1, ge=1)  # per node, as ScyllaDB's smp
    ignore_msb: int = Field(12, ge=0, le=63)  # ScyllaDB's murmur3_partitioner_ignore_msb_bits
    # How far back the first generation starts, so that changes written before the job's
    # first start still have streams.
    first_generation_lookback: float = Field(86_400.0, ge=0)
    # A new generation starts this long after the job notices a ring change (ScyllaDB: 2 * ring_delay + 5 s).
    generation_delay: float = Field(65.0, gt=0)
    generation_check_interval: float = Field(30.0, gt=0)
    # Acceptance window, against the time the change reached Kafka: ScyllaDB's 5 s leeway for
    # writes "from the future"; `max_age` (off by default) for writes "from the past".
    leeway: float = Field(5.0, ge=0)
    max_age: float | None = Field(None, gt=0)

    # Replica copies (one connector per node) are removed while the job reads them within this window of
    # each other; a row read later than that after its write is late: checked by key in the sink, or marked.
    dedup: bool = True
    dedup_watermark: str = "10 minutes"
    # How events are decoded: the native core, or the Python reference it is tested against (slower;
    # also used, with a warning at start, when the native core is not built).
    decoder: Literal["native", "python"] = "native"
    # Bench switch: pass rows through without stream ids.
    assign_streams: bool = True
    # A mirror sink removes expired values with every micro-batch, and this often between them.
    mirror_purge_interval: float = Field(30.0, gt=0)
    # How often each table's resolved timestamp is published in the sink (README "Resolved timestamps"); 0: never.
    resolved_interval: float = Field(5.0, ge=0)

    # A stop lets the running micro-batch finish; one still in its sink this long after (a sink that
    # hangs) is cut, and replayed at the next start.
    stop_timeout: float = Field(600.0, gt=0)

    # The job's checkpoint; the server keeps one per subscription under it.
    # A path or a URI (s3a://, hdfs://, abfss://, gs://, file:): spark.location.
    checkpoint_dir: Location = Location("ringtail-checkpoints")
    # Names the Spark application and, for the job, its writes in the sinks' exactly-once bookkeeping.
    app_id: str = "ringtail"

    # Unset: spark-submit's --master, and local[*] for a process started without it (`--master` on the
    # command line sets it). A master set here overrides spark-submit's.
    spark_master: str | None = None
    # Ship ringtail to the executors (spark.ship: its packages, native core and dependencies as one
    # archive in `spark.archives`): `auto` does for a master that is not local; `never` leaves it to
    # spark-submit's --archives (`python -m spark.ship` prints them) or to executors that have it.
    ship: Literal["auto", "always", "never"] = "auto"
    ship_dir: Path | None = None  # where the archive is made and kept; unset: ~/.cache/ringtail
    spark_jars: Annotated[tuple[str, ...], NoDecode] = ()
    spark_packages: Annotated[tuple[str, ...], NoDecode] = ()
    spark_conf: dict[str, str] = Field(default_factory=dict)
    log_level: str = "INFO"
    log_format: Literal["json", "text"] = "json"

    @field_validator("cassandra_hosts", "spark_jars", "spark_packages", mode="before")
    @classmethod
    def _split(cls, value):
        return split_hosts(value)

    @field_validator("generations_replication")
    @classmethod
    def _replication(cls, value: dict[str, str | int] | None) -> dict[str, str | int] | None:
        if value is None:
            return value
        if "class" not in value:
            raise ValueError("a replication map names its class (SimpleStrategy or NetworkTopologyStrategy)")
        replication_literal(value)  # refused here, before anything starts, rather than at the CREATE
        return value

    @property
    def topic_pattern(self) -> str:
        """The subscribe pattern: every table's topic of this connector name."""
        return table_topics_pattern(self.topic_prefix)

    def table_topic_pattern(self, keyspace: str, table: str) -> str:
        """The subscribe pattern of one table's topic (a pattern, so a topic created later is found)."""
        return re.escape(topic_name(self.topic_prefix, keyspace, table))

    def sink_context(self, app_id: str) -> SinkContext:
        """What a sink opened by this process takes from it, its writes named `app_id`."""
        return SinkContext(app_id=app_id, cluster=self.cluster, keyspace=self.generations_keyspace,
                           kafka=self.kafka_bootstrap_servers, registry=self.registry_url,
                           replication=self.generations_replication, kafka_security=self.kafka_security,
                           registry_security=self.registry_security)

    @property
    def cluster(self) -> CassandraCluster:
        """The Cassandra cluster this process reads its ring from and keeps its state in."""
        return CassandraCluster(self.cassandra_hosts, self.cassandra_port, self.cassandra_security)

    def kafka_client(self) -> dict:
        """A confluent-kafka client's configuration for the cluster the job reads."""
        return self.kafka_security.librdkafka(self.kafka_bootstrap_servers)


S = TypeVar("S", bound=StreamSettings)


def load_or_report(cls: type[S], config_file: Path | None, program: str, **overrides) -> S | None:
    """The settings (`overrides`, from the command line, above all), or None once the reason they are
    invalid is on stderr (the caller exits 2)."""
    import sys

    from pydantic import ValidationError

    try:
        return cls.load(config_file, **overrides)
    except (ValidationError, FileNotFoundError) as exc:
        print(f"{program}: invalid settings: {exc}", file=sys.stderr)
        return None


def admitted(settings: StreamSettings, program: str, kafka: bool = True) -> bool:
    """Whether Cassandra (and Kafka and the registry, with `kafka`) take the settings' credentials and
    certificates; False once the refusal is on stderr, in one line (the caller exits 2)."""
    import sys

    from schemas.runtime.access import AccessError
    from schemas.runtime.reach import AccessDenied, check_access

    try:
        check_access(settings, kafka)
    except (AccessDenied, AccessError) as exc:
        print(f"{program}: {exc}", file=sys.stderr)
        return False
    return True
