"""A throw-away OCI registry for tests and the demo: Debian's `docker-registry` on loopback.

OCI chart and module sources are tested against a real registry (the CNCF distribution
registry, which `helm push` and `oras` both speak to), not a fake. It runs without
authentication (or with token authentication, as public registries have it) over plain HTTP on
a free 127.0.0.1 port, its configuration and blobs in one directory that `stop` leaves for the
caller to remove. Installed idempotently like PostgreSQL.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import httpx

from reconciler.devcluster.ports import free_ports
from reconciler.devcluster.processes import is_running, spawn, terminate
from reconciler.devcluster.system import Reporter, apt_install, report_to_stderr
from reconciler.errors import DevClusterError
from reconciler.util.polling import poll_until

PACKAGE = "docker-registry"
BINARY = "/usr/bin/docker-registry"


def find_binary() -> Path | None:
    """The registry binary: $PATH's `docker-registry`, else Debian's install location."""
    found = shutil.which("docker-registry")
    if found:
        return Path(found)
    return Path(BINARY) if Path(BINARY).exists() else None


def ensure_installed(report: Reporter = report_to_stderr) -> Path:
    """The registry binary, installing Debian's package first when it is missing.

    The package's service is never started here: Debian's maintainer scripts may try to start
    it on port 5000; our instances each get their own port and configuration."""
    binary = find_binary()
    if binary is None:
        apt_install([PACKAGE], report)
        binary = find_binary()
    if binary is None:
        raise DevClusterError(f"{BINARY} not found after installing {PACKAGE!r}")
    return binary


@dataclass(frozen=True)
class TokenAuth:
    """Token authentication, as public registries (Docker Hub, ghcr.io) do it: a client answered
    401 fetches a Bearer token from `realm`; the registry accepts tokens of `issuer` for `service`
    signed by a key whose certificate chains to `root_certificates` (PEM)."""

    realm: str
    service: str
    issuer: str
    root_certificates: Path


def _config(storage: Path, port: int, debug_port: int, auth: TokenAuth | None) -> str:
    """Registry configuration: filesystem storage, plain HTTP on loopback, no authentication
    unless token authentication is asked for."""
    token = (
        "auth:\n"
        "  token:\n"
        f"    realm: {auth.realm}\n"
        f"    service: {auth.service}\n"
        f"    issuer: {auth.issuer}\n"
        f"    rootcertbundle: {auth.root_certificates}\n"
        if auth
        else ""
    )
    return token + (
        "version: 0.1\n"
        "log:\n"
        "  level: warn\n"
        "  accesslog:\n"
        "    disabled: true\n"
        "storage:\n"
        "  filesystem:\n"
        f"    rootdirectory: {storage}\n"
        "  delete:\n"
        "    enabled: true\n"
        "http:\n"
        f"  addr: 127.0.0.1:{port}\n"
        "  debug:\n"
        f"    addr: 127.0.0.1:{debug_port}\n"
    )


class OciRegistry:
    """One registry instance in `directory` (config.yml, storage/, registry.log)."""

    def __init__(
        self,
        directory: Path,
        *,
        die_with_parent: bool = False,
        token_auth: TokenAuth | None = None,
    ) -> None:
        """`die_with_parent`: the registry dies with this process (test runs; see `processes`).
        `token_auth`: require Bearer tokens (default: no authentication)."""
        self.directory = directory.resolve()
        self.die_with_parent = die_with_parent
        self.token_auth = token_auth
        self.port = 0
        self.pid = 0

    @property
    def host(self) -> str:
        """`127.0.0.1:<port>`: the registry part of `oci://` references to this instance."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    async def start(self) -> None:
        binary = ensure_installed()
        storage = self.directory / "storage"
        storage.mkdir(parents=True, exist_ok=True)
        self.port, debug_port = free_ports(2)
        config = self.directory / "config.yml"
        config.write_text(_config(storage, self.port, debug_port, self.token_auth))
        log = self.directory / "registry.log"
        self.pid = spawn(
            [str(binary), "serve", str(config)], log, die_with_parent=self.die_with_parent
        )

        async def answering() -> bool:
            if not is_running(self.pid, str(config)):
                raise DevClusterError(f"docker-registry exited during start-up; see {log}")
            try:
                async with httpx.AsyncClient(timeout=2) as client:
                    response = await client.get(f"{self.url}/v2/")
            except httpx.HTTPError:
                return False
            return response.status_code in (200, 401)  # 401: it asks for a token

        await poll_until(answering, timeout=30, what=f"docker-registry on {self.host}")

    async def stop(self) -> None:
        if self.pid:
            await terminate([self.pid], str(self.directory / "config.yml"))
            self.pid = 0
