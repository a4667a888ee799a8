"""A long-running command's stop: graceful on SIGTERM/SIGINT, and bounded (operator mode and the
infrastructure manager)."""

from __future__ import annotations

import asyncio
import os
import threading

from reconciler.observability.logging import get_logger
from reconciler.util.stacks import dump_stacks


def stop_within(stop: asyncio.Event, timeout: float) -> None:
    """Ask for a graceful stop and guarantee an exit: a thread of its own (kopf's) or a handler
    that does not return would otherwise keep the process alive after the stop."""
    if stop.is_set():
        return

    def exit_now() -> None:
        get_logger(component="cli").error("did not stop in time; exiting", timeout=timeout)
        dump_stacks()  # what it was stuck in, for the bug report
        os._exit(1)

    watchdog = threading.Timer(timeout, exit_now)
    watchdog.daemon = True
    watchdog.start()
    stop.set()
