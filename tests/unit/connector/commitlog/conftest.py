import pytest


@pytest.fixture
def write_segment(tmp_path):
    """Write bytes to a file named like a segment with that id; returns its path."""
    def write(data: bytes, segment_id: int, version: int = 7):
        path = tmp_path / f"CommitLog-{version}-{segment_id}.log"
        path.write_bytes(data)
        return path

    return write
