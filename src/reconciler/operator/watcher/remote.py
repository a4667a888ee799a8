"""What the operator puts into a remote cluster so its watcher can report: the certificate Secret,
the ValidatingWebhookConfiguration and (with an image) the watcher's Deployment and Service.

Run for every remote Kyma the operator reconciles. The runtime's certificate (CN = runtime id)
is issued when missing, issued by another CA, made for other hosts, or when less than
`renew_before` of its validity is left; the answer says when to look again for that. What was
applied is remembered (a digest per Kyma), so a Kyma whose watcher is in place costs no request.
The webhook watches the remote Kyma and the module custom resources listed in the Kyma's status
(their kinds resolved in the remote cluster once their CRDs exist), spec and metadata only
(status subresources are not in the rules).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json

from reconciler.errors import KubeApiError, ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.kube.discovery import ResourceInfo
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import GROUP, SKIP_RECONCILIATION, SYNC
from reconciler.observability.logging import get_logger
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.targets import TargetClusters, TargetMissing
from reconciler.operator.watcher.ca import CertificateAuthority, KeyPair
from reconciler.operator.watcher.listener import runtime_of
from reconciler.operator.watcher.settings import WatcherSettings
from reconciler.util.clock import utcnow

FIELD_MANAGER = "reconciler-watcher"
SERVICE = "skr-webhook"
PORT = 8443
RETRY = 10.0
"""Seconds until a failed setup is tried again."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class RemoteWatchers:
    def __init__(self, settings: WatcherSettings, ca: CertificateAuthority) -> None:
        self.settings = settings
        self.ca = ca
        self._applied: dict[tuple[str, str], str] = {}
        self._log = get_logger(part="watcher-setup")

    @property
    def webhook_name(self) -> str:
        return f"{self.settings.manager}-webhook"

    def hosts(self) -> list[str]:
        ns = self.settings.remote_namespace
        return [SERVICE, f"{SERVICE}.{ns}", f"{SERVICE}.{ns}.svc", *self.settings.webhook_hosts]

    def _current(self, secret: Body | None, runtime: str) -> KeyPair | None:
        """The Secret's certificate when it still serves: our CA, this runtime, these hosts."""
        data = (secret or {}).get("data") or {}
        if "tls.crt" not in data or "tls.key" not in data:
            return None
        pair = KeyPair(base64.b64decode(data["tls.crt"]), base64.b64decode(data["tls.key"]))
        if not self.ca.signed(pair) or pair.common_name != runtime:
            return None
        if (secret or {}).get("metadata", {}).get("annotations", {}).get(
            f"{GROUP}/watcher-hosts"
        ) != ",".join(self.hosts()):
            return None
        return pair

    def _renew_at(self, pair: KeyPair) -> dt.datetime:
        validity = pair.not_after - pair.not_before
        return pair.not_after - validity * self.settings.renew_before

    def synced(self, namespace: str, name: str) -> bool:
        """Whether the Kyma's watcher objects were put in place (its `SKRWebhook` condition)."""
        return (namespace, name) in self._applied

    async def ensure(self, kyma: Body, cluster: Cluster) -> float:
        """Put the watcher's objects in place; seconds until the certificate is due again."""
        meta = kyma["metadata"]
        key = (str(meta["namespace"]), str(meta["name"]))
        runtime = runtime_of(kyma)
        ns, name = self.settings.remote_namespace, self.settings.remote_secret
        secret = await _get(cluster, f"/api/v1/namespaces/{ns}/secrets/{name}")
        pair = self._current(secret, runtime)
        now = utcnow()
        if pair is None or self._renew_at(pair) <= now:
            validity = dt.timedelta(seconds=self.settings.cert_validity)
            pair = self.ca.issue(runtime, self.hosts(), validity)
            self._applied.pop(key, None)
        objects = [self._namespace(), self._secret(pair)]
        objects.append(await self._webhook(kyma, cluster))
        if self.settings.image:
            objects += self._deployment(key)
        digest = hashlib.sha256(json.dumps(objects, sort_keys=True).encode()).hexdigest()
        if self._applied.get(key) != digest:
            for body in objects:
                await cluster.apply(body, field_manager=FIELD_MANAGER)
            self._applied[key] = digest
        return max((self._renew_at(pair) - now).total_seconds(), 1.0)

    async def reconcile(
        self, control: ControlPlane, targets: TargetClusters, namespace: str, name: str
    ) -> float | None:
        """The watcher of one Kyma's remote cluster, after the Kyma controller's run: in place
        (or removed while the Kyma is deleted). Failures are logged and retried, never the
        Kyma's: a missing watcher only costs the periodic requeue's latency."""
        kyma = await control.get("Kyma", namespace, name)
        if kyma is None:
            self._applied.pop((namespace, name), None)
            return None
        labels = kyma["metadata"].get("labels") or {}
        if labels.get(SYNC) == "false" or labels.get(SKIP_RECONCILIATION) == "true":
            return None
        try:
            cluster = await targets.get(namespace, name, remote=True)
            if kyma["metadata"].get("deletionTimestamp"):
                await self.remove(kyma, cluster)
                return None
            return await self.ensure(kyma, cluster)
        except TargetMissing:
            return None
        except ReconcilerError as exc:
            self._log.warning(
                "watcher setup failed", kyma=name, namespace=namespace, error=str(exc)
            )
            return RETRY

    async def remove(self, kyma: Body, cluster: Cluster) -> None:
        """Take the webhook and the certificate out of the remote cluster (Kyma deleted)."""
        meta = kyma["metadata"]
        self._applied.pop((str(meta["namespace"]), str(meta["name"])), None)
        ns = self.settings.remote_namespace
        gone: list[Body] = [
            _ref(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                "",
                self.webhook_name,
            ),
            _ref("v1", "Secret", ns, self.settings.remote_secret),
        ]
        if self.settings.image:
            gone += [
                _ref(o["apiVersion"], o["kind"], ns, o["metadata"]["name"])
                for o in self._deployment(("", ""))
            ]
        for body in gone:
            await cluster.delete(body)

    def _namespace(self) -> Body:
        return {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.settings.remote_namespace},
        }

    def _secret(self, pair: KeyPair) -> Body:
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.settings.remote_secret,
                "namespace": self.settings.remote_namespace,
                "annotations": {f"{GROUP}/watcher-hosts": ",".join(self.hosts())},
            },
            "type": "kubernetes.io/tls",
            "data": {
                "tls.crt": _b64(pair.cert),
                "tls.key": _b64(pair.key),
                "ca.crt": _b64(self.ca.cert_pem),
            },
        }

    async def _watched(self, kyma: Body, cluster: Cluster) -> list[ResourceInfo]:
        """The module custom resources of the Kyma whose kinds the remote cluster knows."""
        found: dict[str, ResourceInfo] = {}
        for module in (kyma.get("status") or {}).get("modules") or []:
            resource = module.get("resource") or {}
            if not resource.get("apiVersion") or not resource.get("kind"):
                continue
            try:
                info = await cluster.mapper.resolve(resource["apiVersion"], resource["kind"])
            except Exception:  # its CRD is not there yet: the next run adds it
                continue
            found[f"{info.group}/{info.plural}"] = info
        return [found[k] for k in sorted(found)]

    async def _webhook(self, kyma: Body, cluster: Cluster) -> Body:
        manager = self.settings.manager
        path = f"/validate/{manager}"
        client: Body = {"caBundle": _b64(self.ca.cert_pem)}
        if self.settings.webhook_url:
            client["url"] = self.settings.webhook_url.rstrip("/") + path
        else:
            ns = self.settings.remote_namespace
            client["service"] = {"name": SERVICE, "namespace": ns, "path": path, "port": 443}
        rules = [_rule(GROUP, "kymas")]
        rules += [_rule(info.group, info.plural) for info in await self._watched(kyma, cluster)]
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": self.webhook_name},
            "webhooks": [
                {
                    "name": f"{manager}.watcher.operator.kyma-project.io",
                    "clientConfig": client,
                    "rules": rules,
                    "failurePolicy": "Ignore",
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1", "v1beta1"],
                    "timeoutSeconds": 2,
                    "matchPolicy": "Equivalent",
                }
            ],
        }

    def _deployment(self, key: tuple[str, str]) -> list[Body]:
        """ServiceAccount, Role (read the one Secret), RoleBinding, Deployment, Service."""
        ns, labels = self.settings.remote_namespace, {"app": SERVICE}
        secret = self.settings.remote_secret
        args = [
            "operator",
            "watcher",
            "serve",
            "--listener",
            str(self.settings.listener_url),
            "--manager",
            self.settings.manager,
            "--secret",
            f"{ns}/{secret}",
            "--port",
            str(PORT),
            "--owner",
            f"{key[0]}/{key[1]}",
        ]
        meta = {"name": SERVICE, "namespace": ns, "labels": labels}
        return [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": meta,
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["secrets"],
                        "resourceNames": [secret],
                        "verbs": ["get"],
                    }
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": meta,
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": SERVICE,
                },
                "subjects": [{"kind": "ServiceAccount", "name": SERVICE, "namespace": ns}],
            },
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": meta,
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "serviceAccountName": SERVICE,
                            "containers": [
                                {
                                    "name": "watcher",
                                    "image": self.settings.image,
                                    "args": args,
                                    "ports": [{"containerPort": PORT, "protocol": "TCP"}],
                                }
                            ],
                        },
                    },
                },
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": meta,
                "spec": {
                    "selector": labels,
                    "ports": [{"port": 443, "targetPort": PORT, "protocol": "TCP"}],
                },
            },
        ]


def _rule(group: str, plural: str) -> Body:
    return {
        "apiGroups": [group],
        "apiVersions": ["*"],
        "operations": ["CREATE", "UPDATE", "DELETE"],
        "resources": [plural],
        "scope": "*",
    }


def _ref(api_version: str, kind: str, namespace: str, name: str) -> Body:
    metadata = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


async def _get(cluster: Cluster, path: str) -> Body | None:
    try:
        return dict(await cluster.client.request("GET", path))
    except KubeApiError as exc:
        if exc.status == 404:
            return None
        raise
