"""What every ringtail process runs on, the connector and Spark's job and runners alike: settings read
from a file and the environment, the services' security and the check that they take it, logging,
stop signals, the status endpoints, Cassandra sessions and Kafka clients, atomic files."""
