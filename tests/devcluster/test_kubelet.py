"""The kubelet stand-in writes Pod status; the real controllers derive workload status from it."""

from __future__ import annotations

import pytest
from lightkube import AsyncClient
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.batch_v1 import Job

from reconciler.util.polling import poll_until
from tests.devcluster.test_testbed_is_real import deployment


@pytest.mark.usefixtures("kubelet")
async def test_deployment_becomes_available_through_the_real_controllers(
    kube_client: AsyncClient, namespace: str
) -> None:
    await kube_client.apply(deployment(namespace), field_manager="test", force=True)

    async def available() -> bool:
        live = await kube_client.get(Deployment, "web", namespace=namespace)
        return bool(live.status and live.status.availableReplicas == 2)

    await poll_until(available, timeout=60, what="deployment web to have 2 available replicas")


@pytest.mark.usefixtures("kubelet")
async def test_job_completes_through_the_real_job_controller(
    kube_client: AsyncClient, namespace: str
) -> None:
    job = Job.from_dict(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "once", "namespace": namespace},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                }
            },
        }
    )
    await kube_client.create(job)

    async def complete() -> bool:
        live = await kube_client.get(Job, "once", namespace=namespace)
        conditions = live.status.conditions if live.status else None
        return any(c.type == "Complete" and c.status == "True" for c in conditions or [])

    await poll_until(complete, timeout=60, what="job once to complete")
