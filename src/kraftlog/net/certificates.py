"""Certificates for TLS listeners, with the ``cryptography`` package: a cluster's own CA
(:func:`issue_ca`) and the certificates it signs (:func:`issue_certificate`: a node's, with its loopback addresses
and host names as subject alternative names, or a client's), written as PEM files Kafka's ``ssl.keystore.type=PEM``
and ``ssl.truststore.type=PEM`` read (:func:`write_keystore`: the private key then the certificate chain, mode
0600; :func:`write_truststore`).

Keys are ECDSA P-256 (fast to make, accepted by OpenSSL, librdkafka and the JVM); certificates are valid from
an hour before they are made (clock skew) for ``days``; the CA's is a v3 CA certificate with path length 0.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Issued", "issue_ca", "issue_certificate", "write_keystore", "write_truststore"]


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key (``cryptography`` objects), with the chain up to the CA (the CA's own
    certificate for one the CA signed; empty for the CA)."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    chain: tuple[x509.Certificate, ...] = ()


def _name(common_name: str, organization: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def issue_ca(common_name: str = "kraftlog CA", organization: str = "kraftlog", days: int = 365) -> Issued:
    """A self-signed CA certificate (basic constraints CA, path length 0; key cert sign, CRL sign)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = _name(common_name, organization)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return Issued(cert, key)


def issue_certificate(ca: Issued, common_name: str, hosts: tuple[str, ...] = (), organization: str = "kraftlog",
                      days: int = 365) -> Issued:
    """A certificate ``ca`` signs for ``common_name`` (its subject ``CN=<common_name>,O=<organization>``, the
    principal Kafka's DEFAULT ``ssl.principal.mapping.rules`` gives a client presenting it), usable by a server
    and a client; ``hosts``: IP addresses and DNS names for its subject alternative names (a server's)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    builder = (x509.CertificateBuilder().subject_name(_name(common_name, organization))
               .issuer_name(ca.certificate.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                              critical=False))
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return Issued(builder.sign(ca.key, hashes.SHA256()), key, (ca.certificate,))


def _write(path: str, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def write_keystore(path: str, issued: Issued, password: str | None = None) -> None:
    """``issued``'s private key (PKCS#8; encrypted with ``password`` when given: Kafka's ``ssl.key.password``) and
    its certificate chain, PEM, in one file of mode 0600 (Kafka's ``ssl.keystore.type=PEM`` file)."""
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption() if password is None else serialization.BestAvailableEncryption(password.encode()))
    key = issued.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    certs = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in (issued.certificate, *issued.chain))
    _write(path, key + certs, 0o600)


def write_truststore(path: str, *certificates: x509.Certificate) -> None:
    """The trusted certificates (a CA's), PEM (Kafka's ``ssl.truststore.type=PEM`` file), mode 0644."""
    _write(path, b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certificates), 0o644)
