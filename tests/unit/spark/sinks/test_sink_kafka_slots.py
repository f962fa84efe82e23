"""The Kafka sink's slots as a task meets them (runs of one slot, in order), its ledger's newest batch as
written before and after slots, and a record's headers."""
import json

import pyarrow as pa

from spark.sinks.kafka.records import headers
from spark.sinks.kafka.sink import Held
from spark.sinks.kafka.slots import SLOT, _runs


def slotted_batch(slots: list[int], first: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"partition_key": [bytes([first + i]) for i in range(len(slots))],
                                       SLOT: pa.array(slots, pa.int32())})


def test_a_tasks_batches_become_runs_of_one_slot_in_order_without_the_slot_column():
    runs = list(_runs(iter([slotted_batch([0, 0, 2], 0), slotted_batch([2, 2, 5], 3), slotted_batch([], 6)])))
    assert [(slot, run.column("partition_key").to_pylist()) for slot, run in runs] == [
        (0, [b"\x00", b"\x01"]), (2, [b"\x02"]), (2, [b"\x03", b"\x04"]), (5, [b"\x05"])]
    assert all(run.schema.names == ["partition_key"] for _, run in runs)


def test_the_ledgers_newest_batch_reads_every_form_it_was_written_in():
    assert Held.parse(b"7") == Held(7, None, done=True, slots=None)  # a bare id, before offsets
    assert Held.parse(b'{"batch": 8, "offsets": "ab"}') == Held(8, "ab", done=True, slots=None)  # before slots
    claimed = Held(9, "cd", done=False, slots=3)
    assert json.loads(claimed.json()) == {"batch": 9, "offsets": "cd", "done": False, "slots": 3}
    assert Held.parse(claimed.json()) == claimed


def test_a_records_headers_carry_its_change_id_and_whether_it_was_read_late():
    assert headers("c-1", False) == [("ringtail-change-id", b"c-1")]
    assert headers("c-2", True) == [("ringtail-change-id", b"c-2"), ("ringtail-late", b"true")]
    assert headers(None, False) == []
