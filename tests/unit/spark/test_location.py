"""Checkpoints and Delta tables named by a path or any file system's URI: kept as given (a Path folds
`s3a://b/x` into `s3a:/b/x`), joined with `/`, and Spark's offsets read alike from a path and a `file:` URI;
S3 reached as the standard AWS environment says, the secret never shown."""
from pathlib import Path

import pytest

from spark.delivery.checkpoint import newest_batch, planned_batch
from spark.job.config import JobSettings
from spark.location import Location, S3Access, StorageAccessError
from spark.server.delivery import checkpoint_of
from spark.subscriptions.model import Subscription
from spark.subscriptions.settings import ServerSettings

CHECKPOINT = Path(__file__).parent / "delivery" / "data" / "kafka-checkpoint"


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
    assert planned_batch(uri, 1) == planned_batch(CHECKPOINT, 1)


def credentials(tmp_path: Path, text: str) -> dict[str, str]:
    file = tmp_path / "credentials"
    file.write_text(text)
    return {"AWS_SHARED_CREDENTIALS_FILE": str(file)}


def test_s3_keys_from_the_environment_win_over_the_credentials_file_and_reach_s3a(tmp_path):
    environ = {**credentials(tmp_path, "[default]\naws_access_key_id = file-id\naws_secret_access_key = file-secret\n"),
               "AWS_ACCESS_KEY_ID": "env-id", "AWS_SECRET_ACCESS_KEY": "env-secret",
               "AWS_ENDPOINT_URL": "http://store:9000", "AWS_REGION": "eu-west-1"}
    access = S3Access.from_environment(environ)
    assert access.hadoop_conf() == {
        "spark.hadoop.fs.s3a.endpoint": "http://store:9000", "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1", "spark.hadoop.fs.s3a.access.key": "env-id",
        "spark.hadoop.fs.s3a.secret.key": "env-secret"}
    assert "env-secret" not in repr(access) and "env-secret" not in str(access)
    # The service's own endpoint variable before the general one, as AWS's tools read them.
    assert S3Access.from_environment({**environ, "AWS_ENDPOINT_URL_S3": "http://s3:1"}).endpoint == "http://s3:1"


def test_s3_keys_from_a_profile_of_the_credentials_file_with_a_session_token(tmp_path):
    environ = {**credentials(tmp_path, "[default]\naws_access_key_id = d\naws_secret_access_key = ds\n"
                                       "[lake]\naws_access_key_id = l\naws_secret_access_key = ls\n"
                                       "aws_session_token = lt\n"), "AWS_PROFILE": "lake"}
    conf = S3Access.from_environment(environ).hadoop_conf()
    assert (conf["spark.hadoop.fs.s3a.access.key"], conf["spark.hadoop.fs.s3a.secret.key"]) == ("l", "ls")
    assert conf["spark.hadoop.fs.s3a.session.token"] == "lt"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert "spark.hadoop.fs.s3a.endpoint" not in conf  # AWS itself: buckets by host name
    del environ["AWS_PROFILE"]
    assert S3Access.from_environment(environ).key_id == "d"


def test_no_s3_credentials_anywhere_leaves_s3a_its_own_providers(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws/credentials
    assert S3Access.from_environment({}).hadoop_conf() == {}


@pytest.mark.parametrize("text, environ, message", [
    (None, {"AWS_PROFILE": "lake"}, r"S3 credentials: .*credentials does not exist"),
    ("[default]\naws_access_key_id = d\naws_secret_access_key = s\n", {"AWS_PROFILE": "lake"},
     r"S3 credentials: no profile 'lake' in .*credentials"),
    ("[default]\naws_access_key_id = d\n", {}, r"profile 'default' of .*credentials lacks aws_access_key_id or"),
    ("aws_access_key_id = d\n", {}, r"credentials is not a credentials file \(MissingSectionHeaderError\)"),
])
def test_s3_credentials_that_cannot_be_read_are_refused_by_name(tmp_path, monkeypatch, text, environ, message):
    monkeypatch.setenv("HOME", str(tmp_path))
    file = tmp_path / "credentials"
    if text is not None:
        file.write_text(text)
    with pytest.raises(StorageAccessError, match=message):
        S3Access.from_environment({"AWS_SHARED_CREDENTIALS_FILE": str(file), **environ})


def test_a_file_written_replaces_the_old_whole_and_leaves_no_part_behind(tmp_path):
    file = Location(tmp_path / "states" / "purges" / "a.json")
    file.write_text('{"purged": 1}')
    file.write_text('{"purged": 2}')
    assert file.read_text() == '{"purged": 2}'
    assert file.parent.names() == ["a.json"]
    assert Location((tmp_path / "b.json").as_uri()).write_text("x") is None and (tmp_path / "b.json").read_text() == "x"
