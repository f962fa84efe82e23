"""Checkpoints and Delta tables named by a path or any file system's URI: kept as given (a Path folds
`s3a://b/x` into `s3a:/b/x`), joined with `/`, and Spark's offsets read alike from a path and a `file:` URI."""
from pathlib import Path

import pytest

from spark.job.checkpoint import batch_digest, newest_batch
from spark.job.config import JobSettings
from spark.location import Location
from spark.server.config import ServerSettings
from spark.server.delivery import checkpoint_of
from spark.subscriptions.model import Subscription

CHECKPOINT = Path(__file__).parent / "job" / "data" / "kafka-checkpoint"


@pytest.mark.parametrize("uri", ["s3a://lake/ringtail/checkpoints", "hdfs://namenode:8020/ringtail",
                                 "abfss://cdc@account.dfs.core.windows.net/ringtail", "gs://lake/ringtail",
                                 "file:///var/lib/ringtail"])
def test_a_uri_stays_as_given_through_the_settings_and_joins(uri, monkeypatch):
    settings = JobSettings(checkpoint_dir=uri, delta_path=f"{uri}/delta")
    assert str(settings.checkpoint_dir) == uri and str(settings.delta_path) == f"{uri}/delta"
    assert str(settings.checkpoint_dir / "orders" / "epoch-1") == f"{uri}/orders/epoch-1"
    assert settings.model_dump(mode="json")["checkpoint_dir"] == uri
    monkeypatch.setenv("RINGTAIL_SERVER_CHECKPOINT_DIR", uri)
    subscription = Subscription(name="orders", keyspace="shop", table="orders", sink="delta",
                                sink_config={"path": "/x"})
    assert str(checkpoint_of(ServerSettings(), subscription)) == f"{uri}/orders/epoch-1"


def test_a_uri_a_path_folded_is_refused_and_a_path_stays_a_path():
    with pytest.raises(ValueError, match=r"'s3a:/lake/x': a URI needs // after its scheme \(s3a://…\)"):
        JobSettings(checkpoint_dir="s3a:/lake/x")
    relative = JobSettings(checkpoint_dir=Path("checkpoints")).checkpoint_dir
    assert relative.is_local and relative.path == Path("checkpoints") and str(relative / "a") == "checkpoints/a"
    with pytest.raises(ValueError, match="not on the local file system"):
        Location("s3a://lake/x").path
    assert Location("file:///var/lib/x").path == Path("/var/lib/x")
    assert Location("s3a://lake/a/b").parent == Location("s3a://lake/a")


def test_spark_offsets_read_alike_from_a_path_and_a_file_uri():
    uri = Location(CHECKPOINT.as_uri())
    assert uri.scheme == "file" and uri.is_local
    assert newest_batch(uri) == newest_batch(CHECKPOINT) == 1
    assert batch_digest(uri, 1) == batch_digest(CHECKPOINT, 1)
