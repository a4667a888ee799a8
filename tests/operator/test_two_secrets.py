"""Two Secrets naming one Kyma: an error the Kyma reports, never a silent choice (a label on a
second Secret must not redirect a Kyma's modules to another cluster)."""

from __future__ import annotations

from tests.operator import modules
from tests.operator.conftest import World


async def test_a_second_kubeconfig_secret_for_a_kyma_is_reported_not_chosen(world: World) -> None:
    await world.catalog()
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "k2", world.remote_kubeconfig)
    )
    intruder = modules.kubeconfig_secret(world.namespace, "k2", world.remote_kubeconfig)
    intruder["metadata"]["name"] = "a-kubeconfig-sorting-first"
    await world.control.apply(intruder)
    await world.control.apply(
        modules.kyma(world.namespace, "k2", "regular", [{"name": "alpha", "managed": True}])
    )

    failed = await world.kyma_state("k2", "Error")
    message = failed["status"]["lastOperation"]["operation"]
    assert "2 Secrets are labelled operator.kyma-project.io/kyma-name=k2" in message
    assert "a-kubeconfig-sorting-first, kubeconfig-k2" in message
    assert await world.remote_configmap("alpha-a") is None  # nothing installed anywhere

    await world.control.delete(intruder)
    await world.kyma_state("k2", "Ready")
