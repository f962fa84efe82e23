"""The Spark job as users run it (native decoding, stream ids) against the same job passing rows through
and the same job decoding with the Python reference, in one run.

    python bench/job.py [--rows N] [--repeat R] [--batch B] [--max-offsets M] [--workers W]

Input: real connector events. A cdc=true table (k int, c int, v text, n bigint, PRIMARY KEY (k, c))
gets N rows (execute_concurrent_with_args); the connector runs as users run it (`python -m connector
run`), positioned at the end of cdc_raw before the writes, until its topic holds all N events, and is
stopped. Then the job (`start(..., available_now=True)`, local[2] or W workers of the local stack's
Spark cluster (`bench/cluster.py`), Delta sink, replica removal on) reads those topics R times per
variant, taking turns (A B C, B C A, …), after one warm-up run, not
counted (JVM, Python workers, the first generation), each run with a fresh checkpoint and Delta path,
in micro-batches of at most M records (the job's `max_offsets_per_trigger`; a small M shows what each
micro-batch costs beyond its rows, as a live job's small batches pay it):

- with stream ids: the defaults: events decoded by the native core, generations kept in Cassandra,
  tokens and stream ids per row in the same pass, generations published to the sink;
- late rows: the same, every row read later than the replica-copy window after its write, as a job
  catching up after an outage reads them (`dedup_watermark` of 1 s): each micro-batch's rows are looked
  up in `cdc_log` by key before they are appended;
- pass-through: `assign_streams=False`: the same rows, without stream ids;
- Python decoder: `decoder=python`: with stream ids, events decoded by the Python reference;
- plain append (the floor): the same topic read by Spark's Kafka source with the same options and
  micro-batches, its records (topic, partition, offset, timestamp, key, value) appended to a Delta
  table as they are, with Spark's own Delta sink: what Spark costs to move these records into Delta
  without ringtail.

Every other job variant reads the rows within its window (`dedup_watermark` of 24 hours), as a running
job does, whenever the run comes: with the default 10 minutes, the rounds after the first ten minutes of
the benchmark would read them late, and pay the look-up.

A run is timed from `start()` to the query's termination ("setup" is the `start()` call itself:
with stream ids that includes the generation keeper's connection to Cassandra and loading the
generations, a fixed cost per start, not per row; the Delta sink is given the generations once the
query has started, before its first rows, so what that costs beyond the start-up is in "query").
rows/s = rows of the Delta `cdc_log` / seconds; the best run of each variant is shown, and the
medians in the summary (single runs move by ±10 % here). With several micro-batches per run,
"after 1st" is the Kafka records of the batches after the first over their trigger time (the query
progress's `triggerExecution`): what a running job pays per record, once a start's fixed costs are
behind it.

Peak memory is VmHWM from /proc/<pid>/status of the Spark driver JVM (the java child of this
process), of this Python driver, and of the largest Python worker (the JVM's python descendants,
where decoding and assignment run); each is reset before every run (/proc/<pid>/clear_refs) when
the kernel allows it, else it covers the whole run of the script.

In process, the same events as Arrow batches of B records (Spark's default maxRecordsPerBatch):
`decode_records` (Python) against `NativeEvents.decode` (their batches checked equal) and
`assign_batch` of the output, per row (its stream ids are checked against the job's Delta rows, by
change id).

Needs the local stack (`deploy/local/start`); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import pyarrow as pa  # noqa: E402
from cassandra.concurrent import execute_concurrent_with_args  # noqa: E402
from confluent_kafka import Consumer, KafkaException, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from deploy.local.endpoints import StackUnavailable  # noqa: E402
from services import stack_for_figures  # noqa: E402 - bench/ is the script's directory
from deploy.local.processes import ConnectorProcess, peak_rss  # noqa: E402
from schemas.avro.reader import event_readers  # noqa: E402
from schemas.runtime.session import connect  # noqa: E402
from spark.delivery.assign import assign_batch  # noqa: E402
from spark.delivery.events import decode_records  # noqa: E402
from spark.delivery.native_events import NativeEvents  # noqa: E402
from spark.job.config import JobSettings  # noqa: E402
from spark.streams.generations import MICROS_PER_SECOND  # noqa: E402
from spark.streams.storage import GenerationStore  # noqa: E402
from cluster import add_workers_option, spark_placement  # noqa: E402 - bench/ is the script's directory
from timing import best_seconds  # noqa: E402

MiB = 1 << 20
TABLE = "t"
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}
WITH, LATE, WITHOUT, PYTHON, FLOOR = "with stream ids", "late rows", "pass-through", "Python decoder", "plain append"
# The replica-copy window of the job variants: every row read within it, or (LATE) none.
WINDOW, LATE_WINDOW = "24 hours", "1 second"
# The settings each variant changes: the job as users run it (native decoding, stream ids), the same reading
# every row late, the same without stream ids, the same decoding with the Python reference; the floor is not
# the job (`run_floor`).
VARIANTS = {WITH: {}, LATE: {"dedup_watermark": LATE_WINDOW}, WITHOUT: {"assign_streams": False},
            PYTHON: {"decoder": "python"}, FLOOR: {}}


# --- processes and their memory --------------------------------------------------------------

def _stat(pid: int) -> tuple[str, int] | None:
    """(command name, parent pid) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
    return name, int(rest[1])


