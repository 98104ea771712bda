"""SASL on a Kafka listener, sans I/O: Kafka's ``SaslServerAuthenticator`` state machine and its ``PLAIN`` and
``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` server mechanisms.

:class:`SaslAuthenticator` is one connection's authentication (KIP-43, KIP-152). The framing layer
(:class:`kraftlog.protocol.framing.ServerConnection`) hands it every frame until it is complete and sends
what it answers; nothing here touches a socket, a clock or a random source (the server nonce of SCRAM
comes from the ``nonce`` callable of :class:`SaslConfig`: ``secrets`` in the TCP driver, the seeded rng in
the simulator). The rules, as Kafka's ``SaslServerAuthenticator`` applies them:

* Before the handshake only ApiVersions (once) and SaslHandshake are served; any other request closes the
  connection without an answer (Kafka's ``InvalidRequestException``: "Unexpected Kafka request of type ...
  during SASL handshake").
* SaslHandshake (API key 17) names a mechanism: one of ``sasl.enabled.mechanisms`` is answered NONE with the
  enabled list; another is answered UNSUPPORTED_SASL_MECHANISM and the connection fails. v1 (KIP-152) means
  the tokens come in SaslAuthenticate requests (API key 36, v0-2); v0 means raw size-prefixed tokens, answered
  the same way (the pre-KIP-152 exchange).
* During the exchange, a request other than SaslAuthenticate is answered ILLEGAL_SASL_STATE when it is a
  SaslHandshake (the only other API this layer parses; Kafka builds the error answer of any API) and the
  connection fails; a token the mechanism refuses is answered SASL_AUTHENTICATION_FAILED with Kafka's message
  (PLAIN's own; SCRAM's generic "Authentication failed during authentication due to invalid credentials
  with SASL mechanism ...", which does not say whether the user exists).
* A failed authentication closes the connection after ``connection.failed.authentication.delay.ms``
  (:attr:`SaslConfig.failed_delay_ms`, 100 ms by default), after the failure's answer is written.
* Once complete, a SaslHandshake or SaslAuthenticate is answered ILLEGAL_SASL_STATE (Kafka's ``KafkaApis``);
  every other request goes to the node with the connection's principal, ``User:<name>``.

KIP-368's re-authentication is not built: the session lifetime answered is 0 (no expiry), which every
client takes as "never re-authenticate". GSSAPI, OAUTHBEARER and delegation tokens (SCRAM's ``tokenauth``
extension) are not served.

Mechanisms (RFC 4616, RFC 5802/7677, Kafka's ``PlainSaslServer`` and ``ScramSaslServer``):

* ``PLAIN``: ``authzid NUL authcid NUL password`` (UTF-8), checked against the listener's users (Kafka's
  ``user_<name>="<password>"`` entries of ``listener.name.<l>.plain.sasl.jaas.config``); an authzid must be
  empty or the user's name.
* ``SCRAM-SHA-256`` / ``SCRAM-SHA-512``: the exchange of RFC 5802 through the ``scramp`` library, against the
  user's :class:`ScramCredential` (salt, stored key, server key, iterations: Kafka's
  ``UserScramCredentialRecord``); the SASL name is unescaped (``=2C`` -> ``,``, ``=3D`` -> ``=``) and an
  authzid must be empty or the user's name; channel binding is refused (Kafka has none).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import io
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

__all__ = [
    "PLAIN", "SCRAM_SHA_256", "SCRAM_SHA_512", "MECHANISMS", "SCRAM_MECHANISM_TYPES", "SASL_HANDSHAKE_KEY",
    "SASL_AUTHENTICATE_KEY", "SASL_VERSIONS", "SASL_SERVER_MAX_RECEIVE_SIZE", "DEFAULT_FAILED_AUTHENTICATION_DELAY_MS",
    "ANONYMOUS",
    "ScramCredential", "scram_credential", "credential_from_salted_password", "SCRAM_MIN_ITERATIONS",
    "SCRAM_MAX_ITERATIONS", "MECHANISM_OF_TYPE", "CredentialStore", "StaticCredentials", "SaslConfig", "SaslStep",
    "SaslAuthenticator", "AuthenticationFailed", "parse_plain_jaas_users", "jaas_options", "SaslClient",
    "SaslClientSession", "request_frame",
    "parse_response",
]

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
#: The mechanisms kraftlog serves, as ``sasl.enabled.mechanisms`` names them.
MECHANISMS: tuple[str, ...] = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)
#: SCRAM mechanism -> Kafka's ``ScramMechanism`` type (the ``mechanism`` byte of UserScramCredentialRecord
#: and of AlterUserScramCredentials / DescribeUserScramCredentials).
SCRAM_MECHANISM_TYPES: dict[str, int] = {SCRAM_SHA_256: 1, SCRAM_SHA_512: 2}
#: Kafka's ``ScramMechanism`` type -> the mechanism's name.
MECHANISM_OF_TYPE: dict[int, str] = {t: name for name, t in SCRAM_MECHANISM_TYPES.items()}
#: Kafka's ``ScramMechanism`` bounds on the iteration count.
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 16384

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
#: API key -> (min, max) version of the SASL APIs a SASL listener advertises and serves.
SASL_VERSIONS: dict[int, tuple[int, int]] = {SASL_HANDSHAKE_KEY: (0, 1), SASL_AUTHENTICATE_KEY: (0, 2)}
#: Kafka's ``sasl.server.max.receive.size`` default (bytes): the largest frame before authentication completes.
SASL_SERVER_MAX_RECEIVE_SIZE = 524_288
#: Kafka's ``connection.failed.authentication.delay.ms`` default (ms).
DEFAULT_FAILED_AUTHENTICATION_DELAY_MS = 100
#: The principal of a connection that has not authenticated (Kafka's ``KafkaPrincipal.ANONYMOUS``).
ANONYMOUS = "User:ANONYMOUS"

_SIZE = struct.Struct(">i")


class AuthenticationFailed(Exception):
    """A mechanism refused the client's token; ``args[0]`` is the message the client is told."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One user's SCRAM credential for one mechanism (Kafka's ``ScramCredential``; the fields of
    UserScramCredentialRecord): ``salt`` (bytes), ``stored_key`` and ``server_key`` (the hash's digest size:
    32 bytes for SHA-256, 64 for SHA-512) and ``iterations`` (4096..16384)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def scram_credential(mechanism: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
    """The credential of ``password`` (RFC 5802 section 3: SaltedPassword = Hi(password, salt, i), ClientKey,
    StoredKey = H(ClientKey), ServerKey; scramp computes them), as Kafka's ``ScramFormatter.generateCredential``.
    The salt is given (sans I/O: the caller draws it). Raises ValueError for an unknown mechanism or an
    iteration count outside Kafka's 4096..16384."""
    if mechanism not in SCRAM_MECHANISM_TYPES:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r} (one of {', '.join(SCRAM_MECHANISM_TYPES)})")
    if not SCRAM_MIN_ITERATIONS <= iterations <= SCRAM_MAX_ITERATIONS:
        raise ValueError(f"iterations {iterations} outside {SCRAM_MIN_ITERATIONS}..{SCRAM_MAX_ITERATIONS} "
                         f"for {mechanism}")
    import scramp  # imported where used: a campaign's executors run the core without it (PyYAML and kio only)
    _, stored_key, server_key, _ = scramp.ScramMechanism(mechanism).make_auth_info(password, iterations, salt)
    return ScramCredential(salt, stored_key, server_key, iterations)


