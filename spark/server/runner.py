"""A runner: one Spark application that serves subscriptions from the registry.

Every `poll_interval` it says it is alive, renews the leases it holds (a refused renewal stops that
subscription at once, and a query failing once its lease is gone is stopped, not reported), follows the
registry (pause and cancel stop a query after its running micro-batch, starting no other; resume, reset
and alter restart it), retries failing subscriptions with backoff, claims active ones nobody holds up to
its share (subscriptions ÷ runners alive, so runners split them; a runner holding more than its share
hands the rest back), and reports each subscription's figures; a mirror's expired values are removed
between batches. A failing subscription is stopped and retried on its own; the others never wait for it.
"""
from __future__ import annotations

import datetime as dt
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from spark.delivery.generations import GenerationKeeper
from spark.delivery.publications import Publications
from spark.subscriptions.leases import Leases
from spark.subscriptions.model import Subscription
from spark.subscriptions.registry import Status, SubscriptionRegistry

from spark.subscriptions.settings import ServerSettings
from .delivery import Delivery

log = logging.getLogger(__name__)
RUNNABLE = ("active", "failing")


@dataclass
class Held:
    """A subscription whose lease this runner holds: running, or waiting for its next attempt."""

    subscription: Subscription
    delivery: Delivery | None = None
    attempts: int = 0  # failed attempts in a row
    retries: int = 0  # attempts after a failure, since claimed
    next_attempt: float = 0.0  # monotonic
    delivered: int = 0  # by deliveries stopped since claimed
    filtered: int = 0
    late: int = 0

    def figures(self) -> tuple[int, int, int]:
        """(delivered, filtered, late) rows since claimed."""
        d = self.delivery
        return (self.delivered + (d.delivered if d else 0), self.filtered + (d.filtered if d else 0),
                self.late + (d.late if d else 0))


