"""fakekafka: a Kafka-compatible broker for tests, in process, over the real wire protocol."""

from fakekafka.model.acl import STANDARD_AUTHORIZER, AclBinding, AclBindingFilter
from fakekafka.model.clock import ManualClock, SystemClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.model.errors import ApiError
from fakekafka.model.metadata import Broker
from fakekafka.net.server import Server
from fakekafka.proxy import Proxy
from fakekafka.testing.embedded import Cluster

__all__ = ["STANDARD_AUTHORIZER", "AclBinding", "AclBindingFilter", "ApiError",
           "Broker", "BrokerConfig", "Cluster", "ClusterState", "ManualClock", "Proxy", "Server",
           "SystemClock", "__version__"]
__version__ = "0.1.0"
