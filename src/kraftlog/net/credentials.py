"""Where a node's SASL listener looks users up (:class:`kraftlog.protocol.sasl.CredentialStore`): PLAIN passwords
from the listener's JAAS configuration (``listener.name.<l>.plain.sasl.jaas.config``'s ``user_<name>`` entries,
as Kafka's ``PlainServerCallbackHandler``), SCRAM credentials from the node's metadata image as it is at the
moment of the exchange (UserScramCredentialRecords, as Kafka's ``CredentialCache`` fed by the metadata
publisher): a credential altered with AlterUserScramCredentials is used by the next authentication."""

from __future__ import annotations

from collections.abc import Callable

from ..metadata.image import MetadataImage
from ..protocol.sasl import SCRAM_MECHANISM_TYPES, ScramCredential

__all__ = ["ListenerCredentials"]


class ListenerCredentials:
    """``plain``: user -> password; ``image``: the node's current metadata image (read at each lookup)."""

    def __init__(self, plain: dict[str, str], image: Callable[[], MetadataImage]) -> None:
        self.plain = dict(plain)
        self.image = image

    def plain_password(self, user: str) -> str | None:
        return self.plain.get(user)

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        record = self.image().scram_credentials.get((user, SCRAM_MECHANISM_TYPES.get(mechanism, -1)))
        if record is None:
            return None
        return ScramCredential(record.salt, record.stored_key, record.server_key, record.iterations)
