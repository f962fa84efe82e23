"""What a side stack's failed module reports of its Cassandra nodes' logs (`side_stacks.node_log_report`)."""
import json
from pathlib import Path

from tests.integration.side_stacks import node_log_report

# The entries of a Cassandra 5.0 system.log, as the stack's nodes write them.
LOG = """\
INFO  [main] 2026-12-01 10:56:13,598 DatabaseDescriptor.java:1643 - Supported sstable formats are: big
WARN  [main] 2026-12-01 10:56:17,193 StartupChecks.java:262 - jemalloc shared library could not be preloaded
INFO  [main] 2026-12-01 10:56:18,001 Config.java:1371 - Node configuration:[a=1;
 b=2]
ERROR [Native-Transport-Requests-1] 2026-12-01 11:02:40,112 ErrorMessage.java:457 - Unexpected exception
java.lang.IllegalArgumentException: Unknown CF 5c1876b0-0000-0000-0000-000000000000
\tat org.apache.cassandra.db.Keyspace.getColumnFamilyStore(Keyspace.java:215)
Caused by: java.lang.RuntimeException: inner
INFO  [main] 2026-12-01 11:02:41,000 Gossiper.java:2100 - No gossip backlog
"""


def test_a_nodes_warnings_and_errors_are_reported_with_their_traces_and_nothing_else(tmp_path: Path):
    assert node_log_report(tmp_path) == []  # a stack that never described itself
    nodes = []
    for node, text in (("cassandra@1", LOG), ("cassandra@2", LOG.replace("jemalloc", "JMX")), ("cassandra@3", None)):
        logs = tmp_path / node / "logs"
        logs.mkdir(parents=True)
        if text is not None:  # the third never started
            (logs / "system.log").write_text(text)
        nodes.append({"name": node, "logs": str(logs)})
    (tmp_path / "stack.json").write_text(json.dumps({"cassandra": {"nodes": nodes}}))
    report = node_log_report(tmp_path, lines=4)
    lines = LOG.splitlines()
    assert report == ["--- cassandra@1: its last 4 warning and error lines ---", *lines[4:8],
                      "--- cassandra@2: its last 4 warning and error lines ---", *lines[4:8]]
    assert node_log_report(tmp_path, lines=5)[1] == lines[1]