def credential_from_salted_password(mechanism: str, salt: bytes, salted_password: bytes,
                                    iterations: int) -> ScramCredential:
    """The credential whose SaltedPassword an AlterUserScramCredentials upsertion carries (RFC 5802: StoredKey =
    H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword, "Server Key"); Kafka's
    ``ScramCredentialUtils`` / ``ScramFormatter``). ValueError for an unknown mechanism."""
    if mechanism not in SCRAM_MECHANISM_TYPES:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
    digest = "sha256" if mechanism == SCRAM_SHA_256 else "sha512"
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


class CredentialStore(Protocol):
    """Where a listener looks users up: PLAIN passwords (the listener's JAAS ``user_<name>`` entries) and
    SCRAM credentials (the metadata image's UserScramCredentialRecords)."""

    def plain_password(self, user: str) -> str | None: ...

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None: ...


@dataclass(frozen=True)
class StaticCredentials:
    """A :class:`CredentialStore` over fixed maps: ``plain`` user -> password, ``scram`` (mechanism, user) ->
    credential."""

    plain: Mapping[str, str] = field(default_factory=dict)
    scram: Mapping[tuple[str, str], ScramCredential] = field(default_factory=dict)

    def plain_password(self, user: str) -> str | None:
        return self.plain.get(user)

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        return self.scram.get((mechanism, user))


