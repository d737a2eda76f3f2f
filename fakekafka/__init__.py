"""fakekafka: a Kafka-compatible broker for tests, in process, over the real wire protocol.

The names below are imported on first use, not with the package: the pytest plugin imports `fakekafka` in every
pytest start of a project that has it installed, and the cluster, the model and the wire layer are a large import
that a test session which never asks for a cluster should not pay for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakekafka.chaos import Chaos, Profile, Schedule, Step
    from fakekafka.model.acl import STANDARD_AUTHORIZER, AclBinding, AclBindingFilter
    from fakekafka.model.clock import ManualClock, SystemClock
    from fakekafka.model.cluster import ClusterState
    from fakekafka.model.config import BrokerConfig
    from fakekafka.model.errors import ApiError
    from fakekafka.model.hooks import Answer, Delay, Drop, Edit, Fail, Hold, Intercepted, Several, Throttle
    from fakekafka.model.metadata import Broker
    from fakekafka.net.server import Server
    from fakekafka.proxy import Proxy
    from fakekafka.testing.embedded import Cluster

__all__ = ["STANDARD_AUTHORIZER", "AclBinding", "AclBindingFilter", "Answer", "ApiError",
           "Broker", "BrokerConfig", "Chaos", "Cluster", "ClusterState", "Delay", "Drop", "Edit", "Fail", "Hold",
           "Intercepted", "ManualClock", "Profile", "Proxy", "Schedule", "Server", "Several", "Step",
           "SystemClock", "Throttle", "__version__"]
__version__ = "0.1.0"

_LAZY = {
    "STANDARD_AUTHORIZER": "fakekafka.model.acl", "AclBinding": "fakekafka.model.acl",
    "AclBindingFilter": "fakekafka.model.acl", "ManualClock": "fakekafka.model.clock",
    "SystemClock": "fakekafka.model.clock", "ApiError": "fakekafka.model.errors", "Broker": "fakekafka.model.metadata",
    "ClusterState": "fakekafka.model.cluster", "BrokerConfig": "fakekafka.model.config",
    "Server": "fakekafka.net.server", "Proxy": "fakekafka.proxy", "Cluster": "fakekafka.testing.embedded",
    **dict.fromkeys(("Chaos", "Profile", "Schedule", "Step"), "fakekafka.chaos"),
    **dict.fromkeys(("Answer", "Delay", "Drop", "Edit", "Fail", "Hold", "Intercepted", "Several", "Throttle"),
                    "fakekafka.model.hooks"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fakekafka' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
