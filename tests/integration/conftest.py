"""Fixtures of the integration tests that run the connector."""
from __future__ import annotations

import uuid

import pytest

from deploy.local.processes import ConnectorProcess
from tests.integration.pipeline import EventConsumer


@pytest.fixture
def pipeline(stack, tmp_path):
    """Make connectors (not started) with a topic prefix of their own, each with a consumer of its
    topics: `pipeline(name="state", **settings)`, `settings` as for ConnectorProcess. Every one made is
    stopped at the end."""
    made = []

    def make(name: str = "state", **settings):
        prefix = f"rt{uuid.uuid4().hex[:8]}"
        connector = ConnectorProcess(stack, tmp_path / name, prefix, **settings)
        consumer = EventConsumer(stack, prefix)
        made.append((connector, consumer))
        return connector, consumer

    yield make
    for connector, consumer in made:
        connector.stop()
        consumer.close()
