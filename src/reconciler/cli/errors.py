"""The one place where a command's failure becomes a message on stderr and an exit code.

Exit codes, for every command: 0 done; 1 failed while doing it (a component failed, a cluster,
apiserver or service unreachable or refusing); 2 bad input (options, files, values, settings):
nothing was attempted; 130 interrupted (Ctrl-C). Commands read their input inside
`failures(BAD_INPUT)` and act inside `failures()`; anything else they refuse goes through `fail`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from reconciler.errors import ReconcilerError

FAILED = 1
BAD_INPUT = 2
INTERRUPTED = 130
"""Ctrl-C, as shells report a command ended by SIGINT."""
err = Console(stderr=True)


def fail(message: str, code: int = FAILED) -> typer.Exit:
    """Print `error: message` on stderr; the returned exit is for the caller to raise.
    Messages quote user data (paths, names, apiserver text): never read as rich markup."""
    err.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@contextmanager
def failures(code: int = FAILED) -> Iterator[None]:
    """Turn a `ReconcilerError` raised inside into its message and exit `code`."""
    try:
        yield
    except ReconcilerError as exc:
        raise fail(str(exc), code) from None
