"""The job's settings: the streaming settings every ringtail Spark process reads
(`spark.delivery.settings`) and its one sink; YAML file plus `RINGTAIL_JOB_*` variables."""
from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from spark.delivery.settings import StreamSettings
from spark.location import Location
from spark.sinks.cassandra.settings import CassandraSettings
from spark.sinks.delta.settings import DeltaSettings
from spark.sinks.layouts import Layout
from spark.sinks.postgres.settings import PostgresSettings
from spark.sinks.settings import SinkSettings


class JobSettings(StreamSettings):
    model_config = SettingsConfigDict(env_prefix="RINGTAIL_JOB_")

    sink: Literal["delta", "postgres", "cassandra"] = "delta"
    delta_path: Location = Location("ringtail-delta")  # a path or a URI, as checkpoint_dir
    delta_layout: Layout = "log"  # one JSON log, or a typed log per table (spark.sinks.delta.sink)
    # TLS by libpq's parameters in the DSN (sslmode=verify-full&sslrootcert=…); the password in it or in a file.
    postgres_dsn: str = Field("postgresql://ringtail@127.0.0.1:5432/ringtail", repr=False)
    postgres_password_file: Path | None = None
    postgres_schema: str = "ringtail"
    # The log, a typed log per table (spark.sinks.postgres.typed) or a mirror of each (postgres.mirror).
    postgres_layout: Layout = "log"

    def sink_settings(self) -> SinkSettings:
        """The job's one sink, in the model a subscription's sink has."""
        if self.sink == "delta":
            return DeltaSettings(path=str(self.delta_path), layout=self.delta_layout)
        if self.sink == "postgres":
            return PostgresSettings(dsn=self.postgres_dsn, password_file=self.postgres_password_file,
                                    schema=self.postgres_schema, layout=self.postgres_layout)
        return CassandraSettings()  # into ringtail's own cluster and keyspace
