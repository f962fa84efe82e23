"""What ringtail ships to executors that do not have it (spark.ship): the distributions it needs here,
its own files without the Rust crate, an archive made once per content, and the configuration that
hands it to Spark beside what the settings give."""
import os
import tarfile
import time

from spark import ship
from spark.delivery.pipeline import shipped, spark_master
from spark.job.config import JobSettings


def test_the_dependencies_are_what_ringtail_imports_on_executors_and_not_what_spark_has():
    names = {d.metadata["Name"].lower().replace("_", "-") for d in ship.dependencies()}
    # The native core's callers, the sinks' drivers, Arrow for mapInArrow: all there.
    assert {"pydantic", "pydantic-core", "fastavro", "confluent-kafka", "cassandra-driver", "psycopg",
            "pymysql", "pyarrow", "numpy", "mmh3"} <= names
    assert not names & {"pyspark", "py4j", "delta-spark", "ringtail"}  # the cluster's Spark has its own
    assert not names & {"pytest", "hypothesis", "testcontainers"}  # the dev extra is not asked for


def test_markers_ask_for_an_extra_only_when_it_is_wanted():
    assert ship._needed(None, set())
    assert ship._needed('python_version >= "3.8"', set())  # left to what pip installed
    assert not ship._needed('extra == "dev"', {"spark"})
    assert ship._needed("extra == 'spark' and python_version >= '3.11'", {"spark"})


def test_ringtails_own_files_leave_out_the_crate_and_caches():
    names = [name for _, name in ship._own_files()]
    assert "schemas/change.py" in names and "spark/delivery/pipeline.py" in names
    assert any(name.startswith("schemas/_native") for name in names)  # the native core
    assert not [n for n in names if n.startswith(("schemas/native/", "spark/native/")) or "__pycache__" in n]
    assert not [n for n in names if n.startswith("connector/")]  # Spark's side needs none of the connector


def test_an_archive_is_made_once_per_content_and_the_newest_three_are_kept(tmp_path, monkeypatch):
    source = tmp_path / "src"
    source.mkdir()
    module = source / "module.py"
    module.write_text("VALUE = 1\n")
    monkeypatch.setattr(ship, "contents", lambda: [(module, "package/module.py")])
    out = tmp_path / "out"
    first = ship.pack(out)
    assert ship.pack(out) == first  # the same content: made once
    with tarfile.open(first) as tar:
        assert tar.getnames() == ["package/module.py"]
        assert tar.extractfile("package/module.py").read() == b"VALUE = 1\n"
    made = [first]
    for value in range(2, 6):  # an edited module: another archive
        module.write_text(f"VALUE = {value}\n")
        os.utime(module, ns=(time.time_ns() + value, time.time_ns() + value * 1_000_000))
        made.append(ship.pack(out))
    assert len(set(made)) == 5
    assert sorted(out.glob("*.tar.gz")) == sorted(made[-3:])


def test_the_archive_goes_beside_the_archives_and_path_the_settings_give(tmp_path, monkeypatch):
    archive = tmp_path / "ringtail-0.1.0-py311-abc.tar.gz"
    monkeypatch.setattr(ship, "pack", lambda directory: archive.touch() or archive)
    settings = JobSettings(spark_master="spark://master:7077", ship_dir=tmp_path)
    conf = shipped(settings, {"spark.archives": "hdfs:///deps/more.zip#more",
                              "spark.executorEnv.PYTHONPATH": "more"})
    assert conf == {"spark.archives": f"hdfs:///deps/more.zip#more,{archive.as_uri()}#ringtail",
                    "spark.executorEnv.PYTHONPATH": f"more{os.pathsep}ringtail"}
    assert ship.spark_conf(archive) == {"spark.archives": f"{archive.as_uri()}#ringtail",
                                        "spark.executorEnv.PYTHONPATH": "ringtail"}


def test_an_unset_master_leaves_spark_submits_and_is_local_otherwise(monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert spark_master(JobSettings()) == ("local[*]", "local[*]")
    assert spark_master(JobSettings(spark_master="spark://m:7077")) == ("spark://m:7077", "spark://m:7077")
