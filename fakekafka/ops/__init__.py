"""Operator tools: the `fakekafka` command, `ctl` over the control port, `describe` and `analyze`."""