def _processes() -> dict[int, tuple[str, int]]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            found[int(entry)] = stat
    return found


def driver_jvm() -> int | None:
    """The Spark driver JVM: the java child of this process."""
    me = os.getpid()
    return next((pid for pid, (name, parent) in _processes().items() if parent == me and name == "java"), None)


def python_workers(jvm: int | None) -> list[int]:
    """The python processes below the JVM (pyspark.daemon and the workers it forks)."""
    if jvm is None:
        return []
    processes = _processes()
    children: dict[int, list[int]] = {}
    for pid, (_, parent) in processes.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], list(children.get(jvm, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        if processes[pid][0].startswith("python"):
            found.append(pid)
    return found


def reset_peak(pid: int | None) -> bool:
    """Reset a process's VmHWM to its current RSS (Linux: `5` to clear_refs); False when refused."""
    if pid is None:
        return False
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / MiB:,.0f} MiB"


# --- input: real connector events --------------------------------------------------------------

def end_offsets(consumer: Consumer, topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (low, high) watermark of `topic`; empty while the topic does not exist."""
    metadata = consumer.list_topics(timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return {}
    return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in metadata.partitions}


def wait_for_events(consumer: Consumer, connector: ConnectorProcess, topic: str, count: int, stall: float) -> int:
    """Wait until `topic` holds `count` events; gives up after `stall` seconds without a new one."""
    deadline, held = time.monotonic() + stall, 0
    while time.monotonic() < deadline:
        try:
            now_held = sum(high - low for low, high in end_offsets(consumer, topic).values())
        except KafkaException:  # the broker is away for a moment (restarted by someone else): ask again
            now_held = held
        if now_held > held:
            held, deadline = now_held, time.monotonic() + stall
        if held >= count:
            return held
        if connector.process.poll() is not None:
            raise SystemExit(f"error: the connector exited ({connector.process.returncode}):\n{log_tail(connector)}")
        time.sleep(0.5)
    raise SystemExit(f"error: {held:,} of {count:,} events in {topic}, none for {stall:.0f} s; the connector's log:\n"
                     f"{log_tail(connector)}")


def log_tail(connector: ConnectorProcess, lines: int = 30) -> str:
    """The end of the connector's log (it lives in the scratch directory, removed on exit)."""
    try:
        return "\n".join(connector.log.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


def prefix_topics(admin: AdminClient, prefix: str) -> list[str]:
    return [name for name in admin.list_topics(timeout=10).topics if name.startswith(f"{prefix}.")]


def delete_topics(admin: AdminClient, topics: list[str]) -> None:
    if not topics:
        return
    for future in admin.delete_topics(topics, operation_timeout=30).values():
        try:
            future.result(60)
        except Exception:  # noqa: BLE001 - already gone, or the broker took longer: nothing to keep
            pass
    deadline = time.monotonic() + 30
    while set(topics) & set(admin.list_topics(timeout=10).topics) and time.monotonic() < deadline:
        time.sleep(0.2)


def record_batches(consumer: Consumer, topic: str, size: int) -> list[pa.RecordBatch]:
    """Every record of `topic` as the Kafka source hands them to `mapInArrow`, `size` per batch."""
    offsets = end_offsets(consumer, topic)
    consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in offsets.items()])
    done = {p for p, (low, high) in offsets.items() if high <= low}
    columns: dict[str, list] = {"topic": [], "partition": [], "offset": [], "timestamp": [], "key": [], "value": []}
    while len(done) < len(offsets):
        for message in consumer.consume(10_000, timeout=1):
            if message.error():
                continue
            columns["topic"].append(message.topic())
            columns["partition"].append(message.partition())
            columns["offset"].append(message.offset())
            columns["timestamp"].append(message.timestamp()[1] * 1000)  # ms -> µs
            columns["key"].append(message.key())
            columns["value"].append(message.value())
            if message.offset() + 1 >= offsets[message.partition()][1]:
                done.add(message.partition())
    consumer.unassign()
    schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                        ("timestamp", pa.timestamp("us", tz="UTC")), ("key", pa.binary()), ("value", pa.binary())])
    table = pa.Table.from_pydict(columns, schema=schema)
    return table.to_batches(max_chunksize=size)


