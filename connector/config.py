"""The connector's configuration: one typed, frozen object from a YAML file and `RINGTAIL_CONNECTOR_*`
variables."""
from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ByteSize, Field, field_validator, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from schemas.runtime.access import CassandraSecurity, KafkaSecurity, RegistrySecurity
from schemas.runtime.settings import FileSettings, split_hosts


class ConnectorSettings(FileSettings):
    model_config = SettingsConfigDict(env_prefix="RINGTAIL_CONNECTOR_")

    # The node's cassandra.yaml: `cdc_raw` and `cdc_total_space` default to what it says.
    cassandra_yaml: Path | None = None
    # Where Cassandra hard-links the commit-log segments (cdc_raw_directory in cassandra.yaml).
    cdc_raw: Path
    # Positions, the stored schema and, by default, quarantined segments.
    state_dir: Path = Path("ringtail-state")
    cassandra_hosts: Annotated[tuple[str, ...], NoDecode] = ("127.0.0.1",)  # the node beside it first
    cassandra_port: int = 9042
    kafka_bootstrap_servers: str = "127.0.0.1:9092"
    registry_url: str = "http://127.0.0.1:8081"
    # Authentication and TLS (schemas.runtime.access; README "Security").
    cassandra_security: CassandraSecurity = CassandraSecurity()
    kafka_security: KafkaSecurity = KafkaSecurity()
    registry_security: RegistrySecurity = RegistrySecurity()
    topic_prefix: str = "ringtail"
    topic_partitions: int = Field(6, ge=1)
    # Unset: min(3, brokers) copies, two of them in sync (one fewer on a cluster of one or two brokers);
    # see schemas.runtime.kafka.topic_replication.
    topic_replication_factor: int | None = Field(None, ge=1)
    topic_min_insync_replicas: int | None = Field(None, ge=1)
    # Named in every event's `source`.
    cluster_name: str = "cassandra"
    node_name: str = Field(default_factory=socket.gethostname)
    # Delivered segments are deleted, or moved here when set.
    archive_dir: Path | None = None
    quarantine_dir: Path | None = None  # default: <state_dir>/quarantine
    # Filesystem events wake the connector at once; this is the fallback poll.
    poll_interval: float = Field(0.25, gt=0)
    commit_interval: float = Field(0.5, gt=0)
    schema_check_interval: float = Field(5.0, gt=0)
    # Events handed to the producer and not yet acknowledged: bounds memory whatever the backlog.
    max_in_flight: int = Field(20_000, ge=1)
    # Segment bytes to events: the native core (Rust), or the pure-Python reference reader and writer.
    decoder: Literal["native", "python"] = "native"
    # Where a connector with nothing committed starts (as Kafka's auto.offset.reset): every segment in
    # cdc_raw, or after what is durable now (older segments are then released unread).
    start_from: Literal["earliest", "latest"] = "earliest"
    # On SIGTERM/SIGINT: how long to wait for Kafka's acknowledgements before committing and exiting.
    shutdown_timeout: float = Field(20.0, ge=0)
    # An index that stays empty, unreadable or unchanged while later segments are indexed: reported after
    # the grace, its segment quarantined after `index_quarantine_after`.
    index_grace: float = Field(30.0, gt=0)
    index_quarantine_after: float = Field(300.0, gt=0)
    # /ready turns 503 when durable data waits and the committed position has not moved for this long.
    stall_timeout: float = Field(60.0, gt=0)
    # cdc_raw usage, the backlog and the stall check are measured on their own clock, this often.
    measure_interval: float = Field(1.0, gt=0)
    # A table whose schema the registry rejected is asked about again this often.
    schema_retry_interval: float = Field(30.0, gt=0)
    # Leftovers of earlier runs in cdc_raw (orphan indexes, links without an index) are looked for this
    # often and removed once unchanged for `leftover_min_age`.
    housekeeping_interval: float = Field(60.0, gt=0)
    leftover_min_age: float = Field(600.0, ge=0)
    # cassandra.yaml's cdc_total_space, in bytes or with a unit (`4096MiB`, `4GiB`); usage above the
    # warning ratio is logged and exported.
    cdc_total_space: ByteSize = Field(ByteSize(4096 << 20), ge=1)
    cdc_usage_warning: float = Field(0.7, gt=0, le=1)
    # How often the node's frontier (connector.frontier) is sent to `<topic_prefix>.frontiers`; 0: never.
    frontier_interval: float = Field(1.0, ge=0)
    metrics_host: str = "0.0.0.0"
    metrics_port: int = Field(9108, ge=0)  # 0: no HTTP endpoint
    log_level: str = "INFO"
    log_format: Literal["json", "text"] = "json"
    # Extra librdkafka settings for the producer (idempotence and acks=all are always on).
    producer: dict[str, str | int | float | bool] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_cassandra_yaml(cls, data):
        """Settings not given take their value from `cassandra_yaml`, when set."""
        if isinstance(data, dict) and data.get("cassandra_yaml"):
            return {**from_cassandra_yaml(Path(data["cassandra_yaml"])), **data}
        return data

    @field_validator("cassandra_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value):
        return split_hosts(value)

    @property
    def quarantine(self) -> Path:
        return self.quarantine_dir or self.state_dir / "quarantine"


def from_cassandra_yaml(path: Path) -> dict:
    """`cdc_raw` and `cdc_total_space` as a node's cassandra.yaml sets them (Cassandra 4.1+ names, and
    the older `cdc_total_space_in_mb`); what it leaves unset is left out."""
    import yaml

    try:
        config = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read cassandra_yaml {path}: {exc}") from None
    found = {}
    if config.get("cdc_raw_directory"):
        found["cdc_raw"] = config["cdc_raw_directory"]
    if config.get("cdc_total_space"):
        found["cdc_total_space"] = str(config["cdc_total_space"]).replace(" ", "")
    elif config.get("cdc_total_space_in_mb"):
        found["cdc_total_space"] = f"{config['cdc_total_space_in_mb']}MiB"
    return found


def load_settings(config_file: Path | None = None, **overrides) -> ConnectorSettings:
    """Settings from `config_file` (YAML), overridden by the environment and `overrides`."""
    return ConnectorSettings.load(config_file, **overrides)
