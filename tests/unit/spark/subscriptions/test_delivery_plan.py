"""Where a subscription's query reads from and keeps its checkpoint, and the runner's settings checks."""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import replace

import pytest
from pydantic import ValidationError

from schemas.runtime.access import CassandraCluster
from spark.server.delivery import START_SLACK, checkpoint_of, source_of
from spark.sinks.registry import sink_settings
from spark.sinks.settings import SinkContext
from spark.subscriptions.control import as_json
from spark.subscriptions.model import Change, InvalidSubscription, Subscription, start_time
from spark.subscriptions.registry import SnapshotVersion
from spark.subscriptions.settings import ServerSettings

CONTEXT = SinkContext(app_id="test", cluster=CassandraCluster(("127.0.0.1",)), keyspace="ringtail_cdc",
                      kafka="127.0.0.1:9092", registry="http://127.0.0.1:8081")


def subscription(**change) -> Subscription:
    return Subscription.create("audit", Change(table="shop.orders", sink="delta", sink_config={"path": "/x"},
                                               **change))


def test_earliest_reads_every_offset_of_the_tables_topic_only():
    source = source_of(ServerSettings(topic_prefix="rt.a"), subscription(start="earliest"))
    assert source.starting == {"startingOffsets": "earliest"}
    assert source.pattern == r"rt\.a\.shop\.orders"


def test_a_timestamp_start_reads_kafka_from_a_minute_before_it():
    source = source_of(ServerSettings(), subscription(start="2026-11-01T10:00:00+01:00"))
    at = dt.datetime(2026, 11, 1, 9, tzinfo=dt.timezone.utc) - START_SLACK
    assert source.starting == {"startingTimestamp": str(int(at.timestamp() * 1000)),
                               "startingOffsetsByTimestampStrategy": "latest"}


def test_a_time_without_zone_is_utc():
    assert start_time("2026-11-01T09:00:00") == dt.datetime(2026, 11, 1, 9, tzinfo=dt.timezone.utc)


def test_each_reset_has_a_checkpoint_of_its_own(tmp_path):
    settings = ServerSettings(checkpoint_dir=tmp_path)
    first = subscription()
    assert checkpoint_of(settings, first).path == tmp_path / "audit" / "epoch-1"
    second = Subscription(**{**first.__dict__, "epoch": 2})
    assert checkpoint_of(settings, second).path == tmp_path / "audit" / "epoch-2"


def test_after_a_snapshot_the_log_starts_at_the_snapshot_versions_offsets(tmp_path):
    settings = ServerSettings(checkpoint_dir=tmp_path)
    snap = subscription(start="snapshot")
    version = SnapshotVersion(dt.datetime.now(dt.timezone.utc), "ringtail.shop.orders", {0: 12, 1: 0})
    assert json.loads(source_of(settings, snap, version).starting["startingOffsets"]) == {
        "ringtail.shop.orders": {"0": 12, "1": 0}}
    # The topic did not exist when the snapshot started: every change in it came later.
    assert source_of(settings, snap, SnapshotVersion(version.started, version.topic, {})).starting == {
        "startingOffsets": "earliest"}
    assert checkpoint_of(settings, snap, snapshot=True).path == tmp_path / "audit" / "epoch-1.snapshot"


def test_a_bad_start_names_the_starts_there_are():
    with pytest.raises(InvalidSubscription, match="now, earliest, snapshot or an ISO 8601 timestamp"):
        subscription(start="yesterday")


def test_leases_are_renewed_well_within_their_life():
    with pytest.raises(ValidationError, match="poll_interval must be under half of lease_ttl"):
        ServerSettings(lease_ttl=4, poll_interval=2)
    assert ServerSettings(lease_ttl=15, poll_interval=2).lease_ttl == 15


def test_server_settings_come_from_their_own_variables(monkeypatch):
    monkeypatch.setenv("RINGTAIL_SERVER_RUNNER_ID", "r1")
    monkeypatch.setenv("RINGTAIL_JOB_TOPIC_PREFIX", "not-mine")
    settings = ServerSettings.load(None)
    assert (settings.runner_id, settings.topic_prefix) == ("r1", "ringtail")


@pytest.mark.parametrize("setting, message", [
    ({"url": "ftp://x"}, "url = 'ftp://x': an http:// or https:// URL"),
    ({"url": "http://x", "batch_size": "0"}, "batch_size = '0': Input should be greater than 0"),
    ({"url": "http://x", "timeout": "soon"}, "timeout = 'soon'"),
    ({"url": "http://x", "verify": "maybe"}, "verify = 'maybe': true or false"),
])
def test_sink_settings_are_typed_and_refused_at_create(setting, message):
    with pytest.raises(InvalidSubscription, match=re.escape(message)):
        Subscription.create("hook", Change(table="shop.orders", sink="http", sink_config=setting))
    assert Subscription.create("hook", Change(table="shop.orders", sink="http", sink_config={
        "url": "https://example.org/in", "batch_size": "100", "timeout": "2.5", "verify": "false"})).sink == "http"