@dataclass(frozen=True)
class SaslConfig:
    """A SASL listener's settings: ``mechanisms`` (``sasl.enabled.mechanisms``, in order), ``credentials``,
    ``nonce`` (a fresh printable server nonce for each SCRAM exchange, at least 16 characters, no comma) and
    ``failed_delay_ms`` (``connection.failed.authentication.delay.ms``)."""

    mechanisms: tuple[str, ...]
    credentials: CredentialStore
    nonce: Callable[[], str]
    failed_delay_ms: int = DEFAULT_FAILED_AUTHENTICATION_DELAY_MS

    def __post_init__(self) -> None:
        unknown = [mech for mech in self.mechanisms if mech not in MECHANISMS]
        if not self.mechanisms or unknown:
            raise ValueError(f"sasl.enabled.mechanisms: {', '.join(unknown) or 'none'} (kraftlog serves "
                             f"{', '.join(MECHANISMS)})")


@dataclass(frozen=True, slots=True)
class SaslStep:
    """What one frame of the exchange gives: ``reply`` (framed bytes to send, or None), ``failure`` (the reason
    to close the connection after ``delay_ms``, or None) and, once the exchange succeeded, ``principal``."""

    reply: bytes | None = None
    failure: str | None = None
    delay_ms: int = 0
    principal: str | None = None


class _PlainServer:
    """RFC 4616 with Kafka's ``PlainSaslServer`` checks and messages."""

    def __init__(self, credentials: CredentialStore) -> None:
        self.credentials = credentials
        self.user: str | None = None
        #: the user the client named (for the node's log line about a failure), "?" before it did
        self.attempted = "?"

    def evaluate(self, token: bytes) -> tuple[bytes, bool]:
        try:
            parts = token.decode("utf-8").split("\0")
        except UnicodeDecodeError:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        if len(parts) != 3:
            raise AuthenticationFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, user, password = parts
        self.attempted = user
        if not user:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self.credentials.plain_password(user)
        if expected is None or not hmac.compare_digest(expected.encode("utf-8"), password.encode("utf-8")):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
        self.user = user
        return b"", True


def _sasl_name_to_user(name: str) -> str:
    """RFC 5802 saslname: ``=2C`` is ``,`` and ``=3D`` is ``=`` (Kafka's ``ScramFormatter.username``)."""
    return name.replace("=2C", ",").replace("=3D", "=")