class Runner:
    def __init__(self, spark: SparkSession, settings: ServerSettings, session: Any) -> None:
        # A session of its own (sharing the Spark context): no micro-batch runs without new data, so
        # idle subscriptions cost nothing, whatever session the runner is given (`spark_session` sets the same).
        self.spark = spark.newSession()
        self.spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
        self.settings, self.session = settings, session
        self.publications = Publications()  # the generations given to each sink target, for every delivery
        self.registry = SubscriptionRegistry(session, settings.generations_keyspace)
        self.registry.create_schema(settings.generations_replication)
        self.leases = Leases(session, settings.generations_keyspace, settings.runner_id, settings.lease_ttl)
        self.keeper = GenerationKeeper(settings)
        self.held: dict[str, Held] = {}
        self._lock = threading.Lock()  # `held` is read by the lease keeper and the metrics scrape
        self._lost: set[str] = set()  # leases the keeper could not renew

    def _keep_leases(self, stop: threading.Event) -> None:
        """Renew the leases held on a clock of their own: starting a query can take longer than a lease
        lives, and a turn waiting on one must not cost the others their leases."""
        interval = min(self.settings.poll_interval, self.settings.lease_ttl / 3)
        while not stop.wait(interval):
            with self._lock:
                names = [n for n in self.held if n not in self._lost]
            for name in names:
                try:
                    self._renew(name)
                except Exception as exc:  # Cassandra busy for a moment: the next renewal may pass
                    log.warning("renewing the lease of subscription %s: %s", name, exc)

    def _renew(self, name: str) -> bool:
        """Renew the lease of `name`, recording a refusal as lost; raises as `Leases.renew` does."""
        renewed = self.leases.renew(name)
        if not renewed:
            with self._lock:
                self._lost.add(name)
        return renewed

    def run(self, stop: threading.Event) -> None:
        log.info("runner %s serving subscriptions from %s", self.settings.runner_id, self.registry.keyspace)
        keeper_stop = threading.Event()
        threading.Thread(target=self._keep_leases, args=(keeper_stop,), name="ringtail-leases", daemon=True).start()
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    self.turn()
                except Exception:  # the registry unreachable for a moment: leases outlive a turn or two
                    log.exception("runner turn failed; trying again")
                stop.wait(max(0.0, self.settings.poll_interval - (time.monotonic() - started)))
        finally:
            keeper_stop.set()
            self.close()

    def turn(self) -> None:
        runners = self.leases.heartbeat()
        subscriptions = {s.name: s for s in self.registry.list()}
        for name in list(self.held):
            self._follow(name, subscriptions.get(name))
        runnable = sorted(s.name for s in subscriptions.values() if s.state in RUNNABLE)
        share = math.ceil(len(runnable) / runners)
        holders = self.leases.holders()
        for name in runnable:
            if len(self.held) >= share:
                break
            if name not in holders and name not in self.held and self.leases.claim(name):
                log.info("claimed subscription %s", name)
                with self._lock:
                    self.held[name] = Held(subscriptions[name])
                    self._lost.discard(name)  # a renewal that raced its last release said lost
                self._attempt(name)
        surplus = sorted(self.held, reverse=True)[:max(0, len(self.held) - share)]
        for name in surplus:
            log.info("handing subscription %s back: %d runners share %d subscriptions", name, runners, len(runnable))
        self._let_go_all(surplus)
        self._report()

    # -- one held subscription -----------------------------------------------------------------

    def _follow(self, name: str, current: Subscription | None) -> None:
        held = self.held[name]
        if name in self._lost:
            log.warning("lease of subscription %s lost (expired or taken): stopping it here", name)
            self._let_go(name, release=False)
            return
        if current is None or current.state not in RUNNABLE:
            log.info("subscription %s is %s: stopping it", name, current.state if current else "gone")
            self._let_go(name)
            return
        seen = held.subscription
        if (current.revision, current.epoch) != (seen.revision, seen.epoch):
            log.info("subscription %s changed (revision %d → %d): restarting it", name, seen.revision,
                     current.revision)
            self._stop_delivery(held)
            held.subscription, held.attempts, held.next_attempt = current, 0, 0.0
            self._attempt(name)
            return
        held.subscription = current
        delivery = held.delivery
        if delivery is None:
            if time.monotonic() >= held.next_attempt:
                held.retries += 1
                self._attempt(name)
            return
        error = delivery.failure()
        if error is not None:
            self._failed(held, error)
        elif delivery.snapshot_finished:
            log.info("subscription %s: snapshot delivered; following the log from its version", name)
            self._stop_delivery(held)
            self._attempt(name)
        else:
            delivery.job.writer.purge_when_due()
            delivery.job.writer.resolve_when_due()
            if delivery.batches_written and (held.attempts or current.state == "failing"):
                held.attempts = 0
                if current.state == "failing" and self.registry.report(current, None):
                    log.info("subscription %s delivers again", name)

    def _lease_lost(self, name: str) -> bool:
        """Whether another runner may hold `name` now (recorded as the keeper records a refused renewal)."""
        if name in self._lost:
            return True
        try:
            return not self._renew(name)
        except Exception:  # Cassandra busy for a moment: the keeper decides on the lease
            return False

    def _attempt(self, name: str) -> None:
        held = self.held[name]
        try:
            held.delivery = Delivery(self.spark, self.settings, held.subscription, self.keeper, self.registry,
                                     self.session, self.publications)
            log.info("subscription %s running (revision %d, epoch %d)", name, held.subscription.revision,
                     held.subscription.epoch)
        except Exception as exc:  # a sink that cannot even prepare, a table gone: the same retry
            self._failed(held, f"{type(exc).__name__}: {exc}"[:2000])

    def _failed(self, held: Held, error: str) -> None:
        self._stop_delivery(held)
        if self._lease_lost(held.subscription.name):
            # It ran on past its lease (paused, cut off from Cassandra) and met the new holder's writes (Spark's
            # offset log refuses a second writer): no failure of the subscription's. The next turn lets it go.
            log.warning("subscription %s stopped after its lease was lost: %s", held.subscription.name,
                        error.splitlines()[0][:300] if error else "")
            return
        held.attempts += 1
        wait = min(self.settings.retry_max, self.settings.retry_initial * 2 ** (held.attempts - 1))
        held.next_attempt = time.monotonic() + wait
        log.error("subscription %s failed (attempt %d), retrying in %.0f s: %s", held.subscription.name,
                  held.attempts, wait, error)
        self.registry.report(held.subscription, error)

    def _stop_delivery(self, held: Held) -> None:
        delivery, held.delivery = held.delivery, None
        if delivery is not None:
            delivery.stop()
            held.delivered += delivery.delivered
            held.filtered += delivery.filtered
            held.late += delivery.late

    def _let_go_all(self, names: list[str]) -> None:
        """Let these go, their running micro-batches ending side by side."""
        for name in names:
            delivery = self.held[name].delivery
            if delivery is not None:
                delivery.request_stop()
        for name in names:
            try:
                self._let_go(name)
            except Exception:
                log.exception("stopping subscription %s", name)

    def _let_go(self, name: str, release: bool = True) -> None:
        # Held (and its lease renewed) until its last micro-batch or purge has ended: another runner
        # cannot claim it while this one still writes, and whoever sees it let go (a DROP of its sink's
        # tables after a cancel) no longer meets its locks.
        self._stop_delivery(self.held[name])
        with self._lock:
            del self.held[name]
            self._lost.discard(name)
        if release:
            self.leases.release(name)

    # -- figures -------------------------------------------------------------------------------

    def _report(self) -> None:
        now = dt.datetime.now(dt.timezone.utc)
        for name, held in list(self.held.items()):
            _, filtered, _ = held.figures()
            lag = held.delivery.lag_seconds() if held.delivery else None
            self.registry.record_status(name, Status(self.settings.runner_id, lag, filtered, held.retries, now))

    def snapshot(self) -> list[tuple[Subscription, bool, int, int, int, float | None, int]]:
        """(subscription, running, delivered, filtered, late, lag, retries) of each held subscription."""
        with self._lock:
            held = list(self.held.values())
        out = []
        for h in held:
            delivered, filtered, late = h.figures()
            out.append((h.subscription, h.delivery is not None, delivered, filtered, late,
                        h.delivery.lag_seconds() if h.delivery else None, h.retries))
        return out

    def resolved(self) -> list[tuple[str, str, str, float]]:
        """(subscription, keyspace, table, resolved timestamp in s) of each table a query here published."""
        with self._lock:
            held = list(self.held.values())
        out = []
        for h in held:
            resolver = h.delivery.job.writer.resolver if h.delivery is not None else None
            if resolver is not None:
                out.extend((h.subscription.name, keyspace, table, time_us / 1e6)
                           for (keyspace, table), time_us in list(resolver.published.items()))
        return out

    def close(self) -> None:
        """Stop every query between micro-batches and hand every lease back."""
        self._let_go_all(list(self.held))
        try:
            self.leases.leave()
        finally:
            self.keeper.close()
        log.info("runner %s stopped; its subscriptions are free for other runners", self.settings.runner_id)