def test_missing_and_unknown_settings_are_named():
    with pytest.raises(InvalidSubscription, match="sink delta needs path"):
        Subscription.create("d", Change(table="shop.orders", sink="delta", sink_config={"layout": "log"}))
    with pytest.raises(InvalidSubscription, match=re.escape(
            "sink delta has no setting 'layot' (settings: concurrent_tables, layout, path)")):
        Subscription.create("d", Change(table="shop.orders", sink="delta", sink_config={"path": "/l", "layot": "log"}))
    with pytest.raises(InvalidSubscription, match="unknown sink 'parquet'; sinks: cassandra, delta, http, kafka"):
        Subscription.create("d", Change(table="shop.orders", sink="parquet", sink_config={}))


def test_settings_show_no_secret_and_a_target_names_no_password():
    settings = sink_settings("http", {"url": "http://x", "token": "s3cret"})
    assert "s3cret" not in repr(settings) and settings.token.get_secret_value() == "s3cret"
    postgres = sink_settings("postgres", {"dsn": "postgresql://app:pw@db:5432/shop", "schema": "cdc"})
    assert postgres.target() == "postgres:postgresql://app:***@db:5432/shop:cdc"
    assert "pw" not in repr(postgres)
    mysql = sink_settings("mysql", {"dsn": "mysql://app:pw@db/shop", "layout": "mirror"})
    assert mysql.mirrors and mysql.target() == "mysql:mysql://app:***@db/shop"


def test_a_secret_in_clear_is_refused_at_create_and_alter_and_taken_from_a_file_instead(tmp_path):
    with pytest.raises(InvalidSubscription, match=re.escape(
            "sink http: token would be stored in clear in ringtail_cdc.subscriptions; give the secret as a file")):
        Subscription.create("hook", Change(table="shop.orders", sink="http", sink_config={
            "url": "https://example.org/in", "token": "s3cret"}))
    with pytest.raises(InvalidSubscription, match="sink postgres: dsn would be stored in clear"):
        Subscription.create("pg", Change(table="shop.orders", sink="postgres", sink_config={
            "dsn": "postgresql://app:pw@db/shop"}))
    with pytest.raises(InvalidSubscription, match="sink mysql: dsn would be stored in clear"):
        Subscription.create("my", Change(table="shop.orders", sink="mysql", sink_config={
            "dsn": "mysql://app:pw@db/shop"}))
    (tmp_path / "token").write_text("s3cret\n")
    hook = Subscription.create("hook", Change(table="shop.orders", sink="http", sink_config={
        "url": "https://example.org/in", "token_file": str(tmp_path / "token")}))
    assert hook.sink_config == {"url": "https://example.org/in", "token_file": str(tmp_path / "token")}
    assert hook.sink_settings().open(None, CONTEXT).poster.token == "s3cret"  # read when a runner opens the sink
    open_hook = Subscription.create("open", Change(table="shop.orders", sink="http", sink_config={
        "url": "https://example.org/in"}))
    with pytest.raises(InvalidSubscription, match="sink http: token would be stored in clear"):
        open_hook.altered(Change(sink_config={"token": "s3cret"}))


def test_show_list_and_json_print_no_secret_of_a_subscription_stored_in_clear_before():
    # Stored before secrets were refused: still delivered, still never printed; a change leaving its sink
    # settings alone is not refused for them.
    hook = Subscription("hook", "shop", "orders", "http", {"url": "https://example.org/in", "token": "s3cret"})
    pg = Subscription("pg", "shop", "orders", "postgres", {"dsn": "postgresql://app:pw@db/shop", "schema": "cdc"})
    assert as_json(hook)["sink_config"] == {"url": "https://example.org/in", "token": "***"}
    assert as_json(pg)["sink_config"] == {"dsn": "postgresql://app:***@db/shop", "schema": "cdc"}
    assert hook.sink_settings().open(None, CONTEXT).poster.token == "s3cret"
    assert hook.altered(Change(filter="true")).filter == "true"


def test_a_mysql_dsn_is_checked_at_create():
    with pytest.raises(InvalidSubscription, match=r"dsn = 'mysql://h': mysql://user\[:password\]@host"):
        Subscription.create("m", Change(table="shop.orders", sink="mysql", sink_config={"dsn": "mysql://h"}))
    with pytest.raises(InvalidSubscription, match=re.escape("dsn = 'mysql://app:***@h'")):
        Subscription.create("m", Change(table="shop.orders", sink="mysql", sink_config={"dsn": "mysql://app:pw@h"}))


