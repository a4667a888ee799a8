"""With an image set, the operator deploys the watcher itself into the remote cluster (account,
a Role that reads only the certificate Secret, Deployment, Service; the webhook pointing at the
Service), all accepted by a real apiserver; deleting the Kyma takes it all out again."""

from __future__ import annotations

import datetime as dt
import uuid

from reconciler.kube.cluster import Cluster
from reconciler.operator.watcher.ca import CertificateAuthority, new_ca
from reconciler.operator.watcher.remote import RemoteWatchers
from reconciler.operator.watcher.settings import WatcherSettings
from tests.conftest import KubeTarget


def _ref(api_version: str, kind: str, name: str, namespace: str = "") -> dict[str, object]:
    meta = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


async def test_the_watcher_is_deployed_with_an_image_and_removed_with_the_kyma(
    kube_cluster: KubeTarget, namespace: str
) -> None:
    manager = f"test-{uuid.uuid4().hex[:6]}"  # its own webhook name on the shared test bed
    settings = WatcherSettings(
        listener_url="https://listener.example.com:8443",
        manager=manager,
        remote_namespace=namespace,
        image="example.com/reconciler:1",
    )
    watchers = RemoteWatchers(settings, CertificateAuthority(new_ca()))
    kyma = {"metadata": {"namespace": "kcp-system", "name": "kyma-r", "labels": {}}}
    async with await Cluster.connect(kube_cluster.kubeconfig) as remote:
        again = await watchers.ensure(kyma, remote)
        assert dt.timedelta(seconds=again) > dt.timedelta(days=59)  # a third of 90 days left
        deployment = await remote.get(_ref("apps/v1", "Deployment", "skr-webhook", namespace))
        assert deployment is not None
        (container,) = deployment.raw["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "example.com/reconciler:1"
        assert container["args"][:3] == ["operator", "watcher", "serve"]
        assert "kcp-system/kyma-r" in container["args"]
        role = await remote.get(
            _ref("rbac.authorization.k8s.io/v1", "Role", "skr-webhook", namespace)
        )
        assert role is not None
        assert role.raw["rules"][0]["resourceNames"] == ["skr-webhook-tls"]
        assert role.raw["rules"][0]["verbs"] == ["get"]
        webhook_ref = _ref(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            f"{manager}-webhook",
        )
        webhook = await remote.get(webhook_ref)
        assert webhook is not None
        client = webhook.raw["webhooks"][0]["clientConfig"]
        assert client["service"]["name"] == "skr-webhook"
        assert client["service"]["namespace"] == namespace
        try:
            await watchers.remove(kyma, remote)
            for ref in (
                webhook_ref,
                _ref("apps/v1", "Deployment", "skr-webhook", namespace),
                _ref("v1", "Service", "skr-webhook", namespace),
                _ref("v1", "Secret", "skr-webhook-tls", namespace),
            ):
                live = await remote.get(ref)
                assert live is None or live.raw["metadata"].get("deletionTimestamp"), ref
        finally:
            await remote.delete(webhook_ref)
