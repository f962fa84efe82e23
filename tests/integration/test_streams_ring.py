"""The ring read from the live main node, and the generation built from it (`suites/ring_streams.py`)."""
from tests.integration.suites.ring_streams import StreamsOfTheRing


class TestStreamsOfTheRing(StreamsOfTheRing):
    """On the main node."""
