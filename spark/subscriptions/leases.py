"""Who runs which subscription: leases taken by lightweight transaction, with a TTL, in the registry's
keyspace; and the runners alive, so that they split the subscriptions between them.

A runner holds a subscription while its lease lives: it renews the lease (conditional on holding it)
well within the TTL and stops the subscription's query the moment a renewal is refused. A runner
killed without a word stops renewing; the lease expires after the TTL and another runner claims the
subscription and resumes it from its checkpoint.
"""
from __future__ import annotations

from typing import Any

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {ks}.subscription_leases (subscription text PRIMARY KEY, runner text)",
    "CREATE TABLE IF NOT EXISTS {ks}.subscription_runners (runner text PRIMARY KEY, seen timestamp)",
)


class Leases:
    def __init__(self, session: Any, keyspace: str, runner: str, ttl: int) -> None:
        if ttl < 2:
            raise ValueError("a lease lives at least 2 seconds")
        self.session, self.keyspace, self.runner, self.ttl = session, keyspace, runner, ttl
        for statement in _SCHEMA:
            session.execute(statement.format(ks=keyspace))

    def holders(self) -> dict[str, str]:
        """Subscription → the runner holding it, for every lease alive."""
        rows = self.session.execute(f"SELECT subscription, runner FROM {self.keyspace}.subscription_leases")
        return {r.subscription: r.runner for r in rows if r.runner is not None}

    def claim(self, subscription: str) -> bool:
        return self.session.execute(
            f"INSERT INTO {self.keyspace}.subscription_leases (subscription, runner) VALUES (%s, %s)"
            f" IF NOT EXISTS USING TTL {self.ttl}", (subscription, self.runner)).was_applied

    def renew(self, subscription: str) -> bool:
        """False when the lease expired or another runner holds it: stop at once."""
        return self.session.execute(
            f"UPDATE {self.keyspace}.subscription_leases USING TTL {self.ttl} SET runner = %s"
            " WHERE subscription = %s IF runner = %s", (self.runner, subscription, self.runner)).was_applied

    def release(self, subscription: str) -> None:
        self.session.execute(f"DELETE FROM {self.keyspace}.subscription_leases WHERE subscription = %s"
                             " IF runner = %s", (subscription, self.runner))

    # -- the runners alive ---------------------------------------------------------------------

    def heartbeat(self) -> int:
        """Say this runner is alive; the number of runners alive (this one included)."""
        self.session.execute(f"INSERT INTO {self.keyspace}.subscription_runners (runner, seen)"
                             f" VALUES (%s, toTimestamp(now())) USING TTL {self.ttl}", (self.runner,))
        rows = self.session.execute(f"SELECT runner FROM {self.keyspace}.subscription_runners")
        return max(1, sum(1 for _ in rows))

    def leave(self) -> None:
        self.session.execute(f"DELETE FROM {self.keyspace}.subscription_runners WHERE runner = %s", (self.runner,))
