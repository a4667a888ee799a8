"""Start and stop the test bed's server processes, and only ever the ones we started.

Each process gets its own session (so a Ctrl-C in the terminal does not hit it) and a log file.
A test bed's processes can be tied to the life of the process that started them
(`die_with_parent`): a test run killed with SIGKILL then leaves no apiserver, etcd or PostgreSQL
behind. `dev-cluster start` does not tie them: its cluster outlives the command by design.
Stopping verifies through /proc that a recorded pid still runs a command line that mentions the
test bed's directory, so a reused pid never gets a signal meant for a server that is long gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from reconciler.errors import WaitTimeout
from reconciler.util.polling import poll_until


def tied_to_parent(cmd: Sequence[str]) -> list[str]:
    """`cmd` made to get SIGKILL when the process (strictly: the thread) starting it dies.

    util-linux's `setpriv --pdeathsig` sets PR_SET_PDEATHSIG and execs `cmd` (same pid, and the
    setting survives the exec; it is set after `Popen(user=...)` changed the credentials, which
    would clear it). Not `preexec_fn`: Python code between fork and exec can deadlock in a
    process with threads. The forking thread must live as long as the child should: the event
    loop's thread, never an executor's. Without `setpriv`, `cmd` unchanged."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return list(cmd)
    return [setpriv, "--pdeathsig", "KILL", "--", *cmd]


def spawn(
    cmd: Sequence[str], log_file: Path, *, user: str | None = None, die_with_parent: bool = False
) -> int:
    """Start `cmd` detached in its own session, output appended to `log_file`; return its pid.

    `die_with_parent`: the process is killed when this one dies (see `tied_to_parent`)."""
    with log_file.open("ab") as log:
        process = subprocess.Popen(
            tied_to_parent(cmd) if die_with_parent else list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            user=user,
        )
    return process.pid


def _reap(pid: int) -> None:
    """Collect the exit status of our own child so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def is_running(pid: int, marker: str) -> bool:
    """True when `pid` is alive (not a zombie) and its command line contains `marker`.

    A process in the middle of `execve` briefly shows an empty command line; that counts as ours.
    """
    _reap(pid)
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    if state in ("Z", "X"):
        return False
    return not cmdline or marker.encode() in cmdline


async def terminate(pids: Sequence[int], marker: str, *, timeout: float = 15.0) -> None:
    """SIGTERM the given processes, wait for them to exit, SIGKILL what is left."""
    ours = [pid for pid in pids if is_running(pid, marker)]
    for pid in ours:
        os.kill(pid, signal.SIGTERM)

    async def all_gone() -> bool:
        return not any(is_running(pid, marker) for pid in ours)

    try:
        await poll_until(all_gone, timeout=timeout, what="test-bed processes to exit")
    except WaitTimeout:
        for pid in ours:
            if is_running(pid, marker):
                os.kill(pid, signal.SIGKILL)
        await poll_until(all_gone, timeout=5.0, what="killed test-bed processes to exit")