class _ScramServer:
    """RFC 5802 server (two client messages) with Kafka's ``ScramSaslServer`` rules: scramp parses the client's
    first message and writes the server's; the final message is checked here as Kafka checks it, whose nonce
    rule is looser than the RFC's: the client's nonce must end with the server-first nonce (librdkafka before
    2.1 repeats its own nonce in front of it, and Kafka accepts that), and the proof is verified over the
    client's own final message."""

    def __init__(self, mechanism: str, credentials: CredentialStore, nonce: str) -> None:
        self.mechanism = mechanism
        self.credentials = credentials
        self.digest = "sha256" if mechanism == SCRAM_SHA_256 else "sha512"
        import scramp  # imported where used: a campaign's executors run the core without it (PyYAML and kio only)
        self._scram_error: type[Exception] = scramp.ScramException
        self.server = scramp.ScramMechanism(mechanism).make_server(self._auth_info, s_nonce=nonce)
        self.user: str | None = None
        #: the user the client named (for the node's log line about a failure), "?" before it did
        self.attempted = "?"
        self._credential: ScramCredential | None = None
        self._first: tuple[str, str, str] | None = None  # (gs2 header, client-first-bare, server-first)

    def _auth_info(self, name: str) -> tuple[bytes, bytes, bytes, int]:
        user = self.attempted = _sasl_name_to_user(name)
        credential = self.credentials.scram_credential(self.mechanism, user)
        if credential is None or not SCRAM_MIN_ITERATIONS <= credential.iterations <= SCRAM_MAX_ITERATIONS:
            raise _Refused()
        self._credential = credential
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def evaluate(self, token: bytes) -> tuple[bytes, bool]:
        try:
            text = token.decode("utf-8")
            if self._first is None:
                gs2 = text.split(",", 2)
                if len(gs2) < 3 or gs2[0] != "n":  # "y"/"p": channel binding, which Kafka does not offer
                    raise _Refused()
                self.server.set_client_first(text)
                if gs2[1] and gs2[1] != f"a={self.server.user}":  # Kafka: authzid empty or the username
                    raise _Refused()
                server_first: str = self.server.get_server_first()
                self._first = (f"{gs2[0]},{gs2[1]},", gs2[2], server_first)
                return server_first.encode("utf-8"), False
            return self._final(text), True
        except (_Refused, self._scram_error, UnicodeDecodeError, ValueError, KeyError, IndexError, binascii.Error):
            self.user = None
            raise AuthenticationFailed("Authentication failed during authentication due to invalid credentials "
                                       f"with SASL mechanism {self.mechanism}") from None

    def _final(self, text: str) -> bytes:
        """Check the client-final-message (``c=<gs2 header, base64>,r=<nonce>[,...],p=<proof>``); the
        server-final-message ``v=<ServerSignature>``."""
        assert self._first is not None and self._credential is not None
        gs2_header, client_first_bare, server_first = self._first
        without_proof, sep, proof_text = text.rpartition(",p=")
        fields = without_proof.split(",")
        if not sep or len(fields) < 2 or not fields[0].startswith("c=") or not fields[1].startswith("r="):
            raise _Refused()
        if base64.b64decode(fields[0][2:], validate=True) != gs2_header.encode("utf-8"):
            raise _Refused()
        server_nonce = server_first.split(",", 1)[0][2:]
        if not fields[1][2:].endswith(server_nonce):  # Kafka's ScramSaslServer.verifyClientProof
            raise _Refused()
        proof = base64.b64decode(proof_text, validate=True)
        auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
        credential = self._credential
        signature = hmac.new(credential.stored_key, auth_message, self.digest).digest()
        if len(proof) != len(signature):
            raise _Refused()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.digest, client_key).digest(), credential.stored_key):
            raise _Refused()
        self.user = self.attempted
        server_signature = hmac.new(credential.server_key, auth_message, self.digest).digest()
        return b"v=" + base64.b64encode(server_signature)


class _Refused(Exception):
    """Raised inside the SCRAM exchange for a refusal whose reason the client is not told."""


# Kafka's SaslServerAuthenticator.SaslState, the ones a first authentication goes through (its INITIAL_REQUEST and
# HANDSHAKE_OR_VERSIONS_REQUEST accept the same requests: one state here)
_HANDSHAKE_OR_VERSIONS, _HANDSHAKE, _AUTHENTICATE, _COMPLETE, _FAILED = range(5)


