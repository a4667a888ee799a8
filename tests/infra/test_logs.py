"""What the infrastructure manager logs: one line per Runtime state change, naming the Runtime
and its Shoot."""

from __future__ import annotations

from structlog.testing import capture_logs

from tests.infra.conftest import World
from tests.infra.samples import runtime


async def test_a_runtime_becoming_ready_is_logged_once_with_runtime_and_shoot(world: World) -> None:
    with capture_logs() as lines:
        await world.kcp.apply(runtime("rt-log", world.namespace, shoot="shoot-log"))
        await world.state("rt-log", "Ready")

    changes = [line for line in lines if line.get("event") == "runtime state changed"]
    assert changes, lines
    assert [line["state"] for line in changes].count("Ready") == 1
    ready = next(line for line in changes if line["state"] == "Ready")
    assert ready["runtime"] == "rt-log"
    assert ready["shoot"] == "shoot-log"
    assert ready["namespace"] == world.namespace
    assert ready["log_level"] == "info"
