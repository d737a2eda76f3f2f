import os
import signal
import sys

from compat.cli import main


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (a test's timeout, a CI job stopped): brokers and client agents run in sessions of their own,
    so stop them here rather than leave them behind."""
    from compat.brokers import stop_live_targets
    from compat.clients.agent import kill_live_agents
    kill_live_agents()
    stop_live_targets()
    os._exit(128 + signum)


signal.signal(signal.SIGTERM, _terminated)
sys.exit(main())
