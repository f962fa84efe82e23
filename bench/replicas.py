"""What replica handling costs the Spark job: the same unique changes read once (replication factor 1)
and three times (replication factor 3, one copy per replica's connector), in one run.

    python bench/replicas.py [--rows N] [--repeat R] [--max-changes M]

Input: real connector events. A cdc=true table gets N rows through the connector, as in `bench/job.py`;
its topic is then copied into two topics of their own: RF=1 holds each event once, RF=3 three times, the
copies of one write next to each other as three connectors running side by side send them: the second and
third as the other replicas' connectors write them, with their node's name and a later processing time
(`source.node`, `ts_ms`), which the change id leaves out. The job (`start(..., available_now=True)`,
local[2], Delta sink) reads each R times, taking turns after one warm-up run, each run with a fresh
checkpoint and Delta path:

- RF=1, copies kept: `dedup=False` — the floor: the job with no replica-copy step;
- RF=1: the job as users run it, on one copy of each change (M records a micro-batch);
- RF=3: the job as users run it on a ring at replication factor 3, on three copies of each change: 3M
  records a micro-batch, as the job derives from the replication it reads at start
  (`max_changes_per_trigger` times `spark.streams.ring.copies_per_change`; this single node has 1);
- RF=3, M records a batch: the same with M records a micro-batch, as before the job counted copies:
  a third of the changes a micro-batch, so three times the micro-batches.

The cost of replica handling is RF=3's time per unique change over RF=1's (the goal: at most 1.3x).
A micro-batch has a fixed cost (the sink's and the state's commits, planning) that a backlog read in
three times the micro-batches pays three times: the last variant shows it.
The state is what the replica-copy step holds at the end of an RF=3 run (its keys, read from the
checkpoint, and RocksDB's memory plus its SST files): bounded by the keys of the last
`dedup_watermark` of reading, here every change of the run. Medians of R runs with their spread.

Needs the local stack (`deploy/local/start`); prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from deploy.local.processes import ConnectorProcess  # noqa: E402
from schemas.avro.reader import event_readers  # noqa: E402
from schemas.avro.wire import frame, schema_id_of, unframe  # noqa: E402
from cluster import LOCAL  # noqa: E402 - bench/ is the script's directory
from job import (SPARK_CONF, TABLE, Run, base_settings, capture, cleanup, close_clients, delete_topics,  # noqa: E402
                 driver_jvm, end_offsets, local_stack, open_clients, prefix_topics, run_in_turns, state_keys)
from spark.job.config import JobSettings  # noqa: E402

FLOOR, ONE, THREE, NARROW = "RF=1, copies kept", "RF=1", "RF=3", "RF=3, M records a batch"


class Replicas:
    """An event as each replica's connector sends it: the node that read it and when differ."""

    def __init__(self, registry_url: str) -> None:
        self.readers = event_readers(registry_url)
        self.parsed: dict[int, dict] = {}

    def copy(self, value: bytes, replica: int) -> bytes:
        if replica == 0:
            return value
        schema_id = schema_id_of(value)
        parsed = self.parsed.get(schema_id)
        if parsed is None:
            parsed = self.parsed[schema_id] = self.readers.get(schema_id).parsed
            if frame(schema_id, parsed, unframe(value, parsed)) != value:
                raise SystemExit(f"error: schema {schema_id}: an event does not encode back to its bytes")
        event = unframe(value, parsed)
        event["source"]["node"] = f"{event['source']['node']}-replica-{replica}"
        event["ts_ms"] += replica
        return frame(schema_id, parsed, event)


