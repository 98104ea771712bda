"""KRaft's quorum configs (Kafka's ``QuorumConfig``): names, defaults, and ``controller.quorum.voters``.

Every time is in ms. The defaults are Kafka's: ``controller.quorum.election.timeout.ms`` 1000,
``controller.quorum.fetch.timeout.ms`` 2000, ``controller.quorum.election.backoff.max.ms`` 1000,
``controller.quorum.request.timeout.ms`` 2000, ``controller.quorum.retry.backoff.ms`` 20,
``controller.quorum.append.linger.ms`` 25, ``controller.quorum.auto.join.enable`` false.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..metadata import config as cfg
from ..protocol.raft_records import RaftEndpoint

__all__ = ["QuorumConfig", "QuorumConfigError", "parse_quorum_voters"]

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
        """Read Kafka's ``controller.quorum.*`` names from ``configs`` (strings); an absent one takes Kafka's
        default. Each value is checked as every config is (:func:`kraftlog.metadata.config.invalid_value`: an INT
        at least 0, a BOOLEAN); raises :class:`QuorumConfigError` with Kafka's message naming the config."""
        def read(name: str) -> str:
            raw = cfg.lookup(name, configs)
            problem = cfg.invalid_value(name, raw)
            if problem is not None:
                raise QuorumConfigError(problem)
            return raw

        return cls(
            election_timeout_ms=int(read("controller.quorum.election.timeout.ms")),
            fetch_timeout_ms=int(read("controller.quorum.fetch.timeout.ms")),
            election_backoff_max_ms=int(read("controller.quorum.election.backoff.max.ms")),
            request_timeout_ms=int(read("controller.quorum.request.timeout.ms")),
            retry_backoff_ms=int(read("controller.quorum.retry.backoff.ms")),
            append_linger_ms=int(read("controller.quorum.append.linger.ms")),
            auto_join=cfg.as_bool(read("controller.quorum.auto.join.enable")),
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
