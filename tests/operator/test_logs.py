"""What operator mode logs: one line per state change a person follows (a Kyma, a module, a
Manifest), with the fields to find it by, never the same change twice."""

from __future__ import annotations

from structlog.testing import capture_logs

from tests.operator import modules
from tests.operator.conftest import World


async def test_a_kyma_becoming_ready_is_one_line_per_change_with_its_names(world: World) -> None:
    await world.catalog()
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "k1", world.remote_kubeconfig)
    )
    with capture_logs() as lines:
        await world.control.apply(
            modules.kyma(world.namespace, "k1", "regular", [{"name": "alpha", "managed": True}])
        )
        await world.kyma_state("k1", "Ready")

    changes = [line for line in lines if str(line.get("event", "")).endswith("state changed")]
    kyma = [line for line in changes if line["event"] == "kyma state changed"]
    assert kyma[-1]["state"] == "Ready"
    assert kyma[-1]["kyma"] == "k1"
    assert kyma[-1]["namespace"] == world.namespace
    assert [line["state"] for line in kyma].count("Ready") == 1
    module = [line for line in changes if line["event"] == "module state changed"]
    assert {"module": "alpha", "state": "Ready"}.items() <= module[-1].items()
    manifest = [line for line in changes if line["event"] == "manifest state changed"]
    assert manifest[-1]["state"] == "Ready"
    assert manifest[-1]["kyma"] == "k1"
    assert len(kyma) == len({(line["previous"], line["state"]) for line in kyma})  # no repeats
