"""A PySpark Structured Streaming job and its tests, written the way a user of fakekafka writes them."""