# --- the job ----------------------------------------------------------------------------------

@dataclass
class Run:
    variant: str
    setup: float  # the start() call
    query: float  # start() returned -> the query terminated
    later_records: int  # Kafka records of the micro-batches after the first
    later_seconds: float  # and their trigger time (the query progress's triggerExecution)
    rows: int  # log rows of the benchmark's table
    with_stream_id: int
    dead_letters: int
    jvm_peak: int | None
    driver_peak: int | None
    worker_peak: int | None
    checkpoint: str  # the query's, kept until the scratch directory goes (`state_keys` reads it)
    state_bytes: int = 0  # the replica-copy step's RocksDB files and memory at the end

    @property
    def seconds(self) -> float:
        return self.setup + self.query

    @property
    def rate(self) -> float:
        return self.rows / self.seconds

    @property
    def later_rate(self) -> float:
        return self.later_records / self.later_seconds if self.later_seconds else float("nan")


def awaited(query, what: str) -> tuple[float, list[dict], dict]:
    """(When it ended, the progress of its micro-batches after the first, its last progress) of an available-now
    query, waited for."""
    if not query.awaitTermination(900):
        raise SystemExit(f"error: {what} did not finish within 900 s")
    finished = time.perf_counter()
    if query.exception() is not None:
        raise SystemExit(f"error: {what} failed: {query.exception()}")
    return finished, [p for p in query.recentProgress if p["batchId"] > 0], query.lastProgress or {}


def run_job(spark, settings: JobSettings, keyspace: str, jvm: int | None, variant: str) -> Run:
    from pyspark.sql import functions as F

    from spark.delivery.pipeline import start
    from spark.sinks.delta.sink import DeltaSink

    for pid in (jvm, os.getpid(), *python_workers(jvm)):
        reset_peak(pid)
    sink = DeltaSink(spark, settings.delta_path, settings.app_id)
    started = time.perf_counter()
    job = start(spark, settings, sink, available_now=True)
    query = job.query
    set_up = time.perf_counter()
    try:
        finished, later, last = awaited(query, "the job")
    finally:
        query.stop()
        job.close()
    jvm_peak, driver_peak = peak_rss(jvm), peak_rss(os.getpid())
    worker_peak = max((p for p in map(peak_rss, python_workers(jvm)) if p is not None), default=None)

    log = spark.read.format("delta").load(f"{settings.delta_path}/cdc_log").where(
        (F.col("keyspace") == keyspace) & (F.col("table") == TABLE))
    rows, with_stream_id = log.agg(F.count(F.lit(1)), F.count("`cdc$stream_id`")).first()
    dead_path = settings.delta_path / "dead_letters"
    dead = spark.read.format("delta").load(str(dead_path)).count() if dead_path.exists() else 0
    state = (last.get("stateOperators") or [{}])[0]
    state_bytes = state.get("memoryUsedBytes", 0) + state.get("customMetrics", {}).get("rocksdbSstFileSize", 0)
    return Run(variant, set_up - started, finished - set_up, sum(p["numInputRows"] for p in later),
               sum(p["durationMs"]["triggerExecution"] for p in later) / 1000, rows, with_stream_id, dead, jvm_peak,
               driver_peak, worker_peak, str(settings.checkpoint_dir), state_bytes)


