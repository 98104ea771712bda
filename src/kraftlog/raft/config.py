"""KRaft's quorum configs (Kafka's ``QuorumConfig``): names, defaults, and ``controller.quorum.voters``.

Every time is in ms. The defaults are Kafka's: ``controller.quorum.election.timeout.ms`` 1000,
``controller.quorum.fetch.timeout.ms`` 2000, ``controller.quorum.election.backoff.max.ms`` 1000,
``controller.quorum.request.timeout.ms`` 2000, ``controller.quorum.retry.backoff.ms`` 20,
``controller.quorum.append.linger.ms`` 25, ``controller.quorum.auto.join.enable`` false.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..metadata.config import DEFAULTS
from ..protocol.raft_records import RaftEndpoint

__all__ = ["QuorumConfig", "QuorumConfigError", "parse_quorum_voters", "QUORUM_CONFIG_DEFAULTS"]

#: Kafka's names and defaults of the quorum configs this package reads (the one table of defaults is
#: :data:`kraftlog.metadata.config.DEFAULTS`).
QUORUM_CONFIG_DEFAULTS: dict[str, str] = {name: DEFAULTS[name] for name in (
    "controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
    "controller.quorum.election.backoff.max.ms", "controller.quorum.request.timeout.ms",
    "controller.quorum.retry.backoff.ms", "controller.quorum.append.linger.ms", "controller.quorum.auto.join.enable")}

#: How long a leader parks a Fetch with nothing new (Kafka's ``KafkaRaftClient.MAX_FETCH_WAIT_MS``).
MAX_FETCH_WAIT_MS = 500


class QuorumConfigError(ValueError):
    """A quorum config that cannot be used (Kafka's ``ConfigException``): the message names the config."""


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    """The quorum's timeouts (ms) and switches, Kafka's defaults unless given."""

    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    append_linger_ms: int = 25
    auto_join: bool = False
    fetch_max_wait_ms: int = MAX_FETCH_WAIT_MS

    @classmethod
    def from_configs(cls, configs: Mapping[str, str]) -> QuorumConfig:
        """Read Kafka's ``controller.quorum.*`` names from ``configs`` (strings); an absent one takes
        Kafka's default. Raises :class:`QuorumConfigError` for a value that is not a non-negative int (or,
        for ``controller.quorum.auto.join.enable``, not true/false)."""
        def read_int(name: str) -> int:
            raw = configs.get(name, QUORUM_CONFIG_DEFAULTS[name])
            try:
                value = int(raw)
            except ValueError:
                raise QuorumConfigError(f"{name}: {raw!r} is not an integer") from None
            if value < 0:
                raise QuorumConfigError(f"{name}: {value} is negative (Kafka: atLeast(0))")
            return value

        join = configs.get("controller.quorum.auto.join.enable", "false").strip().lower()
        if join not in ("true", "false"):
            raise QuorumConfigError(f"controller.quorum.auto.join.enable: {join!r} is not true or false")
        return cls(
            election_timeout_ms=read_int("controller.quorum.election.timeout.ms"),
            fetch_timeout_ms=read_int("controller.quorum.fetch.timeout.ms"),
            election_backoff_max_ms=read_int("controller.quorum.election.backoff.max.ms"),
            request_timeout_ms=read_int("controller.quorum.request.timeout.ms"),
            retry_backoff_ms=read_int("controller.quorum.retry.backoff.ms"),
            append_linger_ms=read_int("controller.quorum.append.linger.ms"),
            auto_join=join == "true",
        )


def parse_quorum_voters(value: str) -> dict[int, RaftEndpoint]:
    """``controller.quorum.voters`` (Kafka's ``QuorumConfig.parseVoterConnections``): a comma-separated list
    of ``{id}@{host}:{port}`` (an IPv6 host in brackets); returns voter id -> endpoint (listener name
    "CONTROLLER"). Raises :class:`QuorumConfigError` naming the entry for a malformed one (an empty entry, no
    address, a second ``@``, a bad port) or a repeated id."""
    voters: dict[int, RaftEndpoint] = {}
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            raise QuorumConfigError(f"controller.quorum.voters: {value!r} has an empty entry")
        node, sep, address = entry.partition("@")
        try:
            voter_id = int(node)
        except ValueError:
            raise QuorumConfigError(f"controller.quorum.voters: {entry!r}: {node!r} is not a node id") from None
        if not sep or voter_id < 0 or not address or "@" in address:
            raise QuorumConfigError(f"controller.quorum.voters: {entry!r} is not {{id}}@{{host}}:{{port}}")
        if voter_id in voters:
            raise QuorumConfigError(f"controller.quorum.voters: voter {voter_id} is listed twice")
        host, colon, port = address.rpartition(":")
        bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not colon or not bare or (":" in bare and not host.startswith("[")) or not port.isdigit() \
                or not 0 < int(port) < 65536:
            raise QuorumConfigError(f"controller.quorum.voters: {entry!r} is not {{id}}@{{host}}:{{port}}")
        voters[voter_id] = RaftEndpoint("CONTROLLER", bare, int(port))
    if not voters:
        raise QuorumConfigError("controller.quorum.voters: no voter")
    return voters
