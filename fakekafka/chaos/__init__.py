"""Chaos you can replay: faults drawn from a seed at request points (Kafka-legal ones only), the schedule applied
written out and replayed exactly, invariants checked, a failing schedule shrunk. Pure: it acts through the
cluster's hooks (fakekafka/model/hooks.py); the network edge gives it a `BrokerOperator` for broker kills, and
`fakekafka.testing.chaos` runs it with real clients and pytest."""

from fakekafka.chaos.invariants import (
    ChaosFailure,
    ChaosView,
    Ledger,
    Logs,
    ModelLogs,
    Violation,
    check_invariants,
    exactly_once,
)
from fakekafka.chaos.kinds import ERRORS, KINDS, LegalError
from fakekafka.chaos.profile import PROFILES, Profile, profile_of
from fakekafka.chaos.schedule import Schedule, Step
from fakekafka.chaos.shrink import ShrinkResult, shrink
from fakekafka.chaos.source import BrokerOperator, Chaos, ChaosSource, chaos_of

__all__ = ["ERRORS", "KINDS", "PROFILES", "BrokerOperator", "Chaos", "ChaosFailure", "ChaosSource", "ChaosView",
           "LegalError", "Ledger", "Logs", "ModelLogs", "Profile", "Schedule", "ShrinkResult", "Step", "Violation",
           "chaos_of", "check_invariants", "exactly_once", "profile_of", "shrink"]
