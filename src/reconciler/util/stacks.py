"""Where everything is stuck: every thread's stack and every asyncio task's, for a stop that did
not happen (the CLI's stop watchdog, the operator's bounded join of kopf's thread, test fixtures).

A hang found only as "the suite timed out" cannot be fixed; one that leaves the stacks in the log
usually can (that is how a lost cancellation in the operator's work queue was found).
"""

from __future__ import annotations

import asyncio
import faulthandler
import sys
from typing import TextIO


def dump_stacks(file: TextIO | None = None) -> None:
    """Write all threads' stacks (faulthandler) and, inside a running loop, its tasks' stacks."""
    out = file or sys.stderr
    out.flush()
    faulthandler.dump_traceback(file=out, all_threads=True)
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:  # no running loop in this thread
        return
    for task in tasks:
        print(f"--- task {task.get_name()}", file=out)
        task.print_stack(file=out)
    out.flush()
