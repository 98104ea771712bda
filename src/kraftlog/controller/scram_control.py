"""SCRAM credentials on the controller (KIP-554; Kafka's ``ScramControlManager.alterCredentials``):
AlterUserScramCredentials, forwarded by a broker, becomes UserScramCredentialRecords and
RemoveUserScramCredentialRecords in the metadata log, from which every broker's SASL listener authenticates.

Kafka's rules, answered per user (one result per user named, in the order first named):

* a user named twice in one request, by two deletions, two upsertions or one of each, is DUPLICATE_RESOURCE
  ("A user credential cannot be altered twice in the same request") and nothing of it is applied;
* an empty user name is UNACCEPTABLE_CREDENTIAL ("Username must not be empty");
* a mechanism other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512) is UNSUPPORTED_SASL_MECHANISM ("Unknown SCRAM
  mechanism");
* an upsertion with fewer than 4096 or more than 16384 iterations is UNACCEPTABLE_CREDENTIAL ("Too few
  iterations" / "Too many iterations");
* a deletion of a credential the image does not hold is RESOURCE_NOT_FOUND ("Attempt to delete a user
  credential that does not exist").

An upsertion carries the client's salt and SaltedPassword, never the password: the controller derives the
stored and server keys (:func:`kraftlog.protocol.sasl.credential_from_salted_password`).
"""

from __future__ import annotations

from ..metadata.image import MetadataImage
from ..metadata.records import MetadataRecord, RemoveUserScramCredentialRecord, UserScramCredentialRecord
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.sasl import (
    MECHANISM_OF_TYPE,
    SCRAM_MAX_ITERATIONS,
    SCRAM_MIN_ITERATIONS,
    credential_from_salted_password,
)
from .context import ControllerContext

__all__ = ["ScramControlManager", "alter_credentials"]


def alter_credentials(image: MetadataImage, req: m.AlterUserScramCredentialsRequest
                      ) -> tuple[list[MetadataRecord], list[m.AlterUserScramCredentialsResult]]:
    """The records an AlterUserScramCredentials request appends and its per-user results (the module doc)."""
    counts: dict[str, int] = {}
    order: list[str] = []
    for name in [d.name for d in req.deletions] + [u.name for u in req.upsertions]:
        if name not in counts:
            order.append(name)
        counts[name] = counts.get(name, 0) + 1
    errors: dict[str, tuple[int, str]] = {}
    records: list[MetadataRecord] = []
    for name in order:
        if counts[name] > 1:
            errors[name] = (Errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        elif not name:
            errors[name] = (Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    for d in req.deletions:
        if d.name in errors:
            continue
        if d.mechanism not in MECHANISM_OF_TYPE:
            errors[d.name] = (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif (d.name, d.mechanism) not in image.scram_credentials:
            errors[d.name] = (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        else:
            records.append(RemoveUserScramCredentialRecord(d.name, d.mechanism))
    for u in req.upsertions:
        if u.name in errors:
            continue
        if u.mechanism not in MECHANISM_OF_TYPE:
            errors[u.name] = (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif u.iterations < SCRAM_MIN_ITERATIONS:
            errors[u.name] = (Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > SCRAM_MAX_ITERATIONS:
            errors[u.name] = (Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        else:
            c = credential_from_salted_password(MECHANISM_OF_TYPE[u.mechanism], bytes(u.salt),
                                                bytes(u.salted_password), u.iterations)
            records.append(UserScramCredentialRecord(u.name, u.mechanism, c.salt, c.stored_key, c.server_key,
                                                     c.iterations))
    results = [m.AlterUserScramCredentialsResult(name, *errors.get(name, (Errors.NONE, None))) for name in order]
    return records, results  # a user named twice is refused before any record of it is made


class ScramControlManager:
    """The controller's SCRAM credential control. ``ctx``: the controller (image, append)."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def handle_alter(self, now_ms: int, req: m.AlterUserScramCredentialsRequest
                     ) -> m.AlterUserScramCredentialsResponse:
        """AlterUserScramCredentials (:func:`alter_credentials`): the records appended together."""
        records, results = alter_credentials(self.ctx.image, req)
        if records:
            self.ctx.append(records, now_ms)
        return m.AlterUserScramCredentialsResponse(tuple(results))