class SaslAuthenticator:
    """One connection's SASL authentication (the module doc). :meth:`receive` takes each frame (without its size
    prefix) until :attr:`complete`; :attr:`principal` is ``User:<name>`` once complete, else ANONYMOUS."""

    def __init__(self, config: SaslConfig) -> None:
        self.config = config
        self.state = _HANDSHAKE_OR_VERSIONS
        self.principal = ANONYMOUS
        self.mechanism: str | None = None
        self._server: _PlainServer | _ScramServer | None = None
        self._kafka_headers = True  # SaslHandshake v1+: tokens in SaslAuthenticate requests

    @property
    def complete(self) -> bool:
        return self.state == _COMPLETE

    def expects_raw_token(self) -> bool:
        """Whether the next frame is a raw token (after a v0 SaslHandshake), not a Kafka request."""
        return self.state == _AUTHENTICATE and not self._kafka_headers

    def receive(self, payload: bytes | memoryview, api_key: int, api_version: int, correlation_id: int,
                header_size: int) -> SaslStep:
        """A Kafka request (not ApiVersions: the framing answers it) received before authentication completed,
        with its parsed header's fields: the answer, and whether the connection fails."""
        if self.state in (_HANDSHAKE_OR_VERSIONS, _HANDSHAKE):
            if api_key != SASL_HANDSHAKE_KEY:
                self.state = _FAILED
                return SaslStep(failure=f"unexpected Kafka request of type {api_key} during SASL handshake")
            return self._handshake(payload, api_version, correlation_id, header_size)
        if api_key == SASL_AUTHENTICATE_KEY and self.state == _AUTHENTICATE:
            try:
                request: Any = entity_reader(load_request_schema(api_key, api_version))(payload, header_size)[0]
            except Exception as exc:  # kio's readers raise their own errors on a malformed body
                self.state = _FAILED
                return SaslStep(failure=f"malformed SaslAuthenticate request: {exc}")
            return self._token(bytes(request.auth_bytes), api_version, correlation_id)
        return self.illegal_state(api_key, api_version, correlation_id, "during SASL authentication")

    def api_versions_allowed(self) -> bool:
        """Kafka serves one ApiVersions before the handshake, and none after it; a second closes."""
        if self.state == _HANDSHAKE_OR_VERSIONS:
            self.state = _HANDSHAKE
            return True
        self.state = _FAILED
        return False

    def receive_raw_token(self, token: bytes | memoryview) -> SaslStep:
        """A raw token (after a v0 SaslHandshake): answered with a raw size-prefixed token."""
        return self._token(bytes(token), None, 0)

    def illegal_state(self, api_key: int, api_version: int, correlation_id: int, when: str) -> SaslStep:
        """ILLEGAL_SASL_STATE: answered for a SASL API (the connection fails while authenticating, and stays
        as it is once complete); any other API closes the connection."""
        message = f"Unexpected Kafka request of type {api_key} {when}"
        fail = not self.complete
        if fail:
            self.state = _FAILED
        if api_key == SASL_HANDSHAKE_KEY and api_version <= 1:
            reply = _encode(api_key, api_version, correlation_id, error_code=ErrorCode.illegal_sasl_state,
                            mechanisms=self.config.mechanisms)
        elif api_key == SASL_AUTHENTICATE_KEY and api_version <= 2:
            reply = _encode(api_key, api_version, correlation_id, error_code=ErrorCode.illegal_sasl_state,
                            error_message=message, auth_bytes=b"")
        else:
            return SaslStep(failure=message)
        return SaslStep(reply=reply, failure=message if fail else None,
                        delay_ms=self.config.failed_delay_ms if fail else 0)

    # ------------------------------------------------------------------ steps
    def _handshake(self, payload: bytes | memoryview, version: int, correlation_id: int,
                   header_size: int) -> SaslStep:
        try:
            request: Any = entity_reader(load_request_schema(SASL_HANDSHAKE_KEY, version))(payload, header_size)[0]
        except Exception as exc:  # kio's readers raise their own errors on a malformed body
            self.state = _FAILED
            return SaslStep(failure=f"malformed SaslHandshake request: {exc}")
        mechanism = str(request.mechanism)
        enabled = self.config.mechanisms
        if mechanism not in enabled:
            self.state = _FAILED
            reply = _encode(SASL_HANDSHAKE_KEY, version, correlation_id,
                            error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=enabled)
            return SaslStep(reply=reply, failure=f"unsupported SASL mechanism {mechanism[:64]!r}",
                            delay_ms=self.config.failed_delay_ms)
        self.mechanism = mechanism
        self._kafka_headers = version >= 1
        if mechanism == PLAIN:
            self._server = _PlainServer(self.config.credentials)
        else:
            self._server = _ScramServer(mechanism, self.config.credentials, self.config.nonce())
        self.state = _AUTHENTICATE
        return SaslStep(reply=_encode(SASL_HANDSHAKE_KEY, version, correlation_id, error_code=ErrorCode.none,
                                      mechanisms=enabled))

    def _token(self, token: bytes, version: int | None, correlation_id: int) -> SaslStep:
        server = self._server
        assert server is not None, "a token comes after the handshake"
        try:
            out, done = server.evaluate(token)
        except AuthenticationFailed as exc:
            self.state = _FAILED
            message = str(exc)
            reply = None
            if version is not None:
                reply = _encode(SASL_AUTHENTICATE_KEY, version, correlation_id,
                                error_code=ErrorCode.sasl_authentication_failed, error_message=message,
                                auth_bytes=b"")
            return SaslStep(reply=reply, failure=f"{message} (user {server.attempted[:64]!r})",
                            delay_ms=self.config.failed_delay_ms)
        principal = None
        if done:
            self.state = _COMPLETE
            self.principal = principal = f"User:{server.user}"
        if version is None:
            return SaslStep(reply=_SIZE.pack(len(out)) + out, principal=principal)
        return SaslStep(reply=_encode(SASL_AUTHENTICATE_KEY, version, correlation_id, error_code=ErrorCode.none,
                                      error_message=None, auth_bytes=out),
                        principal=principal)


