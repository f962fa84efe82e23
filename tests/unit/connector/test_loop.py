"""The connector's loop alone, on real segments in a cdc_raw laid out here, with fakes for what it talks
to (a producer whose delivery reports the test gives or refuses, a serializer, a fixed schema, a clock):
delivery before release, a rewind after a refused event, quarantine, a lost segment that comes back, an
acknowledged loss, an index that stops moving — each with the Python reader and with the native core."""
from __future__ import annotations

import io
import json
import os
import threading
import time
from collections import Counter, defaultdict
from types import SimpleNamespace

import pytest
from fastavro import parse_schema, schemaless_reader

from connector.config import ConnectorSettings
from connector.deadletters import Rejections
from connector.lifecycle import SegmentLife, Stage
from connector.loop import SegmentLoop, Services
from connector.lost import LostSegments
from connector.metrics import Health, Metrics
from connector.native_source import NativeDecoders
from connector.schema.history import SchemaHistory
from connector.source import chain_end, scan
from schemas.avro import ChangeEncoder, SchemaRejected
from schemas.avro.table import SourceInfo
from schemas.change import write_time
from tests.unit.connector.commitlog.mutations import SCHEMA, TABLE_ID, TS, clustered_insert
from tests.unit.connector.commitlog.segment_builder import segment


class Report:
    def __init__(self, topic: str, offset: int) -> None:
        self._topic, self._offset = topic, offset

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset


