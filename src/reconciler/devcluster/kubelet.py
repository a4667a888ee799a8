"""A stand-in for the kubelet of the test bed: it writes the Pod status a kubelet would write.

The test bed runs no kubelet and no scheduler, so Pods stay Pending and no workload ever becomes
ready. This loop plays the kubelet's part and nothing more: every Pending Pod (in the namespaces
it is given) gets `Running` + `Ready` (or `Succeeded`, for Pods that run to completion, i.e.
`restartPolicy` other than `Always`). The real controllers in kube-controller-manager then derive
ReplicaSet, Deployment, StatefulSet and Job status from it, exactly as in a real cluster, so the
reconciler's readiness logic is exercised end to end.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reconciler.errors import KubeApiError
from reconciler.kube.client import KubeClient
from reconciler.util.clock import utcnow
from reconciler.util.polling import wait_event

MERGE_PATCH = "application/merge-patch+json"


def _status_for(pod: dict[str, Any]) -> dict[str, Any]:
    now = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
    spec = pod.get("spec", {})
    completes = spec.get("restartPolicy", "Always") != "Always"
    containers = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": not completes,
            "restartCount": 0,
            "started": not completes,
            "state": (
                {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": now,
                        "finishedAt": now,
                    }
                }
                if completes
                else {"running": {"startedAt": now}}
            ),
        }
        for c in spec.get("containers", [])
    ]
    ready = "False" if completes else "True"
    return {
        "status": {
            "phase": "Succeeded" if completes else "Running",
            "hostIP": "127.0.0.1",
            "podIP": "10.1.0.1",
            "startTime": now,
            "conditions": [
                {"type": t, "status": s, "lastTransitionTime": now}
                for t, s in (
                    ("Initialized", "True"),
                    ("Ready", ready),
                    ("ContainersReady", ready),
                    ("PodScheduled", "True"),
                )
            ],
            "containerStatuses": containers,
        }
    }


async def mark_pending_pods(client: KubeClient, namespace: str | None = None) -> int:
    """Give every Pending Pod the status a kubelet would report; return how many."""
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    listing = await client.request("GET", path, params={"fieldSelector": "status.phase=Pending"})
    count = 0
    for pod in listing.get("items", []):
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            continue
        try:
            await client.request(
                "PATCH",
                f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
                body=_status_for(pod),
                content_type=MERGE_PATCH,
            )
            count += 1
        except KubeApiError as exc:
            if exc.status not in (404, 409):
                raise
    return count


async def run(
    client: KubeClient,
    *,
    namespace: str | None = None,
    interval: float = 0.2,
    stop: asyncio.Event | None = None,
    on_error: Callable[[Exception], None] | None = None,
) -> None:
    """Keep marking Pods until `stop` is set (or forever)."""
    stop = stop or asyncio.Event()
    while not stop.is_set():
        try:
            await mark_pending_pods(client, namespace)
        except Exception as exc:  # keep going: the apiserver may be restarting
            if on_error:
                on_error(exc)
        await wait_event(stop, interval)


def main() -> None:
    """`python -m reconciler.devcluster.kubelet --kubeconfig K`: run until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    args = parser.parse_args()

    async def forever() -> None:
        async with KubeClient.from_kubeconfig(args.kubeconfig) as client:
            await run(client)

    asyncio.run(forever())


if __name__ == "__main__":
    main()
