"""Fresh certificates for one test-bed cluster: a CA, the apiserver's serving certificate, an admin
client certificate (group system:masters) and the service-account signing key.

Generated in-process with `cryptography` (EC P-256: fast, no openssl binary needed).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from reconciler.util.clock import utcnow

_VALIDITY = dt.timedelta(days=3650)
_SERVER_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files of one cluster."""

    directory: Path

    def path(self, name: str) -> Path:
        return self.directory / name

    @property
    def ca_cert(self) -> Path:
        return self.path("ca.crt")

    @property
    def ca_key(self) -> Path:
        return self.path("ca.key")

    @property
    def admin_cert(self) -> Path:
        return self.path("admin.crt")

    @property
    def admin_key(self) -> Path:
        return self.path("admin.key")


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    usage: x509.ObjectIdentifier | None = None,
    san: x509.SubjectAlternativeName | None = None,
    validity: dt.timedelta = _VALIDITY,
) -> x509.Certificate:
    now = utcnow() - dt.timedelta(minutes=5)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(minutes=5) + validity)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def generate_pki(directory: Path) -> Pki:
    """Write a complete, fresh set of certificates and keys into `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    pki = Pki(directory)
    pem = serialization.Encoding.PEM

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("reconciler-dev-ca")
    ca_cert = _issue(ca_name, ca_key, ca_name, ca_key, ca=True)
    _write(pki.ca_key, _key_pem(ca_key))
    _write(pki.ca_cert, ca_cert.public_bytes(pem))

    server_key = ec.generate_private_key(ec.SECP256R1())
    san = x509.SubjectAlternativeName(
        [x509.DNSName(n) for n in _SERVER_DNS]
        + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", "10.0.0.1")]
    )
    server_cert = _issue(
        _name("kube-apiserver"),
        server_key,
        ca_name,
        ca_key,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        san=san,
    )
    _write(pki.path("server.key"), _key_pem(server_key))
    _write(pki.path("server.crt"), server_cert.public_bytes(pem))

    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin_cert = _issue(
        _name("reconciler-dev-admin", "system:masters"),
        admin_key,
        ca_name,
        ca_key,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    _write(pki.admin_key, _key_pem(admin_key))
    _write(pki.admin_cert, admin_cert.public_bytes(pem))

    # Service-account tokens are signed with RS256 by default: this key must be RSA.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write(pki.path("sa.key"), _key_pem(sa_key))
    _write(
        pki.path("sa.pub"),
        sa_key.public_key().public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo),
    )
    return pki


def issue_client(
    pki: Pki, common_name: str, organization: str, validity: dt.timedelta
) -> tuple[bytes, bytes, dt.datetime]:
    """A client certificate of the cluster's CA (PEM certificate, PEM key, expiry): short-lived
    credentials, as Gardener's admin kubeconfigs are."""
    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _issue(
        _name(common_name, organization),
        key,
        ca_cert.subject,
        ca_key,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        validity=validity,
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    return pem, _key_pem(key), cert.not_valid_after_utc
