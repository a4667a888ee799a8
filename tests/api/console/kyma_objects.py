"""Operator-mode objects for the console's Kyma view: the operator's CRDs, one Kyma with two
modules (one Ready, one Error) in its status, and their Manifests, as the operator would leave
them (no operator runs: the statuses are written through the status subresource)."""

from __future__ import annotations

from pathlib import Path

from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import API_VERSION, MODULE_NAME
from reconciler.operator.clusters.install import install_crds

MODULES = {"serverless": ("Ready", "1.4.0", ""), "eventing": ("Error", "2.1.0", "nats: 0/1 ready")}


async def create_kyma_objects(kubeconfig: Path, namespace: str) -> None:
    async with await Cluster.connect(kubeconfig) as cluster:
        await install_crds(cluster)
        client = cluster.client
        base = f"/apis/{API_VERSION}/namespaces/{namespace}"
        kyma = {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {"name": "kyma-console", "namespace": namespace},
            "spec": {"channel": "regular", "modules": [{"name": name} for name in MODULES]},
        }
        created = await client.request("POST", f"{base}/kymas", body=kyma)
        created["status"] = {
            "state": "Error",
            "activeChannel": "regular",
            "modules": [
                {"name": name, "state": state, "version": version, "channel": "regular"}
                | ({"message": message} if message else {})
                for name, (state, version, message) in MODULES.items()
            ],
        }
        await client.request("PUT", f"{base}/kymas/kyma-console/status", body=created)
        for name, (state, version, message) in MODULES.items():
            manifest = {
                "apiVersion": API_VERSION,
                "kind": "Manifest",
                "metadata": {
                    "name": f"kyma-console-{name}",
                    "namespace": namespace,
                    "labels": {MODULE_NAME: name},
                },
                "spec": {
                    "remote": True,
                    "version": version,
                    "install": {"name": name, "source": {"type": "helm-chart", "url": "x"}},
                },
            }
            made = await client.request("POST", f"{base}/manifests", body=manifest)
            made["status"] = {"state": state} | (
                {"conditions": [_condition(message)]} if message else {}
            )
            await client.request("PUT", f"{base}/manifests/kyma-console-{name}/status", body=made)


def _condition(message: str) -> dict[str, str]:
    return {
        "type": "Installation",
        "status": "False",
        "reason": "Failed",
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


async def create_rollout(kubeconfig: Path, namespace: str) -> None:
    """A ModuleRollout whose release of eventing 2.1.0 halted in its first wave."""
    async with await Cluster.connect(kubeconfig) as cluster:
        client = cluster.client
        base = f"/apis/{API_VERSION}/namespaces/{namespace}"
        rollout = {
            "apiVersion": API_VERSION,
            "kind": "ModuleRollout",
            "metadata": {"name": "eventing", "namespace": namespace},
            "spec": {
                "module": "eventing",
                "waves": [{"name": "canary", "percent": 10}, {"name": "rest"}],
            },
        }
        made = await client.request("POST", f"{base}/modulerollouts", body=rollout)
        stamp = "2026-01-01T00:00:00.000000Z"
        made["status"] = {
            "releases": [
                {
                    "module": "eventing",
                    "channel": "regular",
                    "version": "2.1.0",
                    "previous": "2.0.0",
                    "phase": "Halted",
                    "wave": 0,
                    "waveStarted": stamp,
                    "since": stamp,
                    "message": "wave canary: 1 of 1 Kymas not Ready on 2.1.0 within 60s",
                    "waves": [
                        {"name": "canary", "size": 1, "failing": 1},
                        {"name": "rest", "size": 9, "pending": 9},
                    ],
                    "failing": [
                        {
                            "kyma": "kyma-console",
                            "manifest": "kyma-console-eventing",
                            "message": "Error: nats: 0/1 ready",
                        }
                    ],
                }
            ]
        }
        await client.request("PUT", f"{base}/modulerollouts/eventing/status", body=made)
