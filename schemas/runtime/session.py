"""One way to open a cassandra-driver session, shared by the schema loader, tools and tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from schemas.runtime.access import CassandraSecurity


# For a session that only runs statements: the driver's schema and token metadata would have it read every
# keyspace's schema and the ring at connect (tens of milliseconds on an idle node, more on a busy one).
STATEMENTS_ONLY = {"schema_metadata_enabled": False, "token_metadata_enabled": False}


def connect(hosts: Sequence[str], port: int = 9042, security: CassandraSecurity | None = None, *,
            row_factory: Callable | None = None, **options: Any):
    """(cluster, session) for `hosts`, authenticated and over TLS as `security` says, its rows made by
    `row_factory` (the driver's named tuples when None); the caller shuts the cluster down."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import RoundRobinPolicy

    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(),
                               **({"row_factory": row_factory} if row_factory is not None else {}))
    cluster = Cluster(
        list(hosts),
        port=port,
        protocol_version=5,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        **(security.driver_options() if security is not None else {}),
        **options,
    )
    return cluster, cluster.connect()
