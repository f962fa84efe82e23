"""The changes of the real Cassandra 5.0 segment's `everything` table (tests/unit/commitlog/data/CommitLog-7-…,
statements in test_cassandra50_segment) as the Spark job decodes them for a mirror, and that table's layout."""
import json

import pytest

from spark.job.events import decode_records
from spark.mirror.engine import Change
from spark.mirror.layout import MirrorLayout
from tests.unit.commitlog.test_cassandra50_segment import SCHEMA
from tests.unit.job.decoding import framed_events, preloaded_cache, records


@pytest.fixture(scope="module")
def layout() -> MirrorLayout:
    table = SCHEMA.table_by_name("ringtail_decoder_check", "everything")
    return MirrorLayout.of_table(table, SCHEMA.types_of("ringtail_decoder_check"))


@pytest.fixture(scope="module")
def change_rows() -> list[dict]:
    """The decoded rows of `everything` that carry cells (what `spark.mirror.tables.change_rows` keeps)."""
    schemas, payloads = framed_events()
    return [row for row in decode_records(records(payloads), preloaded_cache(schemas), cells=True).to_pylist()
            if row["table"] == "everything" and row["cells"] is not None]


@pytest.fixture(scope="module")
def changes(change_rows) -> list[Change]:
    out = []
    for row in change_rows:
        key = json.loads(row["key"])
        out.append(Change(row["partition_key"], [key["p1"], key["p2"]], json.loads(row["cells"])))
    return out
