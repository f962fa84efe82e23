"""ringtail's Spark side: the job, the subscription server and its control, ScyllaDB-style streams."""