def state_keys(spark, run: Run) -> int:
    """The keys a run's replica-copy step held after its last micro-batch, read from its checkpoint with Spark's
    state data source (the job does not have RocksDB count them as it writes: `spark_session`)."""
    return spark.read.format("statestore").load(run.checkpoint).count()


def run_floor(spark, settings: JobSettings, keyspace: str, jvm: int | None, variant: str) -> Run:
    """The floor: the benchmark's topic through Spark's Kafka source, as the job reads it, appended as it is
    to Delta by Spark's Delta sink, in the same micro-batches."""
    topic = f"{settings.topic_prefix}.{keyspace}.{TABLE}"
    for pid in (jvm, os.getpid(), *python_workers(jvm)):
        reset_peak(pid)
    path = str(settings.delta_path / "records")
    started = time.perf_counter()
    records = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", settings.kafka_bootstrap_servers)
               .option("subscribe", topic).option("startingOffsets", "earliest").option("failOnDataLoss", "true")
               .option("kafka.fetch.max.wait.ms", "10").option("maxOffsetsPerTrigger", settings.max_offsets_per_trigger)
               .load().select("topic", "partition", "offset", "timestamp", "key", "value"))
    query = (records.writeStream.format("delta").option("checkpointLocation", str(settings.checkpoint_dir))
             .trigger(availableNow=True).start(path))
    set_up = time.perf_counter()
    try:
        finished, later, _ = awaited(query, "the plain append")
    finally:
        query.stop()
    worker_peak = max((p for p in map(peak_rss, python_workers(jvm)) if p is not None), default=None)
    rows = spark.read.format("delta").load(path).count()
    return Run(variant, set_up - started, finished - set_up, sum(p["numInputRows"] for p in later),
               sum(p["durationMs"]["triggerExecution"] for p in later) / 1000, rows, 0, 0, peak_rss(jvm),
               peak_rss(os.getpid()), worker_peak, str(settings.checkpoint_dir))


def in_process(records: list[pa.RecordBatch], settings: JobSettings, cql, repeat: int
               ) -> tuple[float, float, float, dict[str, bytes | None]]:
    """(Python decode s, native decode s, assign s, stream id by change id) over `records`, best of
    `repeat`; the two decoders' batches are checked equal."""
    cache = event_readers(settings.registry_url)
    decoded = [decode_records(batch, cache) for batch in records]  # also fetches the writer schemas
    native = NativeEvents(cache)
    if not all(native.decode(batch).equals(expected) for batch, expected in zip(records, decoded)):
        raise SystemExit("error: the native decoder's rows differ from the Python reference's")
    generations = GenerationStore(cql, settings.generations_keyspace).load(
        leeway=int(settings.leeway * MICROS_PER_SECOND), ignore_msb=settings.ignore_msb)
    leeway_us = int(settings.leeway * MICROS_PER_SECOND)
    max_age_us = None if settings.max_age is None else int(settings.max_age * MICROS_PER_SECOND)

    def assign() -> list[pa.RecordBatch]:
        return [assign_batch(batch, generations, leeway_us, max_age_us) for batch in decoded]

    streams = {change: stream for batch in assign() for change, stream in
               zip(batch.column("change_id").to_pylist(), batch.column("cdc$stream_id").to_pylist())}
    decode_seconds = best_seconds(lambda: [decode_records(batch, cache) for batch in records], repeat)
    native_seconds = best_seconds(lambda: [native.decode(batch) for batch in records], repeat)
    assign_seconds = best_seconds(assign, repeat)
    return decode_seconds, native_seconds, assign_seconds, streams


def job_streams(spark, delta_path: Path) -> dict[str, bytes | None]:
    """Stream id by change id of the job's log rows."""
    rows = spark.read.format("delta").load(f"{delta_path}/cdc_log").select("change_id", "`cdc$stream_id`").collect()
    return {row[0]: None if row[1] is None else bytes(row[1]) for row in rows}


