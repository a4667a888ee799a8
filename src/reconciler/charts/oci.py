"""OCI references and anonymous pulls over the OCI distribution API.

`oci://registry[:port]/path/name[:tag][@sha256:<hex>]` names a chart (pulled by Helm, see
`sources.py`) or a module's raw-manifest layer (pulled here: one manifest and one blob, both
checked against their digests). Registries on a loopback address are spoken to over plain
HTTP, as Docker and Helm's own tests treat `localhost`; everything else over HTTPS. Pulls are
anonymous: a registry that answers 401 with a Bearer challenge (public ghcr.io, Docker Hub, the
CNCF distribution registry with token auth) gets an anonymous token request first.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from reconciler.errors import ChartError

MAX_MANIFEST_BYTES = 4 * 1024 * 1024
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEX_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')


@dataclass(frozen=True)
class OciReference:
    repository: str
    """`oci://registry/path/name`, as helm pulls it."""
    version: str | None
    digest: str | None = None
    """`sha256:<hex>` when the reference pins its content."""

    @property
    def host(self) -> str:
        return self.repository.removeprefix("oci://").partition("/")[0]

    @property
    def path(self) -> str:
        """The repository inside the registry (`path/name`)."""
        return self.repository.removeprefix("oci://").partition("/")[2]

    @property
    def pinned(self) -> bool:
        """True when the reference names a version or digest (resolved once per cache)."""
        return self.version is not None or self.digest is not None

    @property
    def target(self) -> str:
        """What the registry's manifest endpoint is asked for: the digest, the tag, or latest."""
        return self.digest or self.version or "latest"

    def __str__(self) -> str:
        tag = f":{self.version}" if self.version else ""
        pin = f"@{self.digest}" if self.digest else ""
        return f"{self.repository}{tag}{pin}"


def parse_oci_reference(source: str, *, what: str = "chart source") -> OciReference:
    """Split `oci://registry[:port]/path/name[:tag][@sha256:hex]` into its parts."""
    rest = source.removeprefix("oci://")
    host, _, path = rest.partition("/")
    if "@" in host:  # user:password@registry: never echoed back
        shown = f"oci://{host.rpartition('@')[2]}/{path}"
        raise ChartError(f"{what} {shown}: credentials in the reference are not supported")
    if not source.startswith("oci://") or not host or not path or path.endswith("/"):
        raise ChartError(f"{what} {source}: expected oci://registry/repository/name[:version]")
    path, _, digest = path.partition("@")
    if digest and not _DIGEST.fullmatch(digest):
        raise ChartError(f"{what} {source}: digest {digest!r} is not sha256:<64 hex digits>")
    head, _, last = path.rpartition("/")
    name, _, version = last.partition(":")
    if not name:
        raise ChartError(f"{what} {source}: the reference names no repository")
    prefix = f"{head}/" if head else ""
    return OciReference(f"oci://{host}/{prefix}{name}", version or None, digest or None)


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (with or without a port)."""
    name = urlsplit(f"//{host}").hostname or ""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def sha256_digest(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


class OciPuller:
    """Reads manifests and blobs of OCI references; one instance per event loop."""

    def __init__(
        self, *, timeout: float = 60.0, plain_http: bool = False, what: str = "OCI source"
    ) -> None:
        self.timeout = timeout
        self.plain_http = plain_http
        self.what = what
        self._tokens: dict[str, str] = {}

    def _url(self, ref: OciReference, tail: str) -> str:
        scheme = "http" if self.plain_http or is_loopback(ref.host) else "https"
        return f"{scheme}://{ref.host}/v2/{ref.path}/{tail}"

    async def manifest(self, ref: OciReference) -> tuple[str, dict[str, Any]] | None:
        """The digest and body of the image manifest `ref` names; None when there is none.

        A digest in the reference is checked against what the registry returned."""
        accept = f"{OCI_MANIFEST}, {DOCKER_MANIFEST}, {', '.join(INDEX_TYPES)}"
        body = await self._get(ref, self._url(ref, f"manifests/{ref.target}"), accept)
        if body is None:
            return None
        digest = sha256_digest(body)
        if ref.digest and digest != ref.digest:
            raise ChartError(f"{self.what} {ref}: the registry returned manifest {digest}")
        try:
            manifest = json.loads(body)
        except ValueError:
            raise ChartError(f"{self.what} {ref}: the manifest is not JSON") from None
        if not isinstance(manifest, dict):
            raise ChartError(f"{self.what} {ref}: the manifest is not a JSON object")
        if manifest.get("mediaType") in INDEX_TYPES:
            raise ChartError(
                f"{self.what} {ref}: is an image index (several manifests); "
                "name one of them by digest"
            )
        return digest, manifest

    async def blob(self, ref: OciReference, digest: str, max_bytes: int) -> bytes | None:
        """The blob `digest` of `ref`'s repository, checked against its digest; None if absent."""
        if not _DIGEST.fullmatch(digest):
            raise ChartError(f"{self.what} {ref}: layer digest {digest!r} is not sha256")
        data = await self._get(ref, self._url(ref, f"blobs/{digest}"), "*/*", max_bytes)
        if data is not None and sha256_digest(data) != digest:
            raise ChartError(f"{self.what} {ref}: blob {digest} does not match its digest")
        return data

    async def _get(
        self, ref: OciReference, url: str, accept: str, max_bytes: int = MAX_MANIFEST_BYTES
    ) -> bytes | None:
        async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=True) as client:
            try:
                body = await self._read(client, ref, url, accept, max_bytes)
                if isinstance(body, httpx.Response):  # 401: ask for a token, then once more
                    token = await self._anonymous_token(client, ref, body)
                    body = await self._read(client, ref, url, accept, max_bytes, token)
            except httpx.HTTPError as exc:
                cause = str(exc) or type(exc).__name__
                raise ChartError(f"{self.what} {ref}: registry unreachable: {cause}") from None
        if isinstance(body, httpx.Response):
            raise ChartError(
                f"{self.what} {ref}: the registry answered HTTP 401 (anonymous pulls refused)"
            )
        return body

    async def _read(
        self,
        client: httpx.AsyncClient,
        ref: OciReference,
        url: str,
        accept: str,
        max_bytes: int,
        token: str | None = None,
    ) -> bytes | httpx.Response | None:
        """The body (at most `max_bytes`), None on 404, the response itself on 401."""
        token = token or self._tokens.get(ref.repository)
        headers = {"Accept": accept}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        async with client.stream("GET", url, headers=headers) as response:
            if response.status_code == 401:
                return response
            if response.status_code == 404:
                return None
            if response.status_code >= 400:
                raise ChartError(
                    f"{self.what} {ref}: the registry answered HTTP {response.status_code}"
                )
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    raise ChartError(f"{self.what} {ref}: larger than {max_bytes} bytes")
            return bytes(body)

    async def _anonymous_token(
        self, client: httpx.AsyncClient, ref: OciReference, response: httpx.Response
    ) -> str | None:
        """A pull token from the realm a Bearer challenge names (none for other challenges)."""
        challenge = response.headers.get("www-authenticate", "")
        if not challenge.lower().startswith("bearer "):
            return None
        params = dict(_CHALLENGE_PARAM.findall(challenge))
        realm = params.pop("realm", "")
        if not realm.startswith(("http://", "https://")):
            return None
        params.setdefault("scope", f"repository:{ref.path}:pull")
        answer = await client.get(realm, params=params)
        if answer.status_code != 200:
            return None
        try:
            body = answer.json()
        except ValueError:
            return None
        token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str):
            return None
        self._tokens[ref.repository] = token
        return token
