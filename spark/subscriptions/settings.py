"""The subscription server's settings: the streaming settings every ringtail Spark process reads,
plus the runner's own; YAML file plus `RINGTAIL_SERVER_*` variables."""
from __future__ import annotations

import os
import socket
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from spark.delivery.settings import StreamSettings


def _runner_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class ServerSettings(StreamSettings):
    model_config = SettingsConfigDict(env_prefix="RINGTAIL_SERVER_")

    app_id: str = "ringtail-server"
    # Names this runner in the leases; unique per running process.
    runner_id: str = Field(default_factory=_runner_id)
    # A runner killed without a word holds its subscriptions this long; then another takes them.
    lease_ttl: int = Field(15, ge=2)
    # How often the registry is read, leases renewed and the status reported.
    poll_interval: float = Field(2.0, gt=0)
    # A failing subscription is retried after this, doubling up to `retry_max`.
    retry_initial: float = Field(5.0, gt=0)
    retry_max: float = Field(120.0, gt=0)
    # A snapshot (`--start snapshot`) reads the table at this consistency, this many rows a page,
    # about this many partitions a micro-batch (over all its ranges), and at most this many rows/s
    # per range being read (0: as fast as Cassandra answers; Spark reads as many ranges at once as it
    # has cores).
    snapshot_consistency: Literal["ONE", "LOCAL_ONE", "QUORUM", "LOCAL_QUORUM", "ALL"] = "LOCAL_QUORUM"
    snapshot_fetch_size: int = Field(1000, ge=1)
    snapshot_step_partitions: int = Field(20_000, ge=1)
    snapshot_rate_limit: float = Field(0.0, ge=0)
    metrics_host: str = "0.0.0.0"
    metrics_port: int = Field(9465, ge=0)  # 0: any free port

    @model_validator(mode="after")
    def _renew_in_time(self):
        if self.poll_interval * 2 >= self.lease_ttl:
            raise ValueError("poll_interval must be under half of lease_ttl, or leases expire between renewals")
        return self
