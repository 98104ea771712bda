"""SCRAM credentials in the metadata log (KIP-554): AlterUserScramCredentials forwarded by a broker to the
controller becomes UserScramCredentialRecords (Kafka's ScramControlManager rules), DescribeUserScramCredentials
answers from the broker's image (never a salt or key), a snapshot keeps the credentials, and a SASL listener
over that image authenticates a SCRAM client with the password the credential was made from."""

from __future__ import annotations

import hashlib

import pytest

from kraftlog.metadata.image import MetadataImage
from kraftlog.metadata.records import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from kraftlog.metadata.snapshot import image_records
from kraftlog.net.credentials import ListenerCredentials
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.framing import Authenticated, ServerConnection
from kraftlog.protocol.sasl import SCRAM_SHA_256, SCRAM_SHA_512, SaslClient, SaslConfig
from test_broker import MiniCluster
from test_broker_listeners import ask
from test_sasl import SUPPORTED, _exchange, _handshake, _reply

SALT = b"kraftlog-salt-16"


def upsertion(name: str, password: str, mechanism: int = m.SCRAM_SHA_512, iterations: int = 4096):
    """What a client sends (Kafka's ``ScramFormatter.saltedPassword``): the salt and Hi(password, salt, i)."""
    digest = "sha512" if mechanism == m.SCRAM_SHA_512 else "sha256"
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), SALT, iterations)
    return m.ScramCredentialUpsertion(name, mechanism, iterations, SALT, salted)


@pytest.fixture
def c() -> MiniCluster:
    return MiniCluster()


def alter(c: MiniCluster, deletions=(), upsertions=()) -> list[tuple]:
    r = ask(c, m.AlterUserScramCredentialsRequest(tuple(deletions), tuple(upsertions)))
    return [(x.user, x.error_code, x.error_message) for x in r.results]


def test_an_upsertion_forwarded_by_a_broker_becomes_a_credential_record_that_authenticates(c):
    """The broker forwards AlterUserScramCredentials (FORWARDED_APIS); the controller appends one
    UserScramCredentialRecord with the stored and server keys derived from the SaltedPassword; once the broker
    has it, a SASL listener over its image authenticates alice with her password and refuses another."""
    assert alter(c, upsertions=[upsertion("alice", "alice-secret")]) == [("alice", Errors.NONE, None)]
    record = c.b.image.scram_credentials[("alice", m.SCRAM_SHA_512)]
    assert isinstance(record, UserScramCredentialRecord) and record.salt == SALT and record.iterations == 4096
    config = SaslConfig((SCRAM_SHA_512,), ListenerCredentials({}, lambda: c.b.image), nonce=lambda: "n" * 24)
    conn = ServerConnection(SUPPORTED, sasl=config)
    _handshake(conn, SCRAM_SHA_512)
    assert _exchange(conn, SaslClient(SCRAM_SHA_512, "alice", "alice-secret"))[-1] == Authenticated("User:alice")
    conn = ServerConnection(SUPPORTED, sasl=config)
    _handshake(conn, SCRAM_SHA_512)
    _, response = _reply(_exchange(conn, SaslClient(SCRAM_SHA_512, "alice", "guess"))[0], 36, 2)
    assert response.error_code == Errors.SASL_AUTHENTICATION_FAILED


def test_describe_names_mechanisms_and_iterations_only(c):
    alter(c, upsertions=[upsertion("alice", "a"), upsertion("bob", "b", m.SCRAM_SHA_256, 8192)])
    alter(c, upsertions=[upsertion("alice", "a", m.SCRAM_SHA_256, 5000)])
    r = ask(c, m.DescribeUserScramCredentialsRequest(None))
    assert r.error_code == Errors.NONE
    assert [(x.user, [(i.mechanism, i.iterations) for i in x.credential_infos]) for x in r.results] == [
        ("alice", [(m.SCRAM_SHA_256, 5000), (m.SCRAM_SHA_512, 4096)]), ("bob", [(m.SCRAM_SHA_256, 8192)])]
    r = ask(c, m.DescribeUserScramCredentialsRequest(("bob", "carol", "bob", "alice")))
    assert [(x.user, x.error_code) for x in r.results] == [
        ("bob", Errors.DUPLICATE_RESOURCE), ("carol", Errors.RESOURCE_NOT_FOUND), ("alice", Errors.NONE)]
    assert r.results[1].error_message == "Attempt to describe a user credential that does not exist: carol"


def test_kafkas_refusals_apply_nothing_for_the_user_refused(c):
    """ScramControlManager's rules, one result per user: a user twice is DUPLICATE_RESOURCE, an empty name and
    iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL, mechanism 3 UNSUPPORTED_SASL_MECHANISM, deleting a
    credential that does not exist RESOURCE_NOT_FOUND; the valid ones beside them are applied."""
    got = alter(c, deletions=[m.ScramCredentialDeletion("dave", m.SCRAM_SHA_512),
                              m.ScramCredentialDeletion("twice", m.SCRAM_SHA_512)],
                upsertions=[upsertion("twice", "x"), upsertion("", "x"), upsertion("few", "x", iterations=4095),
                            upsertion("many", "x", iterations=16385), upsertion("ok", "x"),
                            m.ScramCredentialUpsertion("mech", 3, 4096, SALT, b"x" * 64)])
    assert got == [
        ("dave", Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        ("twice", Errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        ("", Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("few", Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("many", Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("ok", Errors.NONE, None),
        ("mech", Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")]
    assert sorted(c.ctl.image.scram_credentials) == [("ok", m.SCRAM_SHA_512)]


def test_a_deletion_removes_the_credential_and_the_user_can_no_longer_authenticate(c):
    alter(c, upsertions=[upsertion("alice", "pw")])
    assert alter(c, deletions=[m.ScramCredentialDeletion("alice", m.SCRAM_SHA_512)]) == [("alice", Errors.NONE, None)]
    assert c.b.image.scram_credentials == {}
    store = ListenerCredentials({}, lambda: c.b.image)
    assert store.scram_credential(SCRAM_SHA_512, "alice") is None


def test_a_snapshot_keeps_the_credentials_and_replays_to_the_same_image():
    """image_records writes one UserScramCredentialRecord per credential (sorted): a node loading the snapshot
    authenticates the same users; a removal of a credential the image lacks is a metadata apply error."""
    cred = UserScramCredentialRecord("alice", m.SCRAM_SHA_256, SALT, b"s" * 32, b"k" * 32, 4096)
    other = UserScramCredentialRecord("bob", m.SCRAM_SHA_512, SALT, b"s" * 64, b"k" * 64, 8192)
    image, _ = MetadataImage().replay([other, cred], 0)
    records = image_records(image)
    assert records == [cred, other]
    again, _ = MetadataImage().replay(records, 0)
    assert again.scram_credentials == image.scram_credentials
    _, delta = again.replay([RemoveUserScramCredentialRecord("carol", 1)], 2)
    assert len(delta.errors) == 1 and "carol" in delta.errors[0][2]
    assert ListenerCredentials({}, lambda: again).scram_credential(SCRAM_SHA_256, "alice").iterations == 4096
