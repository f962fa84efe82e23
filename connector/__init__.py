"""ringtail's connector: commit-log segments to change events on Kafka."""
