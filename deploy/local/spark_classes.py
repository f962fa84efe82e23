"""A class-data archive of the local stack's Spark drivers (the JVM's AppCDS): the classes a ringtail driver
loads — Spark SQL, Structured Streaming, Delta, Avro, Kafka, Python workers — parsed and verified once,
mapped at each start instead of read from some 300 jars. A driver starts in about half the CPU time (a
local session with a first query: 17 s → 10 s of CPU on two cores), which the tests pay dozens of times.

`python -m deploy.local.spark_classes ARCHIVE JAR...` builds it: a driver with the stack's jars runs a
small workload of each kind and writes the classes it loaded at exit (-XX:ArchiveClassesAtExit). A JVM
given the archive (-XX:SharedArchiveFile) that does not match it (another JVM, other jars) loads its
classes as usual, silently (the options turn the JVM's archive warnings off): a stale archive costs time,
never correctness.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # no warning per class it cannot take, in every driver's log


def options(archive: Path) -> str:
    """The JVM options a driver uses the archive with (SPARK_SUBMIT_OPTS)."""
    return f"-XX:SharedArchiveFile={archive} {_QUIET}"


def _workload(jars: list[str], scratch: Path) -> None:
    import pyarrow as pa
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    from spark.job.config import JobSettings
    from spark.delivery.pipeline import spark_session

    spark = spark_session(JobSettings(spark_master="local[2]", spark_jars=tuple(jars),
                                      spark_conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"}))
    try:
        def doubled(batches):
            for batch in batches:
                yield pa.RecordBatch.from_arrays([pa.compute.multiply(batch.column(0), 2)], ["id"])

        frame = spark.range(200).withColumn("k", F.col("id") % 7)
        frame.mapInArrow(doubled, "id long").agg(F.sum("id")).collect()
        frame.groupBy("k").count().join(frame, "k").orderBy("id").limit(5).collect()
        frame.select(F.to_json(F.struct("id", "k")).alias("json")).select(
            F.from_json("json", "id long, k long")).collect()
        table = str(scratch / "delta")
        frame.write.format("delta").save(table)
        spark.sql(f"MERGE INTO delta.`{table}` t USING (SELECT id, k + 1 AS k FROM range(100, 300) "
                  "CROSS JOIN (SELECT 1 AS k)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                  "WHEN NOT MATCHED THEN INSERT *")
        spark.read.format("delta").load(table).count()
        # The Kafka source's and Avro's classes (Kafka is asked nothing before a query starts).
        (spark.readStream.format("kafka").option("kafka.bootstrap.servers", "127.0.0.1:9")
         .option("subscribe", "none").load().select(from_avro("value", '"long"')).schema)
        query = (spark.readStream.format("delta").load(table).dropDuplicates(["id"])
                 .writeStream.trigger(availableNow=True).option("checkpointLocation", str(scratch / "checkpoint"))
                 .foreachBatch(lambda batch, _: batch.write.format("delta").mode("append").save(str(scratch / "out")))
                 .start())
        query.awaitTermination()
    finally:
        spark.stop()
    # The JVM writes the archive as it exits, which it does when its standard input closes.
    from pyspark import SparkContext

    process = SparkContext._gateway.proc
    process.stdin.close()
    process.wait(300)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m deploy.local.spark_classes ARCHIVE JAR...", file=sys.stderr)
        return 2
    archive = Path(args[0])
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(archive.name + ".partial")
    partial.unlink(missing_ok=True)
    os.environ["SPARK_SUBMIT_OPTS"] = f"-XX:ArchiveClassesAtExit={partial} {_QUIET}"
    with tempfile.TemporaryDirectory(prefix="ringtail-spark-classes-") as scratch:
        _workload(args[1:], Path(scratch))
    if not partial.exists():
        print(f"the JVM wrote no class archive at {partial}", file=sys.stderr)
        return 1
    partial.rename(archive)  # whole or absent: a JVM never maps a half-written archive
    return 0


if __name__ == "__main__":
    sys.exit(main())
