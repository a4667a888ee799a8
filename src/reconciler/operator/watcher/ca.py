"""The operator is the certificate authority of its watchers (mutual TLS, `cryptography`).

One CA per control plane, kept in a Secret there (`tls.crt`/`tls.key`), created by the first
operator that needs it (a create race is settled by the apiserver: the loser reads the winner's).
Each runtime gets one certificate, CN = its runtime id, usable both for serving the admission
webhook (its SANs) and as the client certificate the watcher presents to the listener; the
listener serves with a certificate of the same CA. Keys are EC P-256: fast to make, small.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from reconciler.errors import KubeApiError
from reconciler.kube.cluster import Cluster
from reconciler.util.clock import utcnow

CA_VALIDITY = dt.timedelta(days=3650)
_BACKDATE = dt.timedelta(minutes=5)  # clocks of the runtimes may lag a little


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its key, PEM."""

    cert: bytes
    key: bytes

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert)

    @property
    def not_after(self) -> dt.datetime:
        return self.certificate.not_valid_after_utc

    @property
    def not_before(self) -> dt.datetime:
        return self.certificate.not_valid_before_utc

    @property
    def common_name(self) -> str:
        names = self.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        return str(names[0].value) if names else ""


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _san(hosts: list[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def new_ca(common_name: str = "reconciler-watcher-ca") -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = utcnow() - _BACKDATE
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


class CertificateAuthority:
    def __init__(self, pair: KeyPair) -> None:
        self.pair = pair
        self._cert = pair.certificate
        key = serialization.load_pem_private_key(pair.key, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("the watcher CA key must be an EC key")
        self._key = key

    @property
    def cert_pem(self) -> bytes:
        return self.pair.cert

    def issue(self, common_name: str, hosts: list[str], validity: dt.timedelta) -> KeyPair:
        """A certificate for serving `hosts` and for authenticating as `common_name`."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = utcnow() - _BACKDATE
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + validity + _BACKDATE)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if hosts:
            builder = builder.add_extension(_san(hosts), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))

    def signed(self, pair: KeyPair) -> bool:
        """Whether `pair` was issued by this CA (a CA replaced meanwhile invalidates it)."""
        try:
            pair.certificate.verify_directly_issued_by(self._cert)
        except (ValueError, TypeError, InvalidSignature):
            return False
        return True

    @classmethod
    async def load_or_create(
        cls, cluster: Cluster, namespace: str, name: str
    ) -> CertificateAuthority:
        """The control plane's CA from its Secret; made and stored when there is none."""
        path = f"/api/v1/namespaces/{namespace}/secrets/{name}"
        try:
            secret = await cluster.client.request("GET", path)
        except KubeApiError as exc:
            if exc.status != 404:
                raise
            pair = new_ca()
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "type": "kubernetes.io/tls",
                "data": {
                    "tls.crt": base64.b64encode(pair.cert).decode(),
                    "tls.key": base64.b64encode(pair.key).decode(),
                },
            }
            try:
                await cluster.client.request(
                    "POST", f"/api/v1/namespaces/{namespace}/secrets", body=body
                )
                return cls(pair)
            except KubeApiError as race:
                if race.status != 409:
                    raise
                secret = await cluster.client.request("GET", path)
        data = secret.get("data") or {}
        return cls(KeyPair(base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"])))