class FakeProducer:
    """Takes events; `poll` reports them delivered (or the next `refuse` of them refused) unless `hold`."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []  # the events' values, in the order handed over
        self.topics: list[str] = []  # their topics
        self.acknowledged: list[bytes] = []
        self._waiting: list[tuple[object, str, bytes]] = []
        self._offsets: dict[str, int] = defaultdict(int)
        self.hold = False
        self.refuse = 0

    def ensure_topic(self, topic: str, stopping: threading.Event) -> bool:
        return True

    def send_all(self, events, on_delivery) -> None:
        for topic, _, value in events:
            self.sent.append(value)
            self.topics.append(topic)
            self._waiting.append((on_delivery, topic, value))

    def poll(self, timeout: float = 0) -> None:
        if self.hold:
            return
        waiting, self._waiting = self._waiting, []
        for on_delivery, topic, value in waiting:
            if self.refuse:
                self.refuse -= 1
                on_delivery("Broker: not enough in-sync replicas", None)
                continue
            self._offsets[topic] += 1
            self.acknowledged.append(value)
            on_delivery(None, Report(topic, self._offsets[topic]))

    def flush(self, timeout: float) -> int:
        self.poll()
        return len(self._waiting)

    def abandon(self) -> None:
        self._waiting.clear()


ENCODER = ChangeEncoder(SourceInfo("ringtail", "cluster", "node"), SCHEMA)
VALUES = parse_schema(ENCODER.table(SCHEMA.table(TABLE_ID)).value_schema)


class FakeSerializer:
    """An event per change whose value is the value written (each test writes each value once); for the
    native core, the subjects a registry would give."""

    encoder = ENCODER
    rejecting = False  # the registry refuses the table's schema

    def serialize(self, change, segment: str) -> tuple[str, bytes, bytes]:
        self._registered(change.table)
        return change.table.qualified_name, b"key", str(change.cells["v"].value).encode()

    def subjects(self, table):
        self._registered(table)
        return SimpleNamespace(key_id=1, value_id=2, topic=table.qualified_name)

    def _registered(self, table) -> None:
        if self.rejecting:
            raise SchemaRejected(f"{table.qualified_name}-value", table.qualified_name, "incompatible")


def written(value: bytes) -> int:
    """The value an event carries: the fake serializer's text, or the native core's framed Avro record."""
    if value[:1] != b"\0":
        return int(value)
    return schemaless_reader(io.BytesIO(value[5:]), VALUES)["after"]["c1"]


class FixedSchema:
    def __init__(self) -> None:
        self.history = SchemaHistory.first(SCHEMA)
        self.released: list[int] = []

    @property
    def snapshot(self):
        return self.history.decoding

    def captures(self, change) -> bool:
        return self.history.captures(change.table.id, write_time(change))

    @staticmethod
    def observes(table) -> bool:
        return False

    def observe(self, change) -> None:
        pass

    def on_schema_miss(self, miss):
        return None

    def release(self, segment_id: int) -> None:
        self.released.append(segment_id)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FrontierLog:
    """Takes the frontier the loop hands its sender at each turn (`connector.frontier.FrontierSender`)."""

    def __init__(self, bound_ms: int) -> None:
        self.node = SimpleNamespace(sync=SimpleNamespace(bound_ms=bound_ms))
        self.values: list[int | None] = []

    @property
    def frontier_us(self) -> int | None:
        return self.values[-1] if self.values else None

    @frontier_us.setter
    def frontier_us(self, value: int | None) -> None:
        self.values.append(value)


class Rig:
    def __init__(self, tmp_path, decoder: str = "python", **settings) -> None:
        self.decoder = decoder
        self.cdc_raw = tmp_path / "cdc_raw"
        self.cdc_raw.mkdir()
        self.settings = ConnectorSettings(cdc_raw=self.cdc_raw, state_dir=tmp_path / "state", metrics_port=0,
                                          **settings)
        self.producer, self.schema, self.clock = FakeProducer(), FixedSchema(), Clock()
        self.serializer, self.health, self.metrics = FakeSerializer(), Health(), Metrics()
        self.frontiers: FrontierLog | None = None
        self.loop = self.start()

    def start(self) -> SegmentLoop:
        """A loop as a (re)started process makes it: state read back from the state directory."""
        serializer, schema = self.serializer, self.schema
        decoders = None if self.decoder == "python" else NativeDecoders(
            serializer, lambda table: schema.history.ever_captured(table.id), lambda table: False,
            lambda table, error: None)
        services = Services(self.producer, serializer, schema, Rejections(30, self.clock), decoders, self.clock,
                            self.frontiers)
        loop = SegmentLoop(self.settings, services, self.metrics, self.health, threading.Event())
        loop.begin()
        return loop

    def write(self, segment_id: int, values: list[list[int]], completed: bool = True, durable: int | None = None,
              damage_at: int | None = None) -> bytes:
        """Segment `segment_id` with a section per list of values, its index at `durable` (the end by default)."""
        data = bytearray(segment(segment_id, [[clustered_insert(v) for v in section] for section in values]))
        if damage_at is not None:
            data[damage_at] ^= 0xFF
        (self.cdc_raw / f"CommitLog-7-{segment_id}.log").write_bytes(data)
        self.index(segment_id, len(data) if durable is None else durable, completed)
        return bytes(data)

    def index(self, segment_id: int, offset: int, completed: bool, mtime_ns: int | None = None) -> None:
        path = self.cdc_raw / f"CommitLog-7-{segment_id}_cdc.idx"
        path.write_text(f"{offset}\n" + ("COMPLETED" if completed else ""))
        if mtime_ns is not None:
            os.utime(path, ns=(mtime_ns, mtime_ns))

    def synced(self, segment_id: int) -> int:
        """Where Cassandra's index would put the segment's durable offset: the end of its last section."""
        return chain_end(self.cdc_raw / f"CommitLog-7-{segment_id}.log")

    def turns(self, n: int = 6) -> None:
        for _ in range(n):
            self.clock.now += 1
            self.loop.turn()

    def files(self) -> set[str]:
        return {p.name for p in self.cdc_raw.iterdir()}

    def acknowledged(self) -> list[int]:
        return [written(value) for value in self.producer.acknowledged]

    def sent(self) -> list[int]:
        return [written(value) for value in self.producer.sent]


@pytest.fixture(params=["python", "native"])
def decoder(request) -> str:
    return request.param


def test_a_segment_is_released_only_once_kafka_has_every_event_of_it(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    rig.write(1, [[1, 2], [3]])
    rig.producer.hold = True
    rig.turns()
    assert rig.sent() == [1, 2, 3]
    assert rig.loop.life.stage(1) is Stage.FINISHED
    assert "CommitLog-7-1.log" in rig.files() and rig.loop.checkpoint.committed is None

    rig.producer.hold = False
    rig.turns()
    assert rig.acknowledged() == [1, 2, 3]
    assert rig.loop.life.stage(1) is Stage.RELEASED and rig.files() == set()
    assert rig.schema.released == [1]
    assert rig.loop.view.committed.segment_id == 1 and rig.loop.view.in_flight == 0


def test_segments_are_read_in_order_and_a_restart_sends_nothing_committed_again(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    rig.write(2, [[3, 4]], completed=False)
    rig.write(1, [[1, 2]])
    rig.turns()
    assert rig.acknowledged() == [1, 2, 3, 4]
    assert rig.loop.life.stage(1) is Stage.RELEASED and rig.loop.life.stage(2) is Stage.READING

    rig.loop.drain()
    rig.write(2, [[3, 4], [5]], completed=True)  # Cassandra wrote on and finished it meanwhile
    rig.loop = rig.start()
    rig.turns()
    assert rig.acknowledged() == [1, 2, 3, 4, 5]
    assert rig.files() == set()


def test_a_table_whose_schema_the_registry_rejects_goes_to_the_dead_letters_and_nothing_is_lost(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    rig.serializer.rejecting = True
    rig.write(1, [[1, 2], [3]])
    rig.turns()
    assert rig.producer.topics == ["ringtail.dead_letters"] * 3
    letters = [json.loads(value) for value in rig.producer.acknowledged]
    assert [letter["change"]["cells"]["v"]["value"] for letter in letters] == [1, 2, 3]
    assert {(letter["reason"], letter["table"]) for letter in letters} == {("schema_rejected", "ks.events")}
    assert rig.files() == set()
    assert rig.metrics.dead_letters.labels("schema_rejected")._value.get() == 3


def test_changes_written_while_the_table_had_no_cdc_are_read_and_left_out(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    rig.schema.history = rig.schema.history.record_flag(TABLE_ID, False, TS - 5_000)
    rig.write(1, [[1, 2], [3]])
    rig.turns()
    assert rig.producer.sent == [] and rig.files() == set()
    assert rig.loop.view.committed.segment_id == 1
    assert (rig.metrics.changes_read._value.get(), rig.metrics.changes_filtered._value.get()) == (3, 3)


def test_a_refused_event_rewinds_to_the_committed_position_and_nothing_is_lost(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    rig.write(1, [[1], [2, 3]])
    rig.write(2, [[4, 5]])
    rig.producer.refuse = 1
    rig.turns(10)
    # Read again from the committed position (none): everything after the refused event is sent again.
    assert rig.acknowledged()[-5:] == [1, 2, 3, 4, 5]
    assert rig.loop.metrics.errors.labels("DeliveryFailed")._value.get() == 1
    assert rig.files() == set() and rig.loop.life.stage(2) is Stage.RELEASED
    assert Counter(rig.sent())[1] == 2


def test_a_damaged_segment_is_quarantined_once_finished_and_reading_goes_on(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    good = segment(1, [[clustered_insert(1)]])
    rig.write(1, [[1], [2]], completed=False, damage_at=len(good) + 12)  # inside the second section's entry
    rig.turns()
    assert rig.acknowledged() == [1]
    assert rig.loop.life.stage(1) is Stage.READING  # Cassandra may still be writing it: no quarantine yet

    rig.index(1, (rig.cdc_raw / "CommitLog-7-1.log").stat().st_size, True)
    rig.write(2, [[3]])
    rig.turns()
    assert rig.acknowledged() == [1, 3]
    assert rig.loop.life.stage(1) is Stage.RELEASED and rig.loop.life.stage(2) is Stage.RELEASED
    quarantined = {p.name for p in rig.settings.quarantine.iterdir()}
    assert quarantined == {"CommitLog-7-1.log", "CommitLog-7-1_cdc.idx", "CommitLog-7-1.reason.json"}


def test_a_segment_lost_while_read_blocks_reading_until_it_comes_back(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    whole = rig.write(1, [[1], [2]], completed=False, durable=None)
    rig.index(1, len(segment(1, [[clustered_insert(1)]])), False)  # only the first section durable
    rig.turns()
    assert rig.acknowledged() == [1]
    (rig.cdc_raw / "CommitLog-7-1.log").unlink()
    (rig.cdc_raw / "CommitLog-7-1_cdc.idx").unlink()
    rig.write(2, [[3]])
    rig.turns()
    assert rig.loop.life.stage(1) is Stage.LOST and rig.acknowledged() == [1]  # segment 2 waits
    assert [lost.name for lost in LostSegments(rig.settings.state_dir / "lost").pending()] == ["CommitLog-7-1.log"]
    assert any("CommitLog-7-1.log" in problem for problem in rig.health.report()[0])
    assert rig.loop.view.segment == "CommitLog-7-1.log"

    (rig.cdc_raw / "CommitLog-7-1.log").write_bytes(whole)  # back, without its index
    rig.turns()
    assert rig.acknowledged() == [1, 2, 3]  # read on from where it stopped: 1 is not sent again
    assert rig.loop.life.stage(1) is Stage.RELEASED and rig.health.report()[0] == []


def test_an_acknowledged_loss_lets_reading_go_past_the_segment(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    rig.write(1, [[1]], completed=False)
    rig.turns()
    (rig.cdc_raw / "CommitLog-7-1.log").unlink()
    rig.write(2, [[2]])
    rig.turns()
    assert rig.loop.life.stage(1) is Stage.LOST and rig.acknowledged() == [1]

    LostSegments(rig.settings.state_dir / "lost").acknowledge("CommitLog-7-1.log")
    rig.turns()
    assert rig.loop.life.stage(1) is Stage.ACKNOWLEDGED and rig.acknowledged() == [1, 2]
    assert rig.health.report()[0] == []


def test_a_loss_found_by_a_restart_is_still_waited_for(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    rig.write(1, [[1], [2]], completed=False, durable=len(segment(1, [[clustered_insert(1)]])))
    rig.turns()
    rig.loop.drain()
    for name in ("CommitLog-7-1.log", "CommitLog-7-1_cdc.idx"):
        (rig.cdc_raw / name).unlink()
    rig.write(2, [[3]])
    rig.loop = rig.start()
    rig.turns()
    assert rig.loop.life.stage(1) is Stage.LOST and rig.acknowledged() == [1]



@pytest.mark.parametrize("indexed", [False, True])
def test_a_restart_that_finds_gone_a_segment_started_in_that_held_no_cdc_data_reads_on(tmp_path, decoder, indexed):
    """`start_from: latest` (or a test starting from now) may start inside the newest segment before it holds
    CDC data; Cassandra removes such a segment once flushed. Gone at the next start, it is no loss; one that
    was indexed is."""
    rig = Rig(tmp_path, decoder)
    rig.write(1, [[1]], durable=None if indexed else 0)
    if not indexed:
        (rig.cdc_raw / "CommitLog-7-1_cdc.idx").unlink()
    assert rig.loop.positions.start_now(rig.cdc_raw).segment_id == 1
    for name in ("CommitLog-7-1.log", "CommitLog-7-1_cdc.idx"):
        (rig.cdc_raw / name).unlink(missing_ok=True)
    rig.write(2, [[2]])
    rig.loop = rig.start()
    rig.turns()
    if indexed:
        assert rig.loop.life.stage(1) is Stage.LOST and rig.acknowledged() == []
    else:
        assert rig.loop.life.stage(1) is None and rig.acknowledged() == [2]
        assert rig.health.report()[0] == [] and not (rig.settings.state_dir / "lost").exists()

def test_an_index_that_stops_moving_while_later_segments_are_indexed_is_quarantined(tmp_path, decoder):
    rig = Rig(tmp_path, decoder, index_grace=5, index_quarantine_after=20)
    rig.write(1, [[1], [2]], completed=False, durable=len(segment(1, [[clustered_insert(1)]])))
    rig.write(2, [[3]])
    rig.turns(3)
    assert rig.acknowledged() == [1]
    rig.turns(4)  # past the grace: reported
    assert any("stuck" in problem for problem in rig.health.report()[0])
    rig.turns(20)  # past quarantine_after: set aside, and segment 2 is read
    assert rig.acknowledged() == [1, 3]
    assert rig.loop.life.stage(1) is Stage.RELEASED and rig.health.report()[0] == []
    reason = rig.settings.quarantine / "CommitLog-7-1.reason.json"
    assert '"IndexProblem"' in reason.read_text()


def test_the_monitor_s_sightings_make_a_segment_known_while_the_loop_is_busy(tmp_path, decoder):
    rig = Rig(tmp_path, decoder)
    rig.write(1, [[1]], completed=False)
    rig.turns(1)
    rig.write(2, [[2]], completed=False)
    rig.loop.life.sighted(scan(rig.cdc_raw))  # the monitor saw segment 2 before it vanished
    for name in ("CommitLog-7-2.log", "CommitLog-7-2_cdc.idx"):
        (rig.cdc_raw / name).unlink()
    rig.turns(1)
    assert rig.loop.life.stage(2) is Stage.LOST


@pytest.mark.parametrize("stage", [Stage.RELEASED, Stage.SKIPPED])
def test_an_ended_segment_is_not_made_known_again_by_a_late_listing(tmp_path, stage):
    rig = Rig(tmp_path)
    rig.write(5, [[1]])
    listing = scan(rig.cdc_raw)
    life = SegmentLife()
    life.move(listing.segments[0], stage)
    life.sighted(listing)
    assert life.observe(scan(rig.cdc_raw)) == [] and life.stage(5) is stage


def test_the_frontier_holds_only_once_what_was_read_is_in_kafka_and_nothing_indexed_is_unread(tmp_path, decoder):
    """The loop's claims (`connector.frontier`): none while events wait for Kafka; with nothing unread, the
    listing's time less the bound; an index rewrite read to its end makes the rewrite seen before it the
    frontier; none while a later segment is indexed."""
    rig = Rig(tmp_path, decoder)
    rig.frontiers = FrontierLog(bound_ms=3_600_000)  # an hour: the listing's claims stay behind the indexes'
    rig.loop = rig.start()
    first = time.time_ns() - 600 * 10**9
    rig.write(1, [[1, 2], [3]], completed=False)
    rig.index(1, rig.synced(1), False, mtime_ns=first)
    rig.producer.hold = True
    rig.turns()
    assert rig.sent() == [1, 2, 3] and set(rig.frontiers.values) == {None}  # read, not in Kafka: nothing holds
    rig.producer.hold = False
    rig.turns()
    claimed = rig.frontiers.values[-1]
    assert claimed is not None and claimed <= time.time_ns() // 1000 - 3_600_000_000

    rig.write(1, [[1, 2], [3], [5]], completed=False)
    rig.index(1, rig.synced(1), False, mtime_ns=first + 10**9)
    rig.turns()
    assert rig.acknowledged() == [1, 2, 3, 5]
    assert rig.frontiers.values[-1] == first // 1000  # the rewrite seen before the one read to

    rig.write(2, [[7]], completed=False)  # indexed while segment 1, not finished, is read on
    rig.write(1, [[1, 2], [3], [5], [6]], completed=False)
    rig.index(1, rig.synced(1), False, mtime_ns=first + 2 * 10**9)
    rig.turns()
    assert rig.acknowledged() == [1, 2, 3, 5, 6]
    assert rig.frontiers.values[-1] == first // 1000
