"""The cluster as pure state with an injectable clock: topics, partition logs, groups, transactions, configs."""
