"""The job into Delta on a real node: CQL writes of every operation become log rows whose tokens are the
node's own and whose stream ids are the library's lookup in the generation the job published. A suite
(`tests/integration/suites`): run on the main node by `test_job.py`, on the older series by
`test_cassandra_versions.py`."""
from __future__ import annotations

import json

from spark import rows as R
from spark.streams.storage import GenerationStore
from tests.integration.delivered import dead_letters, log_rows, run_available
from tests.integration.pipeline import has_marker, write_marker


class JobIntoDelta:
    """The job (the `job` fixture: a connector beside the module's `node`, and settings reading it)."""

    def test_cql_writes_become_cdc_log_rows_with_the_library_streams(self, spark, cql, keyspace, job):
        connector, consumer, settings = job
        ks = keyspace
        cql.execute(f"CREATE TABLE {ks}.orders (shop text, id int, item text, qty int, tags set<text>,"
                    f" PRIMARY KEY (shop, id)) WITH cdc = true")
        shops = [f"shop-{i}" for i in range(20)]
        for i, shop in enumerate(shops):
            cql.execute(f"INSERT INTO {ks}.orders (shop, id, item, qty, tags) VALUES (%s, 1, 'apple', %s, {{'red'}})",
                        (shop, i))
        cql.execute(f"UPDATE {ks}.orders SET qty = 99, tags = tags - {{'red'}} WHERE shop = 'shop-0' AND id = 1")
        cql.execute(f"DELETE FROM {ks}.orders WHERE shop = 'shop-1' AND id > 5 AND id <= 9")
        cql.execute(f"DELETE FROM {ks}.orders WHERE shop = 'shop-2'")
        consumer.until(has_marker(write_marker(cql, ks)))

        run_available(spark, settings)

        rows = log_rows(spark, settings, keyspace, "orders")
        ops = [r["cdc$operation"] for r in rows]
        assert ops.count(R.ROW_INSERT) == 20 and ops.count(R.ROW_UPDATE) == 1 and ops.count(R.PARTITION_DELETE) == 1
        assert ops.count(R.RANGE_DELETE_START_EXCLUSIVE) == 1 and ops.count(R.RANGE_DELETE_END_INCLUSIVE) == 1
        update = next(r for r in rows if r["cdc$operation"] == R.ROW_UPDATE)
        assert json.loads(update["key"]) == {"shop": "shop-0", "id": 1}
        assert json.loads(update["columns"]["qty"]) == 99
        assert json.loads(update["deleted_elements"]["tags"]) == ["red"]

        # Tokens equal Cassandra's own; streams equal the library's lookup in the published generations.
        tokens = {r.shop: r.t for r in cql.execute(f"SELECT shop, token(shop) AS t FROM {ks}.orders")}
        store = GenerationStore(cql, settings.generations_keyspace)
        generations = store.load()
        assert len(generations.generations) == 1
        for row in rows:
            shop = json.loads(row["key"])["shop"]
            if shop in tokens:
                assert row["token"] == tokens[shop]
            assert row["cdc$stream_id"] == generations.get_stream(row["write_time_us"], row["token"]).value
        assert not dead_letters(spark, settings)
        # File statistics only for the times (the table property given with its first write).
        properties = dict(spark.sql(f"SHOW TBLPROPERTIES delta.`{settings.delta_path}/cdc_log`").collect())
        assert properties["delta.dataSkippingStatsColumns"] == "write_time,write_time_us,kafka_time"

        # The generation tables are published to the sink too.
        published = spark.read.format("delta").load(f"{settings.delta_path}/cdc_streams_descriptions_v2").collect()
        first = generations.generations[0].description
        assert {r.range_end for r in published} == {e.token_range_end for e in first.entries}
