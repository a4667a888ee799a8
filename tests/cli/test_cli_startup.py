"""Start-up cost: a command imports the stacks it uses, not those of every other command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from reconciler.cli.main import LAZY_COMMANDS, app

# The service and operator stacks: each costs hundreds of ms of CPU to import.
SERVICE_STACKS = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "alembic", "kopf", "aiohttp")

PRINT_MODULES = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('MODULES ' + ' '.join(sys.modules) + '\\n'))\n"
    "from reconciler.cli.main import app\n"
    "app()\n"
)


def modules_after(*args: str, exit_code: int = 0) -> set[str]:
    """Modules imported by `reconciler <args>` in a fresh interpreter, with their top packages."""
    done = subprocess.run(
        [sys.executable, "-c", PRINT_MODULES, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=120,
    )
    assert done.returncode == exit_code, done.stderr
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("MODULES "))
    names = set(line.split()[1:])
    return names | {name.split(".")[0] for name in names}


def test_version_imports_neither_the_cli_groups_nor_any_client_stack() -> None:
    loaded = modules_after("--version")
    assert not loaded & {*SERVICE_STACKS, "lightkube", "httpx", "pydantic", "rich", "yaml"}
    assert "reconciler.cli.components" not in loaded


@pytest.mark.parametrize("args", [("deploy", "--help"), ("template", "--help")])
def test_component_set_commands_do_not_import_the_service_or_operator_stacks(
    args: tuple[str, ...],
) -> None:
    assert not modules_after(*args) & set(SERVICE_STACKS)


def test_every_lazy_command_loads_under_its_name_with_the_help_line_listed() -> None:
    group = typer.main.get_command(app)
    for name, lazy in LAZY_COMMANDS.items():
        command = group.commands[name]  # type: ignore[attr-defined]
        assert command.name == name
        first_line = (command.short_help or command.help or "").strip().splitlines()[0]
        assert lazy.help == first_line, name


@pytest.mark.parametrize(("args", "exit_code"), [(("--help",), 0), ((), 2)])
def test_the_top_level_help_lists_every_command_without_importing_any(
    args: tuple[str, ...], exit_code: int
) -> None:
    """Each group's imports cost `reconciler --help` ~1 s of CPU when it loaded them all (a
    bare `reconciler` prints the same help, exit code 2)."""
    loaded = modules_after(*args, exit_code=exit_code)
    assert not loaded & {m for m, _, _ in LAZY_COMMANDS.values()}
    assert not loaded & {*SERVICE_STACKS, "lightkube", "httpx"}


def test_the_top_level_help_names_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PRINT_MODULES, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "200"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for name, lazy in LAZY_COMMANDS.items():
        assert any(name in line and lazy.help in line for line in done.stdout.splitlines()), name


KYMA_LIKE = Path(__file__).resolve().parents[2] / "examples" / "kyma-like"
RUN_MAIN = (
    "import atexit, sys, tempfile, pathlib\n"
    "marker = pathlib.Path(sys.argv.pop(1))\n"
    "kept = tempfile.TemporaryDirectory()\n"  # removed by an exit handler, as at a normal exit
    "marker.write_text(kept.name)\n"
    "atexit.register(lambda: sys.stdout.write('exit handler ran\\n'))\n"
    "from reconciler.cli.main import main\n"
    "sys.argv[0] = 'reconciler'\n"
    "main()\n"
    "print('never reached')\n"
)


@pytest.mark.parametrize(
    ("args", "status", "stderr"),
    [
        (["version"], 0, ""),
        (
            ["deploy", "--kubeconfig", "/nonexistent", "--workspace", str(KYMA_LIKE)],
            1,
            "kubeconfig file /nonexistent",
        ),
        (["no-such-command"], 2, "No such command"),
    ],
    ids=["ok", "error", "usage"],
)
def test_the_command_ends_the_process_with_its_status_after_the_exit_handlers(
    tmp_path: Path, args: list[str], status: int, stderr: str
) -> None:
    marker = tmp_path / "kept"
    done = subprocess.run(
        [sys.executable, "-c", RUN_MAIN, str(marker), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=120,
    )
    assert done.returncode == status, done.stderr
    assert stderr in done.stderr
    # output flushed, exit handlers run (the temporary directory is gone), nothing after main()
    assert done.stdout.endswith("exit handler ran\n"), done.stdout
    assert "never reached" not in done.stdout
    assert not Path(marker.read_text()).exists()
