"""Issue 28 item 5: what kraftlog does not build is refused clearly, not by a silent retry loop.

* A transactional producer: FindCoordinator for a transactional id (key type 1) is answered
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED with a message, the FindCoordinator error librdkafka, kafka-python
  and the Java producer treat as fatal, so ``init_transactions()`` fails at once (before: a retriable
  COORDINATOR_NOT_AVAILABLE until the call's timeout, forever).
* KIP-848's ConsumerGroupHeartbeat (API 68) and the transaction APIs are not advertised; a client sending
  one anyway gets its connection closed with a broker log line naming the API and what to use instead.
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import pytest

from conftest import running_cluster
from kraftlog.level import Level
from kraftlog.net import cluster as cl
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.framing import NOT_BUILT_APIS, Close, ServerConnection
from kraftlog.protocol.wire import supported_api_versions
from test_broker import MiniCluster
from test_broker_listeners import ask

CONSUMER_GROUP_HEARTBEAT = 68
TRANSACTION_APIS = (24, 25, 26, 27, 28, 65, 66)


def test_find_coordinator_for_a_transactional_id_is_a_fatal_refusal_with_a_reason():
    """Key type 1 (TRANSACTION): TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a message saying transactions are
    not supported; a group key in the same broker is still answered (the refusal is per key type)."""
    c = MiniCluster()
    resp = ask(c, m.FindCoordinatorRequest(("txn-1",), key_type=m.COORDINATOR_TRANSACTION))
    (entry,) = resp.coordinators
    assert (entry.key, entry.node_id, entry.error_code) == ("txn-1", -1, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    assert "does not support transactions" in entry.error_message
    group = ask(c, m.FindCoordinatorRequest(("g",)))
    assert group.coordinators[0].error_code in (Errors.NONE, Errors.COORDINATOR_NOT_AVAILABLE)
    assert group.coordinators[0].error_code != Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_find_coordinator_for_an_unknown_key_type_is_invalid_request():
    """Kafka's KafkaApis.getCoordinator: an unknown CoordinatorType (2, a share group's, is not built) is
    INVALID_REQUEST, not a retriable COORDINATOR_NOT_AVAILABLE."""
    c = MiniCluster()
    (entry,) = ask(c, m.FindCoordinatorRequest(("s",), key_type=2)).coordinators
    assert entry.error_code == Errors.INVALID_REQUEST
    assert "key type 2" in entry.error_message


@pytest.mark.parametrize("level", list(Level))
def test_consumer_group_heartbeat_and_transaction_apis_are_not_advertised(level):
    """DESIGN.md: advertise only what is implemented. API 68 (KIP-848) and the transaction APIs are absent
    from ApiVersions at every level, so clients that check (librdkafka, the Java client) never send them."""
    advertised = supported_api_versions(level)
    assert CONSUMER_GROUP_HEARTBEAT not in advertised
    assert not set(TRANSACTION_APIS) & set(advertised)
    assert not set(NOT_BUILT_APIS) & set(advertised)


def _request(api_key: int, version: int, correlation_id: int, client_id: str = "probe") -> bytes:
    """A framed request header v1 (api key, version, correlation id, client id) and an empty body."""
    cid = client_id.encode()
    body = struct.pack(">hhih", api_key, version, correlation_id, len(cid)) + cid
    return struct.pack(">i", len(body)) + body


def test_consumer_group_heartbeat_closes_the_connection_naming_the_api_and_the_classic_protocol():
    """A client sending API 68 anyway (not advertised): the connection is closed, as for any unknown API
    key, and the reason (the broker's log line) names ConsumerGroupHeartbeat and group.protocol=classic."""
    conn = ServerConnection(supported_api_versions())
    (event,) = conn.receive_data(_request(CONSUMER_GROUP_HEARTBEAT, 0, 7))
    assert isinstance(event, Close)
    assert "ConsumerGroupHeartbeat" in event.reason and "group.protocol=classic" in event.reason
    (txn,) = ServerConnection(supported_api_versions()).receive_data(_request(26, 3, 8))
    assert isinstance(txn, Close) and "EndTxn" in txn.reason and "transactions" in txn.reason
    (other,) = ServerConnection(supported_api_versions()).receive_data(_request(999, 0, 9))
    assert isinstance(other, Close) and other.reason == "unknown or unsupported API key 999"


# ------------------------------------------------------------------------------------------ real cluster
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("refusals") / "c")
    with running_cluster(directory, 1):
        yield directory


def _bootstrap(directory: str) -> str:
    return cl.load(directory)["bootstrap"]


REFUSAL_BOUND_S = 15.0


@pytest.mark.slow
def test_confluent_kafka_init_transactions_fails_fatally_within_15_s(cluster):
    """confluent-kafka: init_transactions() raises a fatal, non-retriable KafkaError
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED carrying kraftlog's reason (before: _TIMED_OUT, retriable, after
    the whole timeout, on every call)."""
    from confluent_kafka import KafkaException, Producer
    p = Producer({"bootstrap.servers": _bootstrap(cluster), "transactional.id": "tx-confluent"})
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        p.init_transactions(REFUSAL_BOUND_S + 15)
    elapsed = time.monotonic() - started
    err = raised.value.args[0]
    assert err.code() == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert err.fatal() and not err.retriable()
    assert "does not support transactions" in err.str()
    assert elapsed < REFUSAL_BOUND_S


@pytest.mark.slow
def test_kafka_python_init_transactions_fails_fatally_within_15_s(cluster):
    """kafka-python: init_transactions() raises TransactionalIdAuthorizationFailedError (a non-retriable
    error: its FindCoordinatorHandler makes it fatal) well inside 15 s (before: KafkaTimeoutError after
    60 s)."""
    from kafka import KafkaProducer
    from kafka.errors import TransactionalIdAuthorizationFailedError
    p = KafkaProducer(bootstrap_servers=_bootstrap(cluster), transactional_id="tx-kafka-python")
    try:
        started = time.monotonic()
        with pytest.raises(TransactionalIdAuthorizationFailedError) as raised:
            p.init_transactions()
        assert time.monotonic() - started < REFUSAL_BOUND_S
        assert not raised.value.retriable
    finally:
        p.close(timeout=10)


@pytest.mark.slow
def test_consumer_group_heartbeat_sent_anyway_is_named_in_the_broker_log(cluster):
    """A raw ConsumerGroupHeartbeat to the broker's client port: the broker closes the connection and its
    log says the API is not supported and group.protocol=classic is what works."""
    host, port = _bootstrap(cluster).split(",")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(_request(CONSUMER_GROUP_HEARTBEAT, 0, 1, client_id="kip848-probe"))
        s.settimeout(10)
        assert s.recv(1024) == b""  # closed, no answer
    log = Path(cluster) / "broker-0.log"
    deadline = time.monotonic() + 10
    text = ""
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "ConsumerGroupHeartbeat" in text:
            break
        time.sleep(0.1)
    line = next(ln for ln in text.splitlines() if "ConsumerGroupHeartbeat" in ln)
    assert "group.protocol=classic" in line and "API key 68" in line
