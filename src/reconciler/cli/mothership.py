"""`reconciler mothership migrate | run`: the control-plane engine without its REST API."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.errors import BAD_INPUT, fail, failures
from reconciler.cli.options import ConfigFile, LogLevel, load_settings, settings_of
from reconciler.mothership.settings import REMOTE_CALLBACK_TOKEN, Settings
from reconciler.observability.logging import configure_logging

if TYPE_CHECKING:  # the engine (SQLAlchemy, Alembic) is imported when a command needs it,
    from reconciler.mothership.engine import Engine  # so `reconciler deploy` starts fast
    from reconciler.settings import ReconcilerSettings

app = typer.Typer(
    help="The control plane (mothership): storage, scheduler, workers.", no_args_is_help=True
)

DatabaseUrl = Annotated[
    str | None,
    typer.Option("--database-url", help="postgresql+asyncpg://... (default: SQLite file)."),
]


def load(config: Path | None, database_url: str | None, **overrides: object) -> ReconcilerSettings:
    """The settings root with the mothership's group checked (the options win over the file)."""
    root = load_settings(config, mothership={"database_url": database_url, **overrides})
    settings_of(lambda: root.mothership)
    return root


def refuse_incomplete_remote(settings: Settings, *, callback_token: str | None) -> None:
    """Exit 2 with one line naming every missing setting of `invoker=remote` (with
    `callback_token` None: this process receives no callbacks, so it needs none)."""
    missing = settings.remote_problems()
    if settings.invoker == "remote" and callback_token == "":
        missing.append(REMOTE_CALLBACK_TOKEN)
    if missing:
        raise fail("invoker=remote needs " + "; ".join(missing), BAD_INPUT)


@app.command("migrate")
def migrate_command(config: ConfigFile = None, database_url: DatabaseUrl = None) -> None:
    """Create or upgrade the database schema (also done on start unless disabled)."""
    settings = load(config, database_url).mothership
    from reconciler.store.db import current_revision, make_engine, migrate

    async def go() -> str | None:
        engine = make_engine(settings.sqlalchemy_url())
        try:
            await migrate(engine)
            return await current_revision(engine)
        finally:
            await engine.dispose()

    typer.echo(f"schema at revision {asyncio.run(go())}")


async def run_until_signalled(engine: Engine) -> None:
    """Run the engine until SIGINT/SIGTERM, then stop it gracefully."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    async with engine:
        await stop.wait()


@app.command()
def run(
    config: ConfigFile = None,
    database_url: DatabaseUrl = None,
    workspace: Annotated[
        Path | None, typer.Option("--workspace", help="Workspace for every Kyma version.")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Operations at once.")] = None,
    migrate_on_start: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="Migrate the schema on start.")
    ] = True,
    log_level: LogLevel = "info",
) -> None:
    """Run scheduler, workers, bookkeeper and cleaner (no REST API) until stopped."""
    from reconciler.mothership.engine import Engine

    configure_logging(json_lines=True, level=log_level)
    settings = load(
        config,
        database_url,
        workspace=workspace,
        workers=workers,
        migrate_on_start=migrate_on_start,
    ).mothership
    refuse_incomplete_remote(settings, callback_token=None)  # callbacks reach `serve`
    with failures():
        asyncio.run(run_until_signalled(Engine(settings)))


@app.command()
def serve(
    config: ConfigFile = None,
    database_url: DatabaseUrl = None,
    workspace: Annotated[
        Path | None, typer.Option("--workspace", help="Workspace for every Kyma version.")
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    cert_file: Annotated[Path | None, typer.Option(help="TLS certificate (PEM).")] = None,
    key_file: Annotated[Path | None, typer.Option(help="TLS private key (PEM).")] = None,
    workers: Annotated[int | None, typer.Option(help="Operations at once.")] = None,
    migrate_on_start: Annotated[
        bool, typer.Option("--migrate/--no-migrate", help="Migrate the schema on start.")
    ] = True,
    log_level: LogLevel = "info",
) -> None:
    """REST API + engine in one process (embedded default: SQLite, in-process reconciler).

    Authentication comes from the API settings (the `api:` section of --config or
    RECONCILER_API_*: token file or OIDC); it can be switched off only explicitly
    (RECONCILER_API_AUTH=none). SIGTERM stops gracefully: running
    operations are handed back and resumed by the next start (or another instance).
    """
    from reconciler.api.server import run_server

    configure_logging(json_lines=True, level=log_level)
    root = load(
        config,
        database_url,
        workspace=workspace,
        workers=workers,
        migrate_on_start=migrate_on_start,
    )
    settings = root.mothership
    if (cert_file is None) != (key_file is None):
        raise fail("--cert-file and --key-file go together", BAD_INPUT)
    api_settings = settings_of(lambda: root.api)
    refuse_incomplete_remote(settings, callback_token=api_settings.callback_token)
    with failures():
        asyncio.run(
            run_server(
                settings,
                host=host,
                port=port,
                cert_file=cert_file,
                key_file=key_file,
                api_settings=api_settings,
            )
        )