def test_a_kafka_format_is_checked_at_create():
    with pytest.raises(InvalidSubscription, match=re.escape("format = 'xml': Input should be 'json' or 'avro'")):
        Subscription.create("k", Change(table="shop.orders", sink="kafka", sink_config={"topic": "t", "format": "xml"}))
    with pytest.raises(InvalidSubscription, match=re.escape("registry_url = 'registry:8081'")):
        Subscription.create("k", Change(table="shop.orders", sink="kafka", sink_config={
            "topic": "t", "format": "avro", "registry_url": "registry:8081"}))
    assert Subscription.create("k", Change(table="shop.orders", sink="kafka", sink_config={
        "topic": "t", "format": "avro", "registry_url": "http://registry:8081"})).sink_config["format"] == "avro"
    with pytest.raises(InvalidSubscription, match=re.escape("transactions = 'sometimes': true or false")):
        Subscription.create("k", Change(table="shop.orders", sink="kafka", sink_config={
            "topic": "t", "transactions": "sometimes"}))


def test_a_delta_layout_is_checked_at_create():
    with pytest.raises(InvalidSubscription,
                       match=re.escape("layout = 'wide': Input should be 'log', 'typed' or 'mirror'")):
        Subscription.create("d", Change(table="shop.orders", sink="delta",
                                        sink_config={"path": "/l", "layout": "wide"}))
    assert Subscription.create("d", Change(table="shop.orders", sink="delta", sink_config={
        "path": "/l", "layout": "typed"})).sink_config["layout"] == "typed"


def test_tables_written_at_once_are_at_least_one():
    with pytest.raises(InvalidSubscription, match=re.escape("concurrent_tables = '0': Input should be greater than or"
                                                            " equal to 1")):
        Subscription.create("d", Change(table="shop.orders", sink="delta",
                                        sink_config={"path": "/l", "layout": "mirror", "concurrent_tables": 0}))
    assert Subscription.create("d", Change(table="shop.orders", sink="delta", sink_config={
        "path": "/l", "layout": "mirror", "concurrent_tables": 8})).sink_config["concurrent_tables"] == 8


@pytest.mark.parametrize("sink, config", [("delta", {"path": "/l"}), ("postgres", {"dsn": "postgresql://h/d"}),
                                          ("mysql", {"dsn": "mysql://u@h/d"})])
def test_a_mirror_is_the_whole_table(sink, config):
    config = {**config, "layout": "mirror"}
    for start in ("earliest", "snapshot"):
        assert Subscription.create("m", Change(table="shop.orders", sink=sink, sink_config=config,
                                               start=start)).sink_config["layout"] == "mirror"
    for change, refused in ((Change(filter="qty > 5"), "no filter, columns or operations"),
                            (Change(columns=("qty",)), "no filter, columns or operations"),
                            (Change(operations=("insert",)), "no filter, columns or operations")):
        with pytest.raises(InvalidSubscription, match=refused):
            Subscription.create("m", replace(change, table="shop.orders", sink=sink, sink_config=config))
    with pytest.raises(InvalidSubscription,
                       match=re.escape("layout = 'wide': Input should be 'log', 'typed' or 'mirror'")):
        Subscription.create("m", Change(table="shop.orders", sink="postgres",
                                        sink_config={"dsn": "postgresql://h/d", "layout": "wide"}))


def test_a_kafka_image_layout_takes_avro_and_a_state_path_and_the_whole_table():
    images = {"topic": "t", "format": "avro", "layout": "image", "state_path": "s3a://bucket/images"}
    assert Subscription.create("i", Change(table="shop.orders", sink="kafka", sink_config=images,
                                           start="snapshot")).sink_config["layout"] == "image"
    for config, refused in (({**images, "format": "json"}, "the image layout takes format avro"),
                            ({k: v for k, v in images.items() if k != "state_path"},
                             "the image layout takes a state_path")):
        with pytest.raises(InvalidSubscription, match=refused):
            Subscription.create("i", Change(table="shop.orders", sink="kafka", sink_config=config))
    with pytest.raises(InvalidSubscription, match="state_path is the image layout's"):
        Subscription.create("i", Change(table="shop.orders", sink="kafka", sink_config={
            "topic": "t", "state_path": "/s"}))
    with pytest.raises(InvalidSubscription, match="no filter, columns or operations"):
        Subscription.create("i", Change(table="shop.orders", sink="kafka", sink_config=images, filter="qty > 5"))


def test_an_http_image_layout_takes_a_state_path_and_the_whole_table():
    images = {"url": "https://receiver.example/changes", "layout": "image", "state_path": "s3a://bucket/images"}
    assert Subscription.create("i", Change(table="shop.orders", sink="http", sink_config=images)).sink_config == images
    with pytest.raises(InvalidSubscription, match="the image layout takes a state_path"):
        Subscription.create("i", Change(table="shop.orders", sink="http", sink_config={
            k: v for k, v in images.items() if k != "state_path"}))
    with pytest.raises(InvalidSubscription, match="no filter, columns or operations"):
        Subscription.create("i", Change(table="shop.orders", sink="http", sink_config=images, columns=("qty",)))
