"""Storage: a data dir that keeps the model's logs and metadata across restarts."""
