"""The replication of the topics the connector creates, decided from the brokers the cluster has."""
import pytest
from confluent_kafka.admin import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata

from schemas.runtime.kafka import TopicError, broker_count, topic_replication


@pytest.mark.parametrize("brokers, expected", [(1, (1, 1)), (2, (2, 1)), (3, (3, 2)), (6, (3, 2))])
def test_unset_it_is_three_copies_two_in_sync_or_what_a_smaller_cluster_can_hold(brokers, expected):
    assert topic_replication(brokers, None, None) == expected


def test_what_is_set_is_kept():
    assert topic_replication(5, 5, 3) == (5, 3)
    assert topic_replication(3, 2, None) == (2, 1)
    assert topic_replication(3, None, 3) == (3, 3)


def test_more_copies_than_brokers_is_refused_naming_both():
    with pytest.raises(TopicError, match="topic_replication_factor 3 is more than the 2 broker"):
        topic_replication(2, 3, None)


def test_more_in_sync_copies_than_copies_is_refused():
    with pytest.raises(TopicError, match="topic_min_insync_replicas 3 is more than the replication factor 2"):
        topic_replication(3, 2, 3)


def _cluster(alive: list[int], replicas: list[list[int]]) -> ClusterMetadata:
    cluster = ClusterMetadata()
    cluster.brokers = {i: BrokerMetadata() for i in alive}
    topic = TopicMetadata()
    for number, copies in enumerate(replicas):
        partition = PartitionMetadata()
        partition.id, partition.replicas = number, copies
        topic.partitions[number] = partition
    cluster.topics = {"t": topic}
    return cluster


def test_a_broker_down_still_counts_when_it_holds_copies():
    assert broker_count(_cluster([1, 3], [[1, 2, 3], [3, 1, 2]])) == 3
    assert topic_replication(broker_count(_cluster([1, 3], [[1, 2, 3]])), None, None) == (3, 2)


def test_an_empty_cluster_counts_the_brokers_alive():
    assert broker_count(_cluster([1, 2], [])) == 2
