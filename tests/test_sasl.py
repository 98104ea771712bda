"""SASL on a listener, sans I/O (kraftlog.protocol.sasl and the framing layer): SCRAM against RFC 7677's test
vector, PLAIN and SCRAM exchanges through ServerConnection as Kafka's SaslServerAuthenticator answers them
(SaslHandshake v0/v1, SaslAuthenticate v0-v2, raw v0 tokens), the refusals (UNSUPPORTED_SASL_MECHANISM,
SASL_AUTHENTICATION_FAILED, ILLEGAL_SASL_STATE, requests before authentication), and fuzzed SASL frames."""

from __future__ import annotations

import base64
import random
import struct

import pytest

from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.framing import Authenticated, Close, Reply, Request, ServerConnection
from kraftlog.protocol.sasl import (
    ANONYMOUS,
    PLAIN,
    SASL_AUTHENTICATE_KEY,
    SASL_HANDSHAKE_KEY,
    SASL_SERVER_MAX_RECEIVE_SIZE,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    SaslAuthenticator,
    SaslClient,
    SaslConfig,
    StaticCredentials,
    parse_plain_jaas_users,
    parse_response,
    request_frame,
    scram_credential,
)

SALT = b"0123456789abcdef"
CREDENTIALS = StaticCredentials(
    plain={"alice": "alice-secret", "admin": "admin-secret"},
    scram={(SCRAM_SHA_512, "alice"): scram_credential(SCRAM_SHA_512, "alice-secret", SALT, 4096),
           (SCRAM_SHA_256, "alice"): scram_credential(SCRAM_SHA_256, "alice-secret", SALT, 4096),
           (SCRAM_SHA_512, "a,b=c"): scram_credential(SCRAM_SHA_512, "pw", SALT, 4096)})
CONFIG = SaslConfig((SCRAM_SHA_512, SCRAM_SHA_256, PLAIN), CREDENTIALS, nonce=lambda: "servernonce0123456789")
SUPPORTED = {18: (0, 3), m.MetadataRequest.API_KEY: (0, 12)}
METADATA = wire.frame(wire.encode_request(m.MetadataRequest(("t",)), correlation_id=9, client_id="c"))


def _size_prefixed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _reply(event, api_key: int, version: int):
    assert isinstance(event, Reply), event
    return parse_response(api_key, version, event.data[4:])


def _handshake(conn: ServerConnection, mechanism: str, version: int = 1) -> list:
    return conn.receive_data(request_frame(SASL_HANDSHAKE_KEY, version, 1, "c", mechanism=mechanism))


def _authenticate(conn: ServerConnection, token: bytes, version: int = 2, corr: int = 2) -> list:
    return conn.receive_data(request_frame(SASL_AUTHENTICATE_KEY, version, corr, "c", auth_bytes=token))


def _exchange(conn: ServerConnection, client: SaslClient, version: int = 2) -> list:
    """Run ``client``'s exchange through SaslAuthenticate requests; the events of the last step."""
    token: bytes | None = client.first()
    corr = 2
    events: list = []
    while token is not None:
        events = _authenticate(conn, token, version, corr)
        corr += 1
        _, response = _reply(events[0], SASL_AUTHENTICATE_KEY, version)
        if response.error_code != 0 or isinstance(events[-1], Close):
            return events
        token = client.respond(bytes(response.auth_bytes))
    return events


