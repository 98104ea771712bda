"""The security rows of the generator's table (:mod:`.spec`): the SCRAM credential admin APIs of KIP-554,
DescribeUserScramCredentials (50, v0) and AlterUserScramCredentials (51, v0). SaslHandshake and SaslAuthenticate
are not here: the framing layer answers them before a request reaches the core
(:mod:`kraftlog.protocol.sasl`)."""

from __future__ import annotations

from .spec_model import REQUEST, RESPONSE, Api, Const, F, Kio, Struct

SECURITY_APIS: tuple[Api, ...] = (
    Api("DescribeUserScramCredentials", 50, 0, Kio(0), title=(
        "SCRAM credentials (KIP-554): DescribeUserScramCredentials (50, v0), AlterUserScramCredentials (51, v0)"),
        constants=(
            Const("SCRAM_SHA_256", "1", "Kafka's ``ScramMechanism`` types: the ``mechanism`` of a credential."),
            Const("SCRAM_SHA_512", "2"),), classes=(
        Struct("DescribeUserScramCredentialsRequest", REQUEST, "", doc=(
            "``users``: the user names to describe, None for every user."), fields=(
            F("users", type="tuple[str, ...] | None", default=None),)),
        Struct("CredentialInfo", RESPONSE, "results.credential_infos", fields=(F("mechanism"), F("iterations"))),
        Struct("DescribeUserScramCredentialsResult", RESPONSE, "results", fields=(
            F("user"), F("error_code"), F("error_message", default=None), F("credential_infos", default=()))),
        Struct("DescribeUserScramCredentialsResponse", RESPONSE, "", fields=(
            F("error_code"), F("results", default=()), F("error_message", default=None),
            F("throttle_time_ms", default=0))),
    )),
    Api("AlterUserScramCredentials", 51, 0, Kio(0), title="", classes=(
        Struct("ScramCredentialDeletion", REQUEST, "deletions", fields=(F("name"), F("mechanism"))),
        Struct("ScramCredentialUpsertion", REQUEST, "upsertions", doc=(
            "``salted_password``: Hi(password, salt, iterations), computed by the client (RFC 5802); the controller "
            "derives the stored and server keys from it."), fields=(
            F("name"), F("mechanism"), F("iterations"), F("salt"), F("salted_password"))),
        Struct("AlterUserScramCredentialsRequest", REQUEST, "", fields=(
            F("deletions", default=()), F("upsertions", default=()))),
        Struct("AlterUserScramCredentialsResult", RESPONSE, "results", fields=(
            F("user"), F("error_code"), F("error_message", default=None))),
        Struct("AlterUserScramCredentialsResponse", RESPONSE, "", fields=(
            F("results"), F("throttle_time_ms", default=0))),
    )),
)