def copy_topic(consumer: Consumer, producer: Producer, admin: AdminClient, source: str, target: str,
               copies: int, replicas: Replicas) -> int:
    """Every record of `source` into the new topic `target` (same partitions), `copies` times each (as
    that many replicas send it), the copies side by side; how many records `target` got."""
    offsets = end_offsets(consumer, source)
    admin.create_topics([NewTopic(target, len(offsets), 1)])[target].result(30)
    consumer.assign([TopicPartition(source, p, low) for p, (low, _) in offsets.items()])
    left, sent = sum(high - low for low, high in offsets.values()), 0
    while left:
        for message in consumer.consume(10_000, timeout=10):
            if message.error():
                raise SystemExit(f"error: reading {source}: {message.error()}")
            for replica in range(copies):
                value = replicas.copy(message.value(), replica)
                while True:
                    try:
                        producer.produce(target, value, message.key(), partition=message.partition())
                        break
                    except BufferError:
                        producer.poll(0.1)
            sent += copies
            left -= 1
    if producer.flush(60):
        raise SystemExit(f"error: {target}: records unacknowledged after 60 s")
    consumer.unassign()
    return sent


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000, help="unique changes (default 50,000)")
    parser.add_argument("--repeat", type=int, default=3, help="job runs per variant after one warm-up (default 3)")
    parser.add_argument("--max-changes", type=int, default=JobSettings().max_changes_per_trigger,
                        help="changes per micro-batch at most, M (default: the job's, %(default)s)")
    args = parser.parse_args()
    if min(args.rows, args.repeat, args.max_changes) < 1:
        parser.error("--rows, --repeat and --max-changes must be at least 1")
    stack = local_stack()

    name = uuid.uuid4().hex[:8]
    keyspace, prefix = f"benchrf_{name}", f"benchrf{name}"
    admin, consumer, cluster, cql = open_clients(stack)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "linger.ms": 20, "compression.type": "lz4"})
    # The job reads `<prefix>.<keyspace>.<table>`: one prefix per copy count.
    prefixes = {1: f"{prefix}one", 3: f"{prefix}three"}
    spark = None
    runs: list[Run] = []
    keys: dict[int, int] = {}  # the RF=3 runs' state keys, by run number
    with tempfile.TemporaryDirectory(prefix="ringtail-bench-replicas-") as scratch_dir:
        scratch = Path(scratch_dir)
        connector = ConnectorProcess(stack, scratch / "state", prefix)
        try:
            capture(stack, cql, admin, consumer, connector, keyspace, prefix, args.rows)
            source = f"{prefix}.{keyspace}.{TABLE}"
            replicas = Replicas(stack.registry_url)
            for copies, target_prefix in prefixes.items():
                sent = copy_topic(consumer, producer, admin, source, f"{target_prefix}.{keyspace}.{TABLE}", copies,
                                  replicas)
                print(f"{sent:,} records in {target_prefix}.{keyspace}.{TABLE} ({copies} per change)", flush=True)

            from spark.delivery.pipeline import spark_session

            base = base_settings(stack, prefixes[1], f"{keyspace}_gen", args.max_changes, LOCAL, SPARK_CONF)
            spark = spark_session(base)
            spark.sparkContext.setLogLevel("ERROR")
            variants = {FLOOR: {"topic_prefix": prefixes[1], "dedup": False}, ONE: {"topic_prefix": prefixes[1]},
                        THREE: {"topic_prefix": prefixes[3], "max_offsets_per_trigger": 3 * args.max_changes},
                        NARROW: {"topic_prefix": prefixes[3]}}

            def report(number: int, run: Run) -> None:
                state = ""
                if run.variant in (THREE, NARROW):
                    keys[number] = state_keys(spark, run)
                    state = f"  state {keys[number]:,} keys, {run.state_bytes / (1 << 20):.1f} MiB"
                print(f"  run {number}: {run.variant:<18} {run.seconds:6.2f} s  {run.rows:>9,} log rows{state}"
                      + ("  (warm-up, not counted)" if not number else ""), flush=True)

            runs, _ = run_in_turns(spark, base, variants, THREE, args.repeat, scratch, keyspace, driver_jvm(), report)
        finally:
            cleanup(connector.stop)
            if spark is not None:
                cleanup(spark.stop)
            close_clients(consumer, cluster, cql, [keyspace, f"{keyspace}_gen"])
            cleanup(lambda: delete_topics(admin, [t for p in (prefix, *prefixes.values())
                                                  for t in prefix_topics(admin, p)]))

    seconds = {v: [r.seconds for r in runs if r.variant == v] for v in (FLOOR, ONE, THREE, NARROW)}
    wrong = sorted({r.rows for r in runs} - {args.rows})
    print(f"\nreplica handling in the Spark job, local[2], Delta sink: {args.rows:,} unique changes, micro-batches of"
          f" at most {args.max_changes:,} changes (M); medians of {args.repeat} runs (min–max)")
    for variant, values in seconds.items():
        per_change = statistics.median(values) * 1e6 / args.rows
        print(f"  {variant:<18} {spread(values):>22}  {per_change:7.1f} µs per unique change")
    three = [r for r in runs if r.variant in (THREE, NARROW)]
    held_keys = statistics.median(keys[n] for n in keys if n)
    held = statistics.median(r.state_bytes for r in three)
    one = statistics.median(seconds[ONE])
    print(f"  RF=3 / RF=1: {statistics.median(seconds[THREE]) / one:.2f}x the time per unique change (goal: at most"
          f" 1.3x); {statistics.median(seconds[NARROW]) / one:.2f}x with M records a micro-batch;"
          f" RF=1 / floor: {one / statistics.median(seconds[FLOOR]):.2f}x")
    print(f"  state at the end of an RF=3 run: {held_keys:,.0f} keys, {held / (1 << 20):.1f} MiB,"
          f" {held / held_keys if held_keys else float('nan'):.0f} bytes per change")
    if wrong:
        print(f"  WARNING: runs logged {wrong} rows, not {args.rows:,}: a copy was kept or a change lost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
