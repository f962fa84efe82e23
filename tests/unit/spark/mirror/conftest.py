import pytest

from tests.unit.spark.mirror.segment import segment_changes, segment_layout


@pytest.fixture(scope="module")
def layout():
    return segment_layout()


@pytest.fixture(scope="module")
def changes():
    return segment_changes()
