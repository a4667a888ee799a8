"""Test-bed processes tied to their parent: a test run killed with SIGKILL leaves none behind."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from reconciler.devcluster.processes import is_running, terminate
from reconciler.util.polling import poll_until

STARTER = """
import sys, time
from pathlib import Path
from reconciler.devcluster.processes import spawn
marker = sys.argv[1]
cmd = [sys.executable, "-c", "import time; time.sleep(300)", marker]
print(spawn(cmd, Path(marker) / "child.log", die_with_parent=sys.argv[2] == "tied"), flush=True)
time.sleep(300)
"""


async def _spawn_from_a_process_then_kill_it(marker: Path, mode: str) -> int:
    """Start a child through `spawn` in a separate process, SIGKILL that process; the pid."""
    starter = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        STARTER,
        str(marker),
        mode,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert starter.stdout is not None
    pid = int(await asyncio.wait_for(starter.stdout.readline(), 30))

    async def exec_done() -> bool:  # past setpriv: the death signal is set
        cmdline = await asyncio.to_thread(Path(f"/proc/{pid}/cmdline").read_bytes)
        return b"setpriv" not in cmdline and b"time.sleep(300)" in cmdline

    await poll_until(exec_done, timeout=30, what="the child to run its command")
    starter.send_signal(signal.SIGKILL)
    await starter.wait()
    return pid


async def test_a_tied_child_dies_when_the_process_that_started_it_is_killed(
    tmp_path: Path,
) -> None:
    marker = str(tmp_path)
    pid = await _spawn_from_a_process_then_kill_it(tmp_path, "tied")
    try:
        await poll_until(
            lambda: asyncio.sleep(0, not is_running(pid, marker)),
            timeout=10,
            what="the orphaned child to be gone",
        )
    finally:
        await terminate([pid], marker)


async def test_an_untied_child_outlives_its_starter_as_dev_cluster_start_needs(
    tmp_path: Path,
) -> None:
    marker = str(tmp_path)
    pid = await _spawn_from_a_process_then_kill_it(tmp_path, "free")
    try:
        await asyncio.sleep(0.5)  # the tied case is gone well within this
        assert is_running(pid, marker)
    finally:
        await terminate([pid], marker)
    assert not is_running(pid, marker)


@pytest.fixture(autouse=True)
def _needs_setpriv() -> None:
    if not Path("/usr/bin/setpriv").exists():
        pytest.skip("util-linux setpriv is not installed")
