"""BROKER_LOGGER config resources mapped onto fakekafka's Python loggers.

Kafka lists its log4j loggers (Java class names, `kafka.server.KafkaApis`...) with their levels and lets
IncrementalAlterConfigs set or reset one at run time. fakekafka's broker logs through Python's `logging`, so
the same requests list and change fakekafka's loggers, by their Python names: `kafka-configs --alter
--entity-type broker-loggers --entity-name 1 --add-config fakekafka.server=DEBUG` turns on the per-request
lines of a running `fakekafka serve`. Python's loggers belong to the process, so every broker of a cluster
(and every in-process cluster) shares them; the levels a cluster changed are put back when it stops, so a
test's change does not outlive its cluster.
"""

from __future__ import annotations

import logging

ROOT_LOGGER = "root"
BROKER_LOGGERS = ("fakekafka", "fakekafka.control", "fakekafka.events", "fakekafka.recording", "fakekafka.server")
"""The broker's loggers as DescribeConfigs lists them (besides the root logger): the server's request lines,
the model's events, the control port, recordings, and their parent."""

TRACE = 5
"""Python has no TRACE level: the level below DEBUG stands for log4j's TRACE."""
VALID_LEVELS = ("DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN")
"""Kafka's LogLevelConfig.VALID_LOG_LEVELS, in the order its error message lists them."""
_TO_PYTHON = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
              "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}


def kafka_level(level: int) -> str:
    """A Python level by log4j's name (the nearest at or below it)."""
    for name, value in sorted(_TO_PYTHON.items(), key=lambda kv: -kv[1]):
        if level >= value:
            return name
    return "TRACE"


class BrokerLoggers:
    """The loggers a cluster lists and the levels it changed (to put back at stop)."""

    def __init__(self) -> None:
        self._changed: dict[str, int] = {}
        """logger name -> its own level before this cluster first changed it."""

    @staticmethod
    def _logger(name: str) -> logging.Logger:
        return logging.getLogger() if name == ROOT_LOGGER else logging.getLogger(name)

    def names(self) -> list[str]:
        return [*BROKER_LOGGERS, ROOT_LOGGER]

    def exists(self, name: str) -> bool:
        return name == ROOT_LOGGER or name in BROKER_LOGGERS

    def level(self, name: str) -> str:
        """The logger's effective level (its own, else its parent's), as Kafka describes a logger."""
        return kafka_level(self._logger(name).getEffectiveLevel())

    def set_level(self, name: str, level: str) -> None:
        logger = self._logger(name)
        self._changed.setdefault(name, logger.level)
        logger.setLevel(_TO_PYTHON[level])

    def reset(self, name: str) -> None:
        """Kafka's DELETE: the logger follows its parent again (root's level, for Kafka's flat loggers)."""
        logger = self._logger(name)
        self._changed.setdefault(name, logger.level)
        logger.setLevel(logging.NOTSET)

    def restore(self) -> None:
        """Puts back every level this cluster changed (its stop)."""
        for name, level in self._changed.items():
            self._logger(name).setLevel(level)
        self._changed.clear()