def _encode(api_key: int, version: int, correlation_id: int, **fields: object) -> bytes:
    """The framed response of ``api_key`` at ``version`` (kio's schema, its response header) with ``fields``
    (those the version lacks are left out)."""
    response_type = load_response_schema(api_key, version)
    known = response_type.__dataclass_fields__
    response = response_type(**{k: v for k, v in fields.items() if k in known})
    out = io.BytesIO()
    header_schema = response_type.__header_schema__
    entity_writer(header_schema)(out, header_schema(correlation_id=i32(correlation_id)))
    entity_writer(response_type)(out, response)
    data = out.getvalue()
    return _SIZE.pack(len(data)) + data


def jaas_options(jaas: str) -> dict[str, str]:
    """The options of one ``sasl.jaas.config`` entry (``LoginModule required option="value" ...;``, JAAS's
    syntax, double quotes), e.g. ``username``, ``password`` and a PLAIN server's ``user_<name>`` entries. Raises
    ValueError naming the problem (never a value: they hold passwords)."""
    import shlex
    text = jaas.strip()
    if not text.endswith(";"):
        raise ValueError("sasl.jaas.config must end with ';'")
    try:
        words = shlex.split(text[:-1], posix=True)
    except ValueError as exc:
        raise ValueError(f"sasl.jaas.config: {exc}") from None
    if len(words) < 2 or words[1] not in ("required", "requisite", "sufficient", "optional"):
        raise ValueError("sasl.jaas.config is not 'LoginModule required option=\"value\" ...;'")
    options: dict[str, str] = {}
    for word in words[2:]:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ValueError(f"sasl.jaas.config: {word.split('=')[0]!r} is not option=\"value\"")
        options[key] = value
    return options


def parse_plain_jaas_users(jaas: str) -> dict[str, str]:
    """The users of a PLAIN ``sasl.jaas.config``: its ``user_<name>="<password>"`` options (Kafka's
    ``PlainServerCallbackHandler``), e.g. ``org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="a" user_admin="a" user_alice="b";``. ValueError as :func:`jaas_options`."""
    return {key[5:]: value for key, value in jaas_options(jaas).items() if key.startswith("user_") and len(key) > 5}