def capture(stack, cql, admin: AdminClient, consumer: Consumer, connector: ConnectorProcess, keyspace: str,
            prefix: str, rows: int) -> None:
    """Write `rows` rows to a new cdc table `keyspace.t` with the connector running, until its topic
    `<prefix>.<keyspace>.t` holds them all; stop the connector and delete its other topics."""
    topic = f"{prefix}.{keyspace}.{TABLE}"
    cql.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    cql.execute(f"CREATE TABLE {keyspace}.{TABLE} (k int, c int, v text, n bigint, PRIMARY KEY (k, c)) WITH cdc = true")
    insert = cql.prepare(f"INSERT INTO {keyspace}.{TABLE} (k, c, v, n) VALUES (?, ?, ?, ?)")
    connector.start_from_now()
    connector.start()

    print(f"writing {rows:,} rows to {keyspace}.{TABLE}, connector running", flush=True)
    started = time.monotonic()
    # A generator of results, not their list: that list would stay in this process's memory (and
    # so in the driver's peak below) as hundreds of MiB.
    for ok, result in execute_concurrent_with_args(
            cql, insert, ((i // 5, i % 5, f"value {i:09d} abcdefghijklmnopqrstuvwxyz", i * 7919) for i in range(rows)),
            concurrency=64, raise_on_first_error=True, results_generator=True):
        if not ok:
            raise result
    write_seconds = time.monotonic() - started
    held = wait_for_events(consumer, connector, topic, rows, stall=60)
    capture_seconds = time.monotonic() - started
    connector.stop()
    # The connector sends every cdc table's changes: other writers' tables (tests running beside
    # this) get topics under this prefix too, which the job's pattern would read. Only ours stay.
    others = [t for t in prefix_topics(admin, prefix) if t != topic]
    foreign = sum(high - low for t in others for low, high in end_offsets(consumer, t).values())
    delete_topics(admin, others)
    print(f"{held:,} events in {topic} after {capture_seconds:.1f} s (writes took {write_seconds:.1f} s)"
          + (f"; deleted {len(others)} other topic(s) of the prefix ({foreign:,} events of other "
             f"writers' tables)" if others else ""), flush=True)


def local_stack():
    """The local stack's description; exits 2, saying why, when it is not running."""
    try:
        return stack_for_figures()
    except StackUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def open_clients(stack) -> tuple[AdminClient, Consumer, object, object]:
    """(Kafka admin, consumer, Cassandra cluster, session) of the local stack."""
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "enable.auto.commit": False})
    cluster, cql = connect([stack.cassandra_host], stack.cassandra_port)
    return admin, consumer, cluster, cql


def close_clients(consumer: Consumer, cluster, cql, keyspaces: list[str]) -> None:
    """Close the clients, dropping the benchmark's keyspaces first; each step runs whatever the others do."""
    cleanup(consumer.close)
    for keyspace in keyspaces:
        cleanup(lambda: cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}"))
    cleanup(cluster.shutdown)


def base_settings(stack, prefix: str, generations_keyspace: str, max_offsets: int, master: str,
                  conf: dict[str, str]) -> JobSettings:
    """The job's settings in every run: on `master` (`bench/cluster.py`), the stack's services."""
    return JobSettings(
        kafka_bootstrap_servers=stack.kafka_bootstrap, registry_url=stack.registry_url,
        topic_prefix=prefix, cassandra_hosts=(stack.cassandra_host,), cassandra_port=stack.cassandra_port,
        generations_keyspace=generations_keyspace, spark_master=master, spark_jars=stack.spark_jars,
        max_offsets_per_trigger=max_offsets, dedup_watermark=WINDOW, spark_conf=conf, log_format="text")


def run_in_turns(spark, base: JobSettings, variants: dict[str, dict], first: str, repeat: int, scratch: Path,
                 keyspace: str, jvm: int | None, report) -> tuple[list[Run], list[str]]:
    """(the counted runs, the order of all runs). Run 0 (`first`) warms up (JVM, Python workers, the
    generations keyspace and first generation) and is not counted; then the variants take turns, each
    round starting one later than the last (A B C, B C A, C A B…): the JVM still speeds up over the first
    runs, which would favour the later. Each run has a fresh checkpoint and Delta path; `report(number,
    run)` is called after each."""
    names = list(variants)
    order = [first] + [names[(r + i) % len(names)] for r in range(repeat) for i in range(len(names))]
    runs = []
    for number, variant in enumerate(order):
        settings = base.model_copy(update={
            **variants[variant], "delta_path": scratch / f"run{number}" / "delta",
            "checkpoint_dir": scratch / f"run{number}" / "checkpoint"})
        run = (run_floor if variant == FLOOR else run_job)(spark, settings, keyspace, jvm, variant)
        report(number, run)
        if number:
            runs.append(run)
    return runs, order