# ----------------------------------------------------------------------------------- the mechanisms
def test_scram_sha_256_server_gives_rfc_7677_test_vector():
    """RFC 7677 section 3: user "user", password "pencil", the RFC's salt, nonces and 4096 iterations; the
    server's first and final messages must be the RFC's, byte for byte."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    creds = StaticCredentials(scram={(SCRAM_SHA_256, "user"): scram_credential(SCRAM_SHA_256, "pencil", salt, 4096)})
    auth = SaslAuthenticator(SaslConfig((SCRAM_SHA_256,), creds, nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"))
    conn = ServerConnection(SUPPORTED)
    conn.authenticator = auth
    assert _handshake(conn, SCRAM_SHA_256)[0].data
    first = _authenticate(conn, b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    _, response = _reply(first[0], SASL_AUTHENTICATE_KEY, 2)
    assert response.auth_bytes == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                   b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = _authenticate(conn, b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", corr=3)
    _, response = _reply(final[0], SASL_AUTHENTICATE_KEY, 2)
    assert response.error_code == 0
    assert response.auth_bytes == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert final[1] == Authenticated("User:user") and auth.complete and conn.principal == "User:user"


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_scram_credential_is_rfc_5802s_stored_and_server_key(mechanism):
    """RFC 5802 section 3 (Kafka's ScramFormatter): SaltedPassword = PBKDF2(password, salt, i), StoredKey =
    H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key"), computed here from the
    formulas and compared with scram_credential (scramp's derivation)."""
    import hashlib
    import hmac
    hf = hashlib.sha256 if mechanism == SCRAM_SHA_256 else hashlib.sha512
    salted = hashlib.pbkdf2_hmac(hf().name, b"alice-secret", SALT, 4096)
    stored = hf(hmac.new(salted, b"Client Key", hf).digest()).digest()
    server = hmac.new(salted, b"Server Key", hf).digest()
    cred = scram_credential(mechanism, "alice-secret", SALT, 4096)
    assert (cred.stored_key, cred.server_key, cred.iterations) == (stored, server, 4096)
    assert len(cred.stored_key) == hf().digest_size
    with pytest.raises(ValueError, match="4096..16384"):
        scram_credential(mechanism, "pw", SALT, 4095)


# ------------------------------------------------------------------------------ exchanges on a listener
@pytest.mark.parametrize("mechanism", [SCRAM_SHA_512, SCRAM_SHA_256, PLAIN])
@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_client_authenticates_then_its_requests_reach_the_node(mechanism, version):
    """ApiVersions (once), SaslHandshake v1, SaslAuthenticate v0-v2: the server's final message proves it knows
    the credential (SaslClient checks it), the connection becomes User:alice, and the Metadata request after it
    is handed over as a Request (before authentication it would close the connection)."""
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    versions = conn.receive_data(wire.frame(wire.encode_request(m.ApiVersionsRequest(), correlation_id=0)))
    assert isinstance(versions[0], Reply)
    _, handshake = _reply(_handshake(conn, mechanism)[0], SASL_HANDSHAKE_KEY, 1)
    assert handshake.error_code == 0 and tuple(handshake.mechanisms) == CONFIG.mechanisms
    events = _exchange(conn, SaslClient(mechanism, "alice", "alice-secret", nonce="clientnonce42"), version)
    assert events[-1] == Authenticated("User:alice") and conn.principal == "User:alice"
    after = conn.receive_data(METADATA)
    assert len(after) == 1 and isinstance(after[0], Request) and after[0].header.correlation_id == 9


def test_a_final_nonce_that_repeats_the_client_nonce_is_accepted_as_kafka_does():
    """librdkafka before 2.1 (Debian's kcat: 2.0.2) sends r=<client nonce><client nonce><server nonce> in its
    final message; Kafka's ScramSaslServer only checks that it ends with the server-first nonce, and verifies the
    proof over the message as sent. A nonce that does not end so is refused."""
    import hashlib
    import hmac

    def final(nonce_prefix: str, nonce_suffix: str = "") -> list:
        conn = ServerConnection(SUPPORTED, sasl=CONFIG)
        _handshake(conn, SCRAM_SHA_512)
        first = _authenticate(conn, b"n,,n=alice,r=cnonce")
        server_first = _reply(first[0], SASL_AUTHENTICATE_KEY, 2)[1].auth_bytes.decode()
        nonce = server_first.split(",")[0][2:]
        without_proof = f"c=biws,r={nonce_prefix}{nonce}{nonce_suffix}"
        auth = f"n=alice,r=cnonce,{server_first},{without_proof}".encode()
        salted = hashlib.pbkdf2_hmac("sha512", b"alice-secret", SALT, 4096)
        client_key = hmac.new(salted, b"Client Key", "sha512").digest()
        signature = hmac.new(hashlib.sha512(client_key).digest(), auth, "sha512").digest()
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
        return _authenticate(conn, f"{without_proof},p={proof}".encode(), corr=3)

    assert final("cnonce")[-1] == Authenticated("User:alice")  # librdkafka 2.0.2's
    assert final("")[-1] == Authenticated("User:alice")  # RFC 5802's
    refused = final("", "x")  # the proof is over this very message, but its nonce is not the server's
    assert _reply(refused[0], SASL_AUTHENTICATE_KEY, 2)[1].error_code == Errors.SASL_AUTHENTICATION_FAILED
    assert isinstance(refused[-1], Close)


def test_a_scram_user_name_with_comma_and_equals_is_unescaped():
    """RFC 5802 saslname: the client sends "a=2Cb=3Dc"; the server looks up "a,b=c" (Kafka's ScramFormatter)."""
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    _handshake(conn, SCRAM_SHA_512)
    events = _exchange(conn, SaslClient(SCRAM_SHA_512, "a,b=c", "pw"))
    assert events[-1] == Authenticated("User:a,b=c")


def test_handshake_v0_exchanges_raw_tokens():
    """SaslHandshake v0 (before KIP-152): the tokens then travel as raw size-prefixed frames, answered alike."""
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    _, handshake = _reply(_handshake(conn, SCRAM_SHA_512, version=0)[0], SASL_HANDSHAKE_KEY, 0)
    assert handshake.error_code == 0
    client = SaslClient(SCRAM_SHA_512, "alice", "alice-secret")
    events = conn.receive_data(_size_prefixed(client.first()))
    assert isinstance(events[0], Reply)
    final = client.respond(events[0].data[4:])
    assert final is not None
    events = conn.receive_data(_size_prefixed(final))
    assert client.respond(events[0].data[4:]) is None  # the server's signature checks out
    assert events[1] == Authenticated("User:alice")


@pytest.mark.parametrize("password", ["wrong", "alice-secret-"])
@pytest.mark.parametrize("mechanism", [SCRAM_SHA_512, PLAIN])
def test_a_wrong_password_is_sasl_authentication_failed_and_closes_after_the_delay(mechanism, password):
    """Kafka: SASL_AUTHENTICATION_FAILED with the mechanism's message (SCRAM's does not say whether the user
    exists), then the connection closes after connection.failed.authentication.delay.ms; nothing after it is
    read, the principal stays ANONYMOUS, and the password is not in the reason the node logs."""
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    _handshake(conn, mechanism)
    events = _exchange(conn, SaslClient(mechanism, "alice", password))
    _, response = _reply(events[0], SASL_AUTHENTICATE_KEY, 2)
    assert response.error_code == Errors.SASL_AUTHENTICATION_FAILED
    if mechanism == PLAIN:
        assert response.error_message == "Authentication failed: Invalid username or password"
    else:
        assert response.error_message == ("Authentication failed during authentication due to invalid credentials "
                                          "with SASL mechanism SCRAM-SHA-512")
    close = events[-1]
    assert isinstance(close, Close) and close.failed_authentication and close.delay_ms == 100
    assert password not in close.reason and "'alice'" in close.reason
    assert conn.principal == ANONYMOUS and conn.receive_data(METADATA) == []


def test_an_unknown_scram_user_gets_the_same_answer_as_a_wrong_password():
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    _handshake(conn, SCRAM_SHA_512)
    events = _exchange(conn, SaslClient(SCRAM_SHA_512, "mallory", "x"))
    _, response = _reply(events[0], SASL_AUTHENTICATE_KEY, 2)
    assert response.error_code == Errors.SASL_AUTHENTICATION_FAILED
    assert "invalid credentials" in response.error_message and isinstance(events[-1], Close)


def test_plain_authzid_must_be_the_user():
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    _handshake(conn, PLAIN)
    _, response = _reply(_authenticate(conn, b"admin\0alice\0alice-secret")[0], SASL_AUTHENTICATE_KEY, 2)
    assert response.error_code == Errors.SASL_AUTHENTICATION_FAILED
    assert "authorization id that is different from username" in response.error_message


def test_an_unsupported_mechanism_is_answered_with_the_enabled_ones_then_closed():
    conn = ServerConnection(SUPPORTED, sasl=SaslConfig((SCRAM_SHA_512,), CREDENTIALS, nonce=lambda: "n" * 20))
    events = _handshake(conn, "GSSAPI")
    _, response = _reply(events[0], SASL_HANDSHAKE_KEY, 1)
    assert response.error_code == Errors.UNSUPPORTED_SASL_MECHANISM and tuple(response.mechanisms) == (SCRAM_SHA_512,)
    assert isinstance(events[1], Close) and events[1].failed_authentication


def test_an_anonymous_client_request_before_the_handshake_closes_without_an_answer():
    """A PLAINTEXT client on a SASL listener: its ApiVersions is answered, its Metadata closes the connection
    (Kafka's InvalidRequestException during the handshake), and a SaslAuthenticate before the handshake too."""
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    assert isinstance(conn.receive_data(wire.frame(wire.encode_request(m.ApiVersionsRequest(), 0)))[0], Reply)
    events = conn.receive_data(METADATA)
    assert len(events) == 1 and isinstance(events[0], Close) and "during SASL handshake" in events[0].reason
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    events = _authenticate(conn, b"n,,n=alice,r=x")
    assert len(events) == 1 and isinstance(events[0], Close)


def test_a_second_api_versions_before_the_handshake_closes_unless_the_first_was_too_new():
    """Kafka serves one ApiVersions before the handshake; an ApiVersions at a version above the listener's (KIP-511:
    answered UNSUPPORTED_VERSION with the ranges, as kafka-python 3 sends v4 first) does not count."""
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    frame = wire.frame(wire.encode_request(m.ApiVersionsRequest(), 0))
    assert isinstance(conn.receive_data(frame)[0], Reply)
    assert isinstance(conn.receive_data(frame)[0], Close)
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    too_new = bytearray(frame)
    too_new[6:8] = (4).to_bytes(2, "big")  # the request header's API version
    assert isinstance(conn.receive_data(bytes(too_new))[0], Reply)
    assert isinstance(conn.receive_data(frame)[0], Reply)
    assert isinstance(_handshake(conn, PLAIN)[0], Reply) and not conn.closed


def test_a_request_other_than_sasl_authenticate_during_the_exchange_is_illegal_sasl_state():
    """After the handshake: a second SaslHandshake is answered ILLEGAL_SASL_STATE and the connection fails; a
    Metadata request closes it (Kafka answers it with its own error response; kraftlog's SASL layer parses only
    the SASL APIs)."""
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    _handshake(conn, PLAIN)
    events = _handshake(conn, PLAIN)
    _, response = _reply(events[0], SASL_HANDSHAKE_KEY, 1)
    assert response.error_code == Errors.ILLEGAL_SASL_STATE and isinstance(events[1], Close)
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    _handshake(conn, PLAIN)
    events = conn.receive_data(METADATA)
    assert len(events) == 1 and isinstance(events[0], Close) and "during SASL authentication" in events[0].reason


def test_sasl_apis_after_authentication_are_illegal_sasl_state_and_the_connection_stays():
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    _handshake(conn, PLAIN)
    _exchange(conn, SaslClient(PLAIN, "alice", "alice-secret"))
    events = _handshake(conn, PLAIN)
    _, response = _reply(events[0], SASL_HANDSHAKE_KEY, 1)
    assert response.error_code == Errors.ILLEGAL_SASL_STATE and len(events) == 1
    events = _authenticate(conn, b"x")
    _, response = _reply(events[0], SASL_AUTHENTICATE_KEY, 2)
    assert response.error_code == Errors.ILLEGAL_SASL_STATE and len(events) == 1
    assert isinstance(conn.receive_data(METADATA)[0], Request)


def test_a_frame_larger_than_sasl_server_max_receive_size_closes_before_authentication():
    conn = ServerConnection(SUPPORTED, sasl=CONFIG)
    events = conn.receive_data(struct.pack(">i", SASL_SERVER_MAX_RECEIVE_SIZE + 1))
    assert len(events) == 1 and isinstance(events[0], Close)
    plain = ServerConnection(SUPPORTED)  # a PLAINTEXT listener keeps socket.request.max.bytes
    assert plain.receive_data(struct.pack(">i", SASL_SERVER_MAX_RECEIVE_SIZE + 1)) == []


def test_plain_users_come_from_the_jaas_config_user_entries():
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="admin-secret" user_admin="admin-secret" user_alice="a b;c";')
    assert parse_plain_jaas_users(jaas) == {"admin": "admin-secret", "alice": "a b;c"}
    for bad in ("PlainLoginModule required user_a=\"x\"", "PlainLoginModule maybe user_a=\"x\";", 'M required "x;'):
        with pytest.raises(ValueError, match="sasl.jaas.config"):
            parse_plain_jaas_users(bad)


# ------------------------------------------------------------------------------------------ hostile frames
def _fuzzed_sasl_frame(rng: random.Random) -> bytes:
    """A SASL frame bent at random: a handshake or authenticate request with a mangled body or header, a raw
    token of random bytes, or a valid request with random auth bytes."""
    kind = rng.randrange(4)
    if kind == 0:
        frame = bytearray(request_frame(SASL_HANDSHAKE_KEY, rng.choice([0, 1]), 1, "f",
                                        mechanism=rng.choice([PLAIN, SCRAM_SHA_512, "X" * rng.randrange(300)])))
    else:
        frame = bytearray(request_frame(SASL_AUTHENTICATE_KEY, rng.choice([0, 1, 2]), 2, "f",
                                        auth_bytes=rng.randbytes(rng.randrange(200))))
    if kind >= 2:
        for _ in range(rng.randrange(1, 6)):
            frame[rng.randrange(4, len(frame))] = rng.randrange(256)
    if kind == 3:
        cut = rng.randrange(4, len(frame) + 1)
        frame = bytearray(struct.pack(">i", cut - 4)) + frame[4:cut]
    return bytes(frame)


def test_ten_thousand_fuzzed_sasl_frames_never_crash_the_listener_or_authenticate():
    """10,000 SASL frames with random bytes and lengths, after a valid handshake or not: the framing answers or
    closes, never raises, and no connection ever authenticates without the password."""
    rng = random.Random(20261129)
    for _ in range(10_000):
        conn = ServerConnection(SUPPORTED, sasl=CONFIG)
        stage = rng.randrange(3)
        if stage >= 1:
            _handshake(conn, rng.choice([PLAIN, SCRAM_SHA_512]), version=rng.choice([0, 1]))
        if stage == 2 and not conn.closed and not conn.authenticator.expects_raw_token():
            _authenticate(conn, rng.choice([b"n,,n=alice,r=abc", b"\0alice\0nope"]))
        for _ in range(rng.randrange(1, 4)):
            if conn.closed:
                break
            for event in conn.receive_data(_fuzzed_sasl_frame(rng)):
                assert not isinstance(event, (Authenticated, Request)), event
        assert conn.principal == ANONYMOUS


def test_ten_thousand_pre_authentication_kafka_requests_are_never_handed_to_the_node():
    """Every API's request (test_framing's samples, valid or with random bytes flipped), sent before the handshake
    or during the exchange: closed or answered by the SASL layer, never a Request event, never authenticated."""
    from test_framing import VALID
    rng = random.Random(36)
    for _ in range(10_000):
        conn = ServerConnection(SUPPORTED, sasl=CONFIG)
        if rng.random() < 0.5:
            _handshake(conn, rng.choice([PLAIN, SCRAM_SHA_512]))
        frame = bytearray(rng.choice(VALID))
        for _ in range(rng.randrange(0, 4)):
            frame[rng.randrange(4, len(frame))] = rng.randrange(256)
        for event in conn.receive_data(bytes(frame)):
            assert not isinstance(event, (Authenticated, Request)), event
        assert conn.principal == ANONYMOUS