# ---------------------------------------------------------------------------------------------- client side
class SaslClient:
    """The client side of one SASL exchange (kraftlog's own clients, the tests): ``PLAIN`` or a SCRAM mechanism
    for ``user`` / ``password``; ``nonce`` is the client nonce (scramp draws one when None). :meth:`first` is the
    first token; :meth:`respond` takes each server token and gives the next client token, or None when the
    exchange is over (the server's final message checked: ScramException when it does not prove the server
    knows the credential)."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown SASL mechanism {mechanism!r} (one of {', '.join(MECHANISMS)})")
        self.mechanism = mechanism
        self.user, self.password = user, password
        escaped = user.replace("=", "=3D").replace(",", "=2C")
        self._scram = None
        if mechanism != PLAIN:
            import scramp  # imported where used (see scram_credential)
            self._scram = scramp.ScramClient([mechanism], escaped, password, c_nonce=nonce)
        self._step = 0

    def first(self) -> bytes:
        if self._scram is None:
            return f"\0{self.user}\0{self.password}".encode()
        first: str = self._scram.get_client_first()
        return first.encode()

    def respond(self, token: bytes) -> bytes | None:
        self._step += 1
        if self._scram is None:
            return None
        if self._step == 1:
            self._scram.set_server_first(token.decode())
            final: str = self._scram.get_client_final()
            return final.encode()
        self._scram.set_server_final(token.decode())
        return None


class SaslClientSession:
    """The client side of a whole SASL authentication on one connection, sans I/O (the TCP driver's connections
    to other nodes, kraftlog's admin commands): SaslHandshake v1 naming ``mechanism``, then SaslAuthenticate v2
    carrying each token of a :class:`SaslClient` for ``user`` / ``password``. :meth:`start` gives the first
    framed request; :meth:`receive` takes each response (without its size prefix) and gives the next framed
    request, or None once authenticated. PermissionError with the server's message when it refuses (an
    unsupported mechanism names the ones it offers), when the server's final SCRAM message does not prove it knows
    the credential, or when a response does not parse."""

    def __init__(self, mechanism: str, user: str, password: str, client_id: str | None,
                 nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._client = SaslClient(mechanism, user, password, nonce)
        self._client_id = client_id
        self._corr = 0
        self._handshaken = False

    def start(self) -> bytes:
        self._corr += 1
        return request_frame(SASL_HANDSHAKE_KEY, 1, self._corr, self._client_id, mechanism=self.mechanism)

    def receive(self, payload: bytes) -> bytes | None:
        try:
            return self._receive(payload)
        except PermissionError:
            raise
        except Exception as exc:  # scramp's ScramException (a server that does not know the credential), a
            raise PermissionError(f"SASL authentication failed: {exc}") from None  # response that does not parse

    def _receive(self, payload: bytes) -> bytes | None:
        if not self._handshaken:
            _, handshake = parse_response(SASL_HANDSHAKE_KEY, 1, payload)
            if handshake.error_code != 0:  # type: ignore[attr-defined]
                offered = ", ".join(handshake.mechanisms)  # type: ignore[attr-defined]
                raise PermissionError(f"{self.mechanism} is not enabled (the server offers {offered})")
            self._handshaken = True
            token: bytes | None = self._client.first()
        else:
            _, response = parse_response(SASL_AUTHENTICATE_KEY, 2, payload)
            if response.error_code != 0:  # type: ignore[attr-defined]
                raise PermissionError(f"SASL authentication failed: {response.error_message}")  # type: ignore
            token = self._client.respond(bytes(response.auth_bytes))  # type: ignore[attr-defined]
        if token is None:
            return None
        self._corr += 1
        return request_frame(SASL_AUTHENTICATE_KEY, 2, self._corr, self._client_id, auth_bytes=token)


def request_frame(api_key: int, version: int, correlation_id: int, client_id: str | None, **fields: object) -> bytes:
    """A framed SaslHandshake (``mechanism=``) or SaslAuthenticate (``auth_bytes=``) request at ``version``."""
    from kio.static.primitive import i16
    request_type = load_request_schema(api_key, version)
    header_schema = request_type.__header_schema__
    out = io.BytesIO()
    entity_writer(header_schema)(out, header_schema(request_api_key=i16(api_key), request_api_version=i16(version),
                                                    correlation_id=i32(correlation_id), client_id=client_id))
    entity_writer(request_type)(out, request_type(**fields))
    data = out.getvalue()
    return _SIZE.pack(len(data)) + data


def parse_response(api_key: int, version: int, payload: bytes) -> tuple[int, object]:
    """(correlation id, kio response) of a SaslHandshake or SaslAuthenticate response ``payload`` (without its
    size prefix)."""
    response_type = load_response_schema(api_key, version)
    header, size = entity_reader(response_type.__header_schema__)(payload, 0)
    body, _ = entity_reader(response_type)(payload, size)
    return int(header.correlation_id), body