def cleanup(step) -> None:
    """Run one clean-up step; a failure is reported and the next steps still run."""
    try:
        step()
    except Exception as exc:  # noqa: BLE001
        print(f"warning: clean-up step failed: {type(exc).__name__}: {exc}", file=sys.stderr)


# --- the run ----------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000, help="rows written, so change events (default 50,000)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="job runs per variant, alternating, after one warm-up run (default 3)")
    parser.add_argument("--batch", type=int, default=10_000, help="records per Arrow batch in process")
    parser.add_argument("--max-offsets", type=int, default=JobSettings().max_changes_per_trigger,
                        help="records per micro-batch at most (default: the job's on one node, %(default)s)")
    add_workers_option(parser)
    args = parser.parse_args()
    if min(args.rows, args.repeat, args.batch, args.max_offsets) < 1:
        parser.error("--rows, --repeat, --batch and --max-offsets must be at least 1")
    stack = local_stack()
    master, conf, placement = spark_placement(args.workers, SPARK_CONF)

    name = uuid.uuid4().hex[:8]
    keyspace, prefix = f"benchjob_{name}", f"benchjob{name}"
    topic = f"{prefix}.{keyspace}.{TABLE}"
    generations_keyspace = f"{keyspace}_gen"
    admin, consumer, cluster, cql = open_clients(stack)
    spark = None
    with tempfile.TemporaryDirectory(prefix="ringtail-bench-job-") as scratch_dir:
        scratch = Path(scratch_dir)
        connector = ConnectorProcess(stack, scratch / "state", prefix)
        try:
            capture(stack, cql, admin, consumer, connector, keyspace, prefix, args.rows)

            from spark.delivery.pipeline import spark_session

            base = base_settings(stack, prefix, generations_keyspace, args.max_offsets, master, conf)
            spark = spark_session(base)
            spark.sparkContext.setLogLevel("ERROR")
            jvm = driver_jvm()
            resettable = reset_peak(jvm) and reset_peak(os.getpid())

            def report(number: int, run: Run) -> None:
                print(f"  run {number}: {run.variant:<16} {run.seconds:6.2f} s (setup {run.setup:.2f} s)"
                      f"  {run.rows:>9,} log rows  {run.rate:>9,.0f} rows/s"
                      + (f"  after the first batch {run.later_rate:,.0f} records/s" if run.later_records else "")
                      + ("  (warm-up, not counted)" if not number else ""), flush=True)

            runs, order = run_in_turns(spark, base, VARIANTS, WITH, args.repeat, scratch, keyspace, jvm, report)

            print("decoding and assigning in process", flush=True)
            records = record_batches(consumer, topic, args.batch)
            decode_s, native_s, assign_s, streams = in_process(records, base, cql, args.repeat)
            in_rows, in_ids = len(streams), sum(stream is not None for stream in streams.values())
            last_with = max(number for number, variant in enumerate(order) if variant == WITH)
            same_as_job = streams == job_streams(spark, scratch / f"run{last_with}" / "delta")
        finally:
            cleanup(connector.stop)
            if spark is not None:
                cleanup(spark.stop)
            close_clients(consumer, cluster, cql, [keyspace, generations_keyspace])
            cleanup(lambda: delete_topics(admin, prefix_topics(admin, prefix)))

    best = {variant: min((r for r in runs if r.variant == variant), key=lambda r: r.seconds)
            for variant in VARIANTS}
    # Past the first micro-batch, a start's fixed costs are behind (generations given to the sink, Python
    # workers, the first plan): what each variant costs per record in a running job.
    later = {variant: max((r.later_rate for r in runs if r.variant == variant and r.later_records), default=None)
             for variant in VARIANTS}

    def largest(variant: str, field: str) -> int | None:
        return max((getattr(r, field) for r in runs if r.variant == variant and getattr(r, field)), default=None)

    peaks = {variant: tuple(largest(variant, f) for f in ("jvm_peak", "driver_peak", "worker_peak"))
             for variant in VARIANTS}
    print(f"\nringtail Spark job, {placement}, Delta sink, replica removal on: {args.rows:,} rows of "
          f"(k int, c int, v text, n bigint) through the real connector, micro-batches of at most {args.max_offsets:,} "
          f"records; best of {args.repeat} runs per variant")
    print(f"  {'variant':<16} {'seconds':>8} {'setup':>6} {'query':>7} {'log rows':>9} {'stream ids':>10}"
          f" {'dead':>5} {'rows/s':>9} {'after 1st':>10}  {'JVM peak':>10} {'driver peak':>11} {'worker peak':>11}")
    for variant, run in best.items():
        jvm_peak, driver_peak, worker_peak = peaks[variant]
        after_first = "-" if later[variant] is None else f"{later[variant]:,.0f}"
        print(f"  {variant:<16} {run.seconds:8.2f} {run.setup:6.2f} {run.query:7.2f} {run.rows:>9,}"
              f" {run.with_stream_id:>10,} {run.dead_letters:>5,} {run.rate:>9,.0f} {after_first:>10}"
              f"  {mib(jvm_peak):>10}"
              f" {mib(driver_peak):>11} {mib(worker_peak):>11}")
    scope = "reset before each run" if resettable else "not resettable here: since the script started"
    print("  after 1st: Kafka records/s of the micro-batches after each run's first (their trigger time), the best"
          " run's")
    print(f"  peaks: VmHWM, the largest over a variant's runs ({scope}); worker: the largest Python worker")
    per_row = 1e6 / in_rows if in_rows else float("nan")
    print(f"\nin process, {len(records)} Arrow batch(es) of up to {args.batch:,} records, best of {args.repeat}:")
    print(f"  decode_records (Python)   {decode_s * per_row:8.2f} µs/row")
    print(f"  NativeEvents.decode       {native_s * per_row:8.2f} µs/row  ({decode_s / native_s:.1f}x faster, the same"
          f" batches)")
    print(f"  assign_batch              {assign_s * per_row:8.2f} µs/row  ({in_ids:,} of {in_rows:,} rows given a"
          f" stream id, {'the same as' if same_as_job else 'NOT the same as'} the job's; {assign_s / native_s:.1%}"
          f" of native decoding)")

    with_ids, without = best[WITH], best[WITHOUT]
    extra = (with_ids.query - without.query) * 1e6 / with_ids.rows if with_ids.rows else float("nan")
    print(f"\nsummary: {with_ids.rate:,.0f} rows/s with stream-id assignment, {without.rate:,.0f} rows/s without:"
          f" {with_ids.seconds / without.seconds:.2f}x the time (query alone {with_ids.query / without.query:.2f}x,"
          f" {extra:+.1f} µs/row); assign_batch alone {assign_s * per_row:.2f} µs/row")
    # The machine's noise moves single runs by ±10 %: the medians beside the best runs.
    median = {variant: statistics.median(r.seconds for r in runs if r.variant == variant) for variant in VARIANTS}
    print(f"         medians of {args.repeat} runs: {median[WITH]:.2f} s with stream ids, {median[WITHOUT]:.2f} s"
          f" without: {median[WITH] / median[WITHOUT]:.2f}x the time")
    if later[WITH] and later[WITHOUT]:
        print(f"         after the first micro-batch: {later[WITH]:,.0f} records/s with stream ids,"
              f" {later[WITHOUT]:,.0f} without: {later[WITHOUT] / later[WITH]:.2f}x the time per record")
    python = best[PYTHON]
    print(f"         {python.rate:,.0f} rows/s with the Python decoder: native {python.seconds / with_ids.seconds:.2f}x"
          f" as fast end to end (query alone {python.query / with_ids.query:.2f}x)")
    late = best[LATE]
    print(f"         {late.rate:,.0f} rows/s with every row late: their look-up in the log"
          f" {late.seconds / with_ids.seconds:.2f}x the time")
    rates = {variant: sorted(r.rate for r in runs if r.variant == variant) for variant in VARIANTS}
    floor = statistics.median(rates[FLOOR])
    print(f"\nrows/s, median of {args.repeat} runs (min–max), each beside the floor (plain append) of the same run:")
    for variant, rated in rates.items():
        print(f"  {variant:<16} {statistics.median(rated):>9,.0f} ({rated[0]:,.0f}–{rated[-1]:,.0f})"
              f"  {statistics.median(rated) / floor:.2f}× the plain append")
    return 0


if __name__ == "__main__":
    sys.exit(main())
