"""A throw-away PostgreSQL server for tests, benchmarks and the demo.

Installs Debian's server package when missing, `initdb`s into a directory, starts on a free
loopback port with durability switched off (fsync, synchronous_commit: this data is disposable)
and stops it again, or pauses and resumes it (fault tests). PostgreSQL refuses to run as root, so
as root it runs as the `postgres` user the Debian package creates.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import signal
import subprocess
from pathlib import Path

import asyncpg

from reconciler.devcluster.ports import free_ports
from reconciler.devcluster.processes import is_running, spawn, terminate
from reconciler.devcluster.system import Reporter, apt_install, report_to_stderr
from reconciler.errors import DevClusterError
from reconciler.util.polling import poll_until


def find_bindir() -> Path | None:
    """Directory holding initdb/postgres: $PG_BINDIR, else the newest Debian install."""
    configured = os.environ.get("PG_BINDIR")
    if configured:
        return Path(configured)
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def ensure_installed(report: Reporter = report_to_stderr) -> Path:
    bindir = find_bindir()
    if bindir is None:
        apt_install(["postgresql"], report)
        bindir = find_bindir()
    if bindir is None:
        raise DevClusterError("PostgreSQL server binaries not found after installing 'postgresql'")
    return bindir


class PostgresServer:
    """One PostgreSQL instance in `directory`; superuser `postgres`, trust auth on 127.0.0.1."""

    def __init__(self, directory: Path, *, die_with_parent: bool = False) -> None:
        """`die_with_parent`: the server dies with this process (test runs; see `processes`)."""
        self.directory = directory.resolve()
        self.die_with_parent = die_with_parent
        self.port = 0
        self.pid = 0
        self._user = "postgres" if os.geteuid() == 0 else None

    @property
    def admin_dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str, driver: str = "postgresql+asyncpg") -> str:
        """SQLAlchemy URL of `database` on this server."""
        return f"{driver}://postgres@127.0.0.1:{self.port}/{database}"

    async def start(self) -> None:
        bindir = ensure_installed()
        data = self.directory / "data"
        shutil.rmtree(data, ignore_errors=True)
        self.directory.mkdir(parents=True, exist_ok=True)
        data.mkdir()
        if self._user:
            entry = pwd.getpwnam(self._user)
            for path in (self.directory, data):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        result = await asyncio.to_thread(
            subprocess.run,
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            ],
            capture_output=True,
            text=True,
            user=self._user,
            check=False,
        )
        if result.returncode != 0:
            raise DevClusterError(f"initdb failed in {data}: {result.stderr.strip()}")
        (self.port,) = free_ports(1)
        await self._launch()

    async def _launch(self) -> None:
        data = self.directory / "data"
        bindir = ensure_installed()
        log = self.directory / "postgres.log"
        log.touch()
        if self._user:
            entry = pwd.getpwnam(self._user)
            os.chown(log, entry.pw_uid, entry.pw_gid)
        self.pid = spawn(
            [
                str(bindir / "postgres"),
                "-D",
                str(data),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"unix_socket_directories={data}",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=300",
            ],
            log,
            user=self._user,
            die_with_parent=self.die_with_parent,
        )

        async def accepting() -> bool:
            if not is_running(self.pid, str(data)):
                raise DevClusterError(f"postgres exited during start-up; see {log}")
            try:
                connection = await asyncpg.connect(self.admin_dsn, timeout=2)
            except (OSError, asyncpg.PostgresError):
                return False
            await connection.close()
            return True

        await poll_until(accepting, timeout=60, what=f"postgres on port {self.port}")

    async def create_database(self, name: str) -> str:
        """Create an empty database and return its SQLAlchemy URL."""
        connection = await asyncpg.connect(self.admin_dsn)
        try:
            await connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            await connection.close()
        return self.url(name)

    async def pause(self) -> None:
        """Stop the server as a database restart looks to its clients (fast shutdown: every
        connection is dropped), keeping the data; `resume` starts it again on the same port."""
        data = str(self.directory / "data")
        if self.pid and is_running(self.pid, data):
            os.kill(self.pid, signal.SIGINT)

            async def gone() -> bool:
                return not is_running(self.pid, data)

            await poll_until(gone, timeout=30, what="postgres to shut down")
        self.pid = 0

    async def resume(self) -> None:
        await self._launch()

    async def stop(self) -> None:
        if self.pid:
            await terminate([self.pid], str(self.directory / "data"))
            self.pid = 0
