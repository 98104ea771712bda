"""The static ``Errors`` enum is Kafka's error table (kio's ``ErrorCode``) plus KIP-966's REQUEST_LIMIT_REACHED.

``protocol/errors.py`` spells every member out (so mypy and readers see them); these tests keep it equal,
name for name and code for code, to the table of the pinned kio, which is generated from Kafka's
``Errors`` class."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kraftlog.protocol.errors import REQUEST_LIMIT_REACHED_CODE, RETRIABLE, Errors, is_retriable


def test_errors_are_kios_table_plus_request_limit_reached() -> None:
    """Every kio code under Kafka's upper-case name with the same number, in the same order, and nothing
    else but REQUEST_LIMIT_REACHED (KIP-966, a number Kafka never assigned)."""
    expected = [(code.name.upper(), int(code)) for code in ErrorCode]
    expected.append(("REQUEST_LIMIT_REACHED", REQUEST_LIMIT_REACHED_CODE))
    assert [(e.name, int(e)) for e in Errors] == expected


def test_request_limit_reached_is_no_kafka_code() -> None:
    """KIP-966's REQUEST_LIMIT_REACHED must not collide with any code Kafka assigned."""
    assert REQUEST_LIMIT_REACHED_CODE not in {int(code) for code in ErrorCode}


def test_errors_are_ints_with_kafkas_numbers() -> None:
    """Message fields hold plain ints: members compare equal to them and look up by number (KIP-320's and
    KIP-903's codes as examples)."""
    assert Errors.FENCED_LEADER_EPOCH == 74 and Errors.UNKNOWN_LEADER_EPOCH == 75
    assert Errors.INELIGIBLE_REPLICA == 107 and Errors(107) is Errors.INELIGIBLE_REPLICA
    assert Errors.NONE == 0 and Errors.UNKNOWN_SERVER_ERROR == -1


def test_retriable_is_kafkas_retriable_set() -> None:
    """Kafka's RetriableException codes (kio's ``retriable`` flags) and REQUEST_LIMIT_REACHED ("It is a
    retriable error", KIP-966) are retriable; nothing else is."""
    assert RETRIABLE == {int(code) for code in ErrorCode if code.retriable} | {REQUEST_LIMIT_REACHED_CODE}
    assert is_retriable(Errors.NOT_LEADER_OR_FOLLOWER) and not is_retriable(Errors.INVALID_REQUEST)
