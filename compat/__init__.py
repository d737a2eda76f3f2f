"""The compatibility suite: the same scenarios, through every client, against fakekafka and reference
brokers, with outcomes compared to real Kafka (or, without it, to Kafka's documented behaviour).

    python -m compat --broker fakekafka --broker tansu [--client ...] [--scenario ...]

Layout: clients/ (one adapter per client library, the Java agent), scenarios.py (written once, each with
its expected outcome), brokers.py (the targets), normalise.py, known.py (KNOWN_DIFFERENCES.md), runner.py,
report.py, cli.py.
"""

from compat.runner import Cell, Report, run

__all__ = ["Cell", "Report", "run"]
