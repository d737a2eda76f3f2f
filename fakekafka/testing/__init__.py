"""Embedding fakekafka in tests: the in-process `Cluster`, its handles, the pytest plugin, real Kafka beside it."""
