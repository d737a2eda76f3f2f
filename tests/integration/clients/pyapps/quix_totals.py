"""A quixstreams app as its docs write one: running order totals per customer in a State store (backed by a
changelog topic), processing_guarantee="exactly-once".

    python quix_totals.py BOOTSTRAP GROUP STATE_DIR SOURCE SINK FREEZE_AFTER

Input: key customer, value {"order": id, "amount": n}; output: key customer, value {"count": c, "total": t}.
FREEZE_AFTER > 0 is the test's hook: the app stops inside its transaction after that many updates (printing
{"event": "frozen"} on stdout) so that the test can SIGKILL it with output sent but not committed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from quixstreams import Application, State

bootstrap, group, state_dir, source, sink, freeze_after = sys.argv[1:7]
processed = 0


def add(order: dict[str, Any], state: State) -> dict[str, int]:
    """Adds the order to its customer's running total (the State is scoped to the message key)."""
    global processed
    if processed == int(freeze_after) > 0:
        print(json.dumps({"event": "frozen", "processed": processed}), flush=True)
        time.sleep(3600)  # the transaction stays open until the test kills the process
    processed += 1
    count, total = state.get("count", 0) + 1, state.get("total", 0) + order["amount"]
    state.set("count", count)
    state.set("total", total)
    return {"count": count, "total": total}


debug = os.environ.get("FAKEKAFKA_RDKAFKA_DEBUG")
app = Application(
    broker_address=bootstrap,
    loglevel="DEBUG" if debug else "INFO",  # librdkafka's log goes through quixstreams' logger
    consumer_group=group,
    auto_offset_reset="earliest",
    processing_guarantee="exactly-once",
    state_dir=state_dir,
    commit_every=50,  # a checkpoint (one transaction) per 50 orders, so the test knows where commits fall
    commit_interval=60,
    # a killed member leaves the group after 6 s and its transaction ends after 10 s (librdkafka: 45 s and 60 s)
    # FAKEKAFKA_RDKAFKA_DEBUG (e.g. "cgrp,topic"): librdkafka's debug contexts on stderr, to follow a failure
    consumer_extra_config={"session.timeout.ms": 6000, **({"debug": debug} if debug else {})},
    producer_extra_config={"transaction.timeout.ms": 10000},
)
sdf = app.dataframe(app.topic(source, value_deserializer="json"))
sdf = sdf.apply(add, stateful=True)
sdf.to_topic(app.topic(sink, value_serializer="json"))

if __name__ == "__main__":
    app.run()
