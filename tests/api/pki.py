"""Certificates for mutual-TLS tests: a CA, a server certificate for 127.0.0.1 and client
certificates with a chosen subject CN and URI SANs (e.g. a SPIFFE ID), written as PEM files."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


class TestCa:
    __test__ = False  # not a test class

    def __init__(self, directory: Path, name: str = "test-ca") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = self._build(self.name, self.key, ca=True)
        self.file = directory / f"{name}.crt"
        self.file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def _build(
        self,
        subject: x509.Name,
        key: ec.EllipticCurvePrivateKey,
        *,
        ca: bool = False,
        usage: x509.ObjectIdentifier | None = None,
        san: list[x509.GeneralName] | None = None,
    ) -> x509.Certificate:
        now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if usage is not None:
            builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return builder.sign(self.key, hashes.SHA256())

    def _write(self, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pair:
        pair = Pair(self.directory / f"{stem}.crt", self.directory / f"{stem}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return pair

    def server(self) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mothership")])
        san: list[x509.GeneralName] = [
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.DNSName("localhost"),
        ]
        cert = self._build(subject, key, usage=ExtendedKeyUsageOID.SERVER_AUTH, san=san)
        return self._write("server", cert, key)

    def client(self, common_name: str, *uris: str) -> Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        san: list[x509.GeneralName] = [x509.UniformResourceIdentifier(u) for u in uris]
        cert = self._build(subject, key, usage=ExtendedKeyUsageOID.CLIENT_AUTH, san=san)
        return self._write(f"client-{common_name}", cert, key)
