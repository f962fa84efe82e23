"""The runner's Prometheus figures, per subscription it holds, read from the runner at each scrape."""
from __future__ import annotations

import math
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from spark.subscriptions.model import STATES

from .runner import Runner


class RunnerCollector(Collector):
    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def collect(self) -> Iterator:
        labels = ["subscription"]
        delivered = CounterMetricFamily("ringtail_subscription_rows_delivered", "Log rows written to the sink",
                                        labels=labels)
        filtered = CounterMetricFamily("ringtail_subscription_rows_filtered", "Log rows the filter, columns, "
                                       "operations or start left out", labels=labels)
        late = CounterMetricFamily("ringtail_subscription_rows_late", "Log rows read more than dedup_watermark "
                                   "after their write: checked by key in the sink, or marked", labels=labels)
        retries = CounterMetricFamily("ringtail_subscription_retries", "Attempts after a failure", labels=labels)
        lag = GaugeMetricFamily("ringtail_subscription_lag_seconds", "0 when caught up with Kafka, else the age "
                                "of the newest change delivered", labels=labels)
        state = GaugeMetricFamily("ringtail_subscription_state", "1 for the subscription's state",
                                  labels=labels + ["state"])
        running = GaugeMetricFamily("ringtail_subscription_running", "1 while its query runs here", labels=labels)
        for subscription, is_running, n_delivered, n_filtered, n_late, lag_seconds, n_retries in self.runner.snapshot():
            name = [subscription.name]
            delivered.add_metric(name, n_delivered)
            filtered.add_metric(name, n_filtered)
            late.add_metric(name, n_late)
            retries.add_metric(name, n_retries)
            if lag_seconds is not None and not math.isnan(lag_seconds):
                lag.add_metric(name, lag_seconds)
            for each in STATES:
                state.add_metric(name + [each], 1.0 if subscription.state == each else 0.0)
            running.add_metric(name, 1.0 if is_running else 0.0)
        resolved = GaugeMetricFamily("ringtail_subscription_resolved_timestamp_seconds", "Every write Cassandra "
                                     "acknowledged before it is in the sink (README \"Resolved timestamps\")",
                                     labels=labels + ["keyspace", "table"])
        for name, keyspace, table, seconds in self.runner.resolved():
            resolved.add_metric([name, keyspace, table], seconds)
        yield from (delivered, filtered, late, retries, lag, state, running, resolved)


def runner_registry(runner: Runner) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(RunnerCollector(runner))
    return registry
