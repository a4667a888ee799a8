"""No-op invokers for engine tests (`RECONCILER_INVOKER=import:tests.helpers.invokers:NAME`),
and `reconciler mothership run` processes that load them.

The invokers never touch a cluster: each invocation appends one line to the file named by
`RECONCILER_TEST_COUNT_FILE` (`O_APPEND`, one `write` per line, so lines of several processes
never interleave), which lets a test count how often every operation ran and in which process.
`slow` keeps one component busy for `RECONCILER_TEST_SLOW_SECONDS`, long enough to kill its
engine mid-operation. `EngineProcess` runs the real CLI in its own process group, so a test can
kill it (gracefully or with SIGKILL) and never leaves it behind; `fresh_database`, `control_engine`
and `cluster_spec` build the rest of such a test's world.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import sqlalchemy as sa

from reconciler.devcluster import PostgresServer
from reconciler.devcluster.processes import tied_to_parent
from reconciler.model.cluster import ClusterSpec, ClusterState
from reconciler.model.operation import Operation
from reconciler.model.status import ClusterStatus, OperationState
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from reconciler.store.tables import cluster_heads, operations
from reconciler.util.polling import poll_until

REPO_ROOT = Path(__file__).resolve().parents[2]
COUNT_FILE_ENV = "RECONCILER_TEST_COUNT_FILE"
SLOW_SECONDS_ENV = "RECONCILER_TEST_SLOW_SECONDS"
SLOW_COMPONENT_ENV = "RECONCILER_TEST_SLOW_COMPONENT"
START = "start"
END = "end"


@dataclass(frozen=True)
class Invocation:
    """One line of the count file."""

    scheduling_id: str
    correlation_id: str
    pid: int
    marker: str = ""
    """`start`/`end` for the slow component; empty for an instant invocation."""


def record(op: Operation, marker: str = "") -> None:
    """Append `<scheduling_id> <correlation_id> <pid>[ <marker>]` to the count file."""
    fields = [op.scheduling_id, op.correlation_id, str(os.getpid())]
    if marker:
        fields.append(marker)
    line = (" ".join(fields) + "\n").encode()
    fd = os.open(os.environ[COUNT_FILE_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_invocations(path: Path) -> list[Invocation]:
    """Every line of a count file, in the order they were written."""
    if not path.exists():
        return []
    invocations = []
    for line in path.read_text().splitlines():
        scheduling_id, correlation_id, pid, *marker = line.split()
        invocations.append(Invocation(scheduling_id, correlation_id, int(pid), *marker))
    return invocations


def counting(_planner: Planner) -> Invoker:
    """Records every invocation and succeeds at once."""

    async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
        record(op)
        return InvokeResult(True)

    return CallableInvoker(invoke)


def slow(_planner: Planner) -> Invoker:
    """Like `counting`, but the component named by `RECONCILER_TEST_SLOW_COMPONENT` takes
    `RECONCILER_TEST_SLOW_SECONDS` (default 30) and is recorded when it starts and ends."""
    component = os.environ.get(SLOW_COMPONENT_ENV, "")
    seconds = float(os.environ.get(SLOW_SECONDS_ENV, "30"))

    async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
        if op.component != component:
            record(op)
            return InvokeResult(True)
        record(op, START)
        await asyncio.sleep(seconds)
        record(op, END)
        return InvokeResult(True)

    return CallableInvoker(invoke)


class EngineProcess:
    """One `reconciler mothership run` process (own session/process group, output to a file)."""

    def __init__(self, process: subprocess.Popen[bytes], log: Path) -> None:
        self.process = process
        self.log = log

    @classmethod
    def start(
        cls, directory: Path, *, database_url: str, settings: Mapping[str, object]
    ) -> EngineProcess:
        """Start the engine; `settings` become `RECONCILER_<NAME>` variables (or, for names
        starting with `RECONCILER_`, are passed as they are)."""
        directory.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        env["RECONCILER_DATA_DIR"] = str(directory)
        for name, value in settings.items():
            key = name if name.startswith("RECONCILER_") else f"RECONCILER_{name.upper()}"
            env[key] = str(value)
        log = directory / "engine.log"
        with log.open("ab") as output:
            process = subprocess.Popen(
                tied_to_parent(  # gone with a killed test run
                    [
                        str(Path(sys.executable).parent / "reconciler"),
                        "mothership",
                        "run",
                        "--database-url",
                        database_url,
                    ]
                ),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=directory,
                start_new_session=True,
            )
        return cls(process, log)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def worker(self) -> str:
        """The worker identity the engine records on the operations it claims."""
        return f"{socket.gethostname()}-{self.pid}"

    def output(self, last: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-last:] if self.log.exists() else ""

    async def started(self, timeout: float = 30) -> None:
        """Wait until the engine logged its start (its loops are running)."""

        async def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"engine {self.pid} exited with {self.process.returncode}:\n{self.output()}"
                )
            return "mothership engine started" in self.output(last=1_000_000)

        await poll_until(ready, timeout=timeout, what=lambda: f"engine {self.pid} to start")

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    async def exited(self, timeout: float = 30) -> int:
        async def gone() -> int | None:
            return self.process.poll()

        code = await poll_until(gone, timeout=timeout, what=f"engine {self.pid} to exit")
        return code

    def stop(self) -> None:
        """Kill the whole process group and reap the process (for `finally` blocks)."""
        self.kill(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


@contextlib.asynccontextmanager
async def fresh_database(server: PostgresServer, prefix: str) -> AsyncIterator[str]:
    """A new, empty database on `server` (its SQLAlchemy URL), dropped on the way out with
    whatever connections killed engines left behind."""
    name = f"{prefix}_{os.urandom(5).hex()}"
    url = await server.create_database(name)
    try:
        yield url
    finally:
        connection = await asyncpg.connect(server.admin_dsn)
        try:
            await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await connection.close()


def new_key_file(directory: Path) -> Path:
    """A fresh encryption key (PostgreSQL engines never generate one: they must share it)."""
    directory.mkdir(parents=True, exist_ok=True)
    key_file = directory / "encryption.key"
    key_file.write_bytes(base64.b64encode(os.urandom(32)))
    return key_file


@contextlib.asynccontextmanager
async def control_engine(database_url: str, directory: Path) -> AsyncIterator[Engine]:
    """A loop-less engine for the test process: migrates the schema, creates the shared key
    file (`settings.key_file()`), and serves the Python API; it never runs an operation."""
    settings = Settings(
        database_url=database_url, encryption_key_file=new_key_file(directory), data_dir=directory
    )
    async with Engine(settings, run_loops=False) as engine:
        yield engine


def cluster_spec(runtime_id: str, components: Sequence[str]) -> ClusterSpec:
    """A cluster for a no-op invoker: nothing is rendered, so any kubeconfig and URL will do."""
    return ClusterSpec.model_validate(
        {
            "runtimeID": runtime_id,
            "kubeconfig": "apiVersion: v1\nkind: Config\n",
            "kymaConfig": {
                "version": "2.0.0",
                "profile": "evaluation",
                "components": [{"component": c, "URL": f"file:///charts/{c}"} for c in components],
            },
        }
    )


async def count_ready(engine: Engine) -> int:
    """How many clusters are `ready`; fails at once when an operation failed (nothing can fail
    with a no-op invoker, so waiting for the deadline would only hide the reason)."""
    assert engine.db is not None
    async with engine.db.connect() as conn:
        failed = (
            await conn.execute(
                sa.select(operations.c.component, operations.c.reason)
                .where(operations.c.state.in_([OperationState.FAILED, OperationState.ERROR]))
                .limit(1)
            )
        ).first()
        if failed is not None:
            raise AssertionError(f"operation of {failed.component} failed: {failed.reason}")
        query = sa.select(sa.func.count()).where(cluster_heads.c.status == ClusterStatus.READY)
        return int((await conn.execute(query)).scalar_one())
