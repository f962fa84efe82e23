"""The golden workload on the main (5.0) node, `vector` included (`suites/golden.py`)."""
from tests.integration.suites.golden import GoldenWorkload


class TestGoldenWorkload(GoldenWorkload):
    """On the main node."""
