"""A Gardener simulator on the test bed: the garden cluster is a test apiserver with the Shoot CRD,
a controller advances each Shoot's `status.lastOperation` as Gardener would, and a small reverse
proxy in front of the garden apiserver answers what a CRD cannot: the `adminkubeconfig`
subresource (with a real, short-lived kubeconfig of another test apiserver acting as the shoot)
and Gardener's refusal to delete a Shoot without the deletion-confirmation annotation.

Why a proxy rather than an aggregated APIService: an aggregated API needs the garden apiserver
to reach a TLS server with front-proxy certificates and to own the whole `core.gardener.cloud`
group (the Shoot CRD could not be served next to it). The proxy keeps the CRD, speaks Gardener's
own REST paths, and the infrastructure manager's garden kubeconfig simply points at it: the
client cannot tell. Everything else is forwarded unchanged (no watches: the manager polls).

Gardener's cluster-scoped Seeds are served too (a CRD with a status subresource), with usable
defaults per provider type (`DEFAULT_SEEDS`, see `reset_seeds`); the controller places each
Shoot on one (`schedule`: `spec.seedName`) before operating on it, and leaves a Shoot no Seed fits
unscheduled with Gardener's `Create Pending` "Failed to schedule Shoot: ..." until one does.

Faults are driven by annotations on the Shoot (`FAULT`: `quota` and `rate-limit` hold the
operation in Gardener's retryable `Error` state until the annotation goes, `error` fails it
(`Failed`), `<State>:<CODE>,...` ends it in that state with those codes, see `fault_outcome`;
`DURATION`: seconds an operation takes), by `throttle(n)`: the next n proxied requests are
answered 429, as an overloaded Gardener API does, by `refuse_writes(status, n)`: the next n
Shoot writes are refused with `status`, and by `refuse_seed_reads(status, n)`: the next n reads
of Seeds are. Test tooling and demo only.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import functools
import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
import yaml
from lightkube.config.client_adapter import ConnectionParams
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reconciler.devcluster import shootvalidation
from reconciler.devcluster.pki import Pki, issue_client
from reconciler.devcluster.ports import free_ports
from reconciler.errors import ReconcilerError
from reconciler.kube import crdgen
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.kube.informer import list_and_watch
from reconciler.kube.kubeconfig import load_kubeconfig
from reconciler.model.seeds import (
    BACKUP_BUCKETS_READY,
    GARDENLET_READY,
    NO_MATCHING_PROVIDER,
    SEED_PROVIDER_LABEL,
    SEED_REGION_LABEL,
    seed_provider,
    seed_usable,
)
from reconciler.util.clock import utcnow

GROUP = "core.gardener.cloud"
API = f"/apis/{GROUP}/v1beta1"
FAULT = "simulator.reconciler.kyma-project.io/fault"
DURATION = "simulator.reconciler.kyma-project.io/duration"
DELETION_CONFIRMATION = "confirmation.gardener.cloud/deletion"
FINALIZER = "gardener"
APPLY_PATCH = "application/apply-patch+yaml"
ERROR_CODES = {
    "quota": "ERR_INFRA_QUOTA_EXCEEDED",
    "rate-limit": "ERR_INFRA_RATE_LIMITS_EXCEEDED",
    "error": "ERR_CONFIGURATION_PROBLEM",
}
_SHOOT = re.compile(rf"^{API}/namespaces/([^/]+)/shoots/([^/]+)(/adminkubeconfig)?$")
_SHOOTS = re.compile(rf"^{API}/namespaces/([^/]+)/shoots$")
_SEEDS = re.compile(rf"^{API}/seeds(/[^/]+)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
PROJECT_AND_SHOOT_MAX = 21
"""Gardener's admission: a project's name and a Shoot's name together at most 21 characters
(both end up in the shoot's domain)."""
_PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _gardener_crd(kind: str, scope: str, status: dict[str, Any]) -> dict[str, Any]:
    """A CRD of Gardener's `core.gardener.cloud/v1beta1` with a status subresource; its spec
    kept as written."""
    plural = f"{kind.lower()}s"
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _PRESERVE,
            "status": status,
        },
    }
    names = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    version = {
        "name": "v1beta1",
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": schema},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {"group": GROUP, "names": names, "scope": scope, "versions": [version]},
    }


def shoot_crd() -> dict[str, Any]:
    """Gardener's Shoot, as much as the simulator reads (the rest is kept as written)."""
    status = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            "observedGeneration": {"type": "integer"},
            "lastOperation": _PRESERVE,
            "lastErrors": {"type": "array", "items": _PRESERVE},
        },
    }
    return _gardener_crd("Shoot", "Namespaced", status)


def seed_crd() -> dict[str, Any]:
    """Gardener's Seed: cluster-scoped, with a status subresource; the simulator's scheduler
    and the manager read `spec.provider`, `spec.settings.scheduling.visible`, `spec.backup`,
    `status.lastOperation` and `status.conditions` (the rest is kept as written)."""
    return _gardener_crd("Seed", "Cluster", _PRESERVE)


DEFAULT_SEEDS = (
    ("aws-eu1", "aws", "eu-central-1"),
    ("aws-eu2", "aws", "eu-west-1"),
    ("az-eu1", "azure", "westeurope"),
    ("gcp-eu1", "gcp", "europe-west3"),
    ("os-eu1", "openstack", "eu-de-1"),
    ("ali-eu1", "alicloud", "eu-central-1"),
    ("gdch-eu1", "gdch", "eu-central-1"),
)
"""(name, provider type, region) of the usable Seeds the simulator starts with: one or two per
provider type the manager supports, in the regions the tests and the demo use."""


def seed(
    name: str,
    provider: str,
    region: str,
    *,
    visible: bool = True,
    ready: bool = True,
    backup: bool = False,
    backup_ready: bool = True,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Seed as Gardener shows it (`status` included): labelled with its provider and region,
    as Gardener labels its seeds; `ready`: its gardenlet is ready and it was reconciled."""
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Seed",
        "metadata": {
            "name": name,
            "labels": {SEED_PROVIDER_LABEL: provider, SEED_REGION_LABEL: region, **(labels or {})},
        },
        "spec": {
            "provider": {"type": provider, "region": region},
            "settings": {"scheduling": {"visible": visible}},
        },
        "status": {"conditions": []},
    }
    if backup:
        body["spec"]["backup"] = {"provider": provider, "region": region}
    if ready:
        body["status"] = {
            "lastOperation": {
                "type": "Reconcile",
                "state": "Succeeded",
                "progress": 100,
                "lastUpdateTime": _now(),
                "description": "Seed reconciled",
            },
            "conditions": [
                {"type": GARDENLET_READY, "status": "True", "reason": "GardenletReady"},
                {
                    "type": BACKUP_BUCKETS_READY,
                    "status": "True" if backup_ready else "False",
                    "reason": "BackupBucketsAvailable" if backup_ready else "BackupBucketsError",
                },
            ],
        }
    return body


def _seed_view(body: dict[str, Any]) -> tuple[Any, ...]:
    """What the scheduler and the manager read of a Seed (unchanged: no need to write it)."""
    return (
        seed_provider(body),
        seed_usable(body),
        bool((body.get("spec") or {}).get("backup")),
        body["metadata"].get("labels") or {},
    )


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (`matchLabels`, `matchExpressions`) against `labels`; no
    selector matches everything."""
    if not selector:
        return True
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, values = expression.get("key"), expression.get("values") or []
        present = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }.get(str(expression.get("operator")), False)
        if not present:
            return False
    return True


def schedule(shoot: dict[str, Any], seeds: list[dict[str, Any]]) -> tuple[str | None, str]:
    """Gardener's scheduler in brief: (the Seed for the Shoot, None when none fits; why not).
    The usable seeds, then those matching the Shoot's `seedSelector`, then those of its
    provider type; among them one in the Shoot's region first, else the first by name."""
    spec = shoot.get("spec") or {}
    candidates = sorted(
        (s for s in seeds if seed_usable(s)), key=lambda s: str(s["metadata"]["name"])
    )
    selector = spec.get("seedSelector")
    matching = [
        s for s in candidates if selector_matches(selector, s["metadata"].get("labels") or {})
    ]
    if not matching:
        return None, (
            f"Failed to schedule Shoot: none out of the {len(candidates)} seeds has the matching "
            f"labels required by seed selector of 'Shoot' (selector: '{json.dumps(selector)}')"
        )
    provider = str((spec.get("provider") or {}).get("type") or "")
    fitting = [s for s in matching if seed_provider(s)[0] == provider]
    if not fitting:
        return None, NO_MATCHING_PROVIDER.format(count=len(matching), provider=json.dumps(provider))
    same_region = [s for s in fitting if seed_provider(s)[1] == spec.get("region")]
    return str((same_region or fitting)[0]["metadata"]["name"]), ""


def openidconnect_crd() -> dict[str, Any]:
    """Served in shoots by Gardener's OIDC webhook authenticator; the manager writes these."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "openidconnects.authentication.gardener.cloud"},
        "spec": {
            "group": "authentication.gardener.cloud",
            "names": {
                "kind": "OpenIDConnect",
                "listKind": "OpenIDConnectList",
                "plural": "openidconnects",
                "singular": "openidconnect",
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": _PRESERVE, "status": _PRESERVE},
                        }
                    },
                }
            ],
        },
    }


def _now() -> str:
    return utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(code: int, reason: str, message: str) -> JSONResponse:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return JSONResponse(body, status_code=code)


class GardenerSimulator:
    """Start with `start()` (returns the kubeconfig clients use), stop with `stop()`."""

    def __init__(
        self,
        garden_kubeconfig: Path,
        shoot_kubeconfig: Path,
        workdir: Path,
        *,
        duration: float = 0.2,
        default_domain: str | None = None,
    ) -> None:
        self.garden_kubeconfig = garden_kubeconfig
        self.shoot_kubeconfig = shoot_kubeconfig
        self.workdir = workdir
        self.duration = duration
        self.default_domain = default_domain
        """Gardener's default domain (a landscape's default-domain secret): a Shoot without
        `spec.dns.domain` gets one under it; None: such a Shoot is refused."""
        self.requests: Counter[str] = Counter()
        """Proxied requests by `METHOD resource` (e.g. `POST shoots`, `POST adminkubeconfig`)."""
        self.request_times: list[float] = []
        self.kubeconfigs_issued = 0
        self._throttle = 0
        self._refusals: list[int] = []
        self._seed_refusals: list[int] = []
        self.faults: dict[str, str] = {}
        """Shoot name -> fault: set as the `FAULT` annotation when the Shoot appears (for Shoots
        a client creates, which cannot carry the simulator's annotation itself)."""
        self._operations: dict[tuple[str, str], tuple[Any, asyncio.Task[None]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._server: uvicorn.Server | None = None
        self.garden = KubeClient.from_kubeconfig(garden_kubeconfig)
        self._upstream = httpx2.AsyncClient(
            **ConnectionParams(timeout=httpx2.Timeout(30.0), trust_env=False).httpx_params(
                load_kubeconfig(garden_kubeconfig)
            )
        )

    def throttle(self, requests: int) -> None:
        """Answer the next `requests` proxied requests with 429 Too Many Requests."""
        self._throttle = requests

    def refuse_writes(self, status: int, writes: int = 1) -> None:
        """Answer the next `writes` writes of a Shoot (create, patch, update) with `status`
        (422: Gardener's admission finds the Shoot invalid; 409, 403, 5xx); `writes=0` lifts
        what is left of an earlier refusal."""
        self._refusals = [status] * writes

    def refuse_seed_reads(self, status: int, reads: int = 1) -> None:
        """Answer the next `reads` reads of Seeds (list, get) with `status`; `reads=0` lifts
        what is left of an earlier refusal."""
        self._seed_refusals = [status] * reads

    def _refuse_injected(self, request: Request, match: re.Match[str] | None) -> Response | None:
        if self._seed_refusals and _SEEDS.match(request.url.path) and request.method == "GET":
            status = self._seed_refusals.pop(0)
            return _status(status, "InternalError", f"simulated refusal ({status}) of a Seed read")
        writes = request.method in ("POST", "PUT", "PATCH") and "/shoots" in request.url.path
        if not self._refusals or not writes or (match and match.group(3)):
            return None
        return _refusal(self._refusals.pop(0))

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "garden-kubeconfig"

    async def start(self) -> Path:
        for kubeconfig, crds in (
            (self.garden_kubeconfig, [shoot_crd(), seed_crd()]),
            (self.shoot_kubeconfig, [openidconnect_crd()]),
        ):
            async with await Cluster.connect(kubeconfig) as cluster:
                await crdgen.install_crds(cluster, crds, field_manager="gardener-simulator")
        await self.reset_seeds()
        (port,) = free_ports(1)
        app = Starlette(
            routes=[
                Route(
                    "/{path:path}", self._proxy, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]
                )
            ]
        )
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._tasks = [
            asyncio.create_task(self._server.serve()),
            asyncio.create_task(self._control()),
        ]
        while not self._server.started:
            if self._tasks[0].done():
                await self._tasks[0]
                raise ReconcilerError("the Gardener simulator's proxy did not start")
            await asyncio.sleep(0.02)
        self.workdir.mkdir(parents=True, exist_ok=True)
        config_text = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "garden", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
            "users": [{"name": "garden", "user": {"token": "simulated"}}],
            "contexts": [{"name": "garden", "context": {"cluster": "garden", "user": "garden"}}],
            "current-context": "garden",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config_text, sort_keys=False))
        return self.kubeconfig

    async def put_seed(self, body: dict[str, Any]) -> None:
        """Create or replace a Seed, its status included (see `seed()`)."""
        name = body["metadata"]["name"]
        path = f"{API}/seeds/{name}"
        params = {"fieldManager": "gardener-simulator", "force": "true"}
        spec = {k: v for k, v in body.items() if k != "status"}
        status = {k: v for k, v in body.items() if k not in ("spec", "metadata")}
        status["metadata"] = {"name": name}
        for target, part in ((path, spec), (f"{path}/status", status)):
            await self.garden.request(
                "PATCH", target, params=params, body=part, content_type=APPLY_PATCH
            )

    async def delete_seed(self, name: str) -> None:
        with contextlib.suppress(ReconcilerError):  # gone already
            await self.garden.request("DELETE", f"{API}/seeds/{name}")

    async def reset_seeds(self) -> None:
        """Back to `DEFAULT_SEEDS`, all usable; any other Seed goes (the garden is shared by
        every simulator of a test session, and a test may have altered its Seeds)."""
        listing = await self.garden.request("GET", f"{API}/seeds")
        live = {item["metadata"]["name"]: item for item in listing.get("items") or []}
        defaults = {name: (provider, region) for name, provider, region in DEFAULT_SEEDS}
        for name in live.keys() - defaults.keys():
            await self.delete_seed(name)
        for name, (provider, region) in defaults.items():
            wanted = seed(name, provider, region, backup=name == "aws-eu1")
            found = live.get(name)
            if found is None or _seed_view(found) != _seed_view(wanted):
                await self.put_seed(wanted)

    async def ensure_project(self, project: str) -> str:
        """The project's namespace `garden-<project>` in the garden cluster."""
        name = f"garden-{project}"
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        async with await Cluster.connect(self.garden_kubeconfig) as cluster:
            await cluster.apply(namespace, field_manager="gardener-simulator")
        return name

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        for _, task in self._operations.values():
            task.cancel()
        for task in self._tasks[1:]:
            task.cancel()
        await asyncio.gather(
            *self._tasks, *(t for _, t in self._operations.values()), return_exceptions=True
        )
        await self._upstream.aclose()
        await self.garden.aclose()

    # --- the proxy: Gardener's REST paths --------------------------------------------------

    async def _proxy(self, request: Request) -> Response:
        path = request.url.path
        match = _SHOOT.match(path)
        resource = "shoots" if "/shoots" in path else "seeds" if _SEEDS.match(path) else "other"
        if match and match.group(3):
            resource = "adminkubeconfig"
        self.requests[f"{request.method} {resource}"] += 1
        self.request_times.append(time.monotonic())
        if self._throttle > 0:
            self._throttle -= 1
            return _status(429, "TooManyRequests", "the Gardener API is throttling this client")
        refused = self._refuse_injected(request, match)
        if refused is not None:
            return refused
        refused = await self._refuse_invalid_name(request, match)
        if refused is None:
            refused = await self._refuse_invalid_shoot(request, match)
        if refused is not None:
            return refused
        if match and match.group(3) and request.method == "POST":
            return await self._admin_kubeconfig(match.group(1), match.group(2), request)
        if match and request.method == "DELETE":
            refused = await self._refuse_unconfirmed_delete(match.group(1), match.group(2))
            if refused is not None:
                return refused
        headers = {
            k: v for k, v in request.headers.items() if k.lower() in ("content-type", "accept")
        }
        upstream = await self._upstream.request(
            request.method,
            path,
            params=str(request.query_params),
            content=await self._with_default_domain(request, match),
            headers=headers,
        )
        return Response(
            upstream.content, upstream.status_code, media_type=upstream.headers.get("content-type")
        )

    async def _shoot_write(
        self, request: Request, match: re.Match[str] | None
    ) -> tuple[str, str, dict[str, Any]] | None:
        """(namespace, name, body) of a Shoot written whole (created, replaced, server-side
        applied); None for anything else (merge patches, other resources, bodies the apiserver
        will refuse by itself)."""
        content_type = request.headers.get("content-type", "")
        whole = request.method in ("POST", "PUT") or "apply-patch" in content_type
        if not whole or (match and match.group(3)):
            return None
        collection = _SHOOTS.match(request.url.path)
        if match is None and collection is None:
            return None
        try:
            body = yaml.safe_load(await request.body() or b"{}")
        except yaml.YAMLError:
            return None  # the apiserver names the problem
        if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
            return None
        namespace = (match or collection).group(1)  # type: ignore[union-attr]
        name = match.group(2) if match else str((body.get("metadata") or {}).get("name"))
        return namespace, name, body

    async def _with_default_domain(self, request: Request, match: re.Match[str] | None) -> bytes:
        """The request's body; a Shoot written whole without `spec.dns.domain` gets
        `<shoot>.<project>.<default domain>`, as Gardener's admission gives it (on every write,
        so the domain stays when the next apply again leaves it out)."""
        content = await request.body()
        written = None if self.default_domain is None else await self._shoot_write(request, match)
        if written is None:
            return content
        namespace, name, body = written
        dns = body["spec"].get("dns")
        if isinstance(dns, dict) and dns.get("domain"):
            return content
        domain = f"{name}.{namespace.removeprefix('garden-')}.{self.default_domain}"
        body["spec"]["dns"] = {**(dns if isinstance(dns, dict) else {}), "domain": domain}
        return json.dumps(body).encode()

    async def _refuse_invalid_name(
        self, request: Request, match: re.Match[str] | None
    ) -> Response | None:
        """Gardener's validation of a Shoot's name when a Shoot is written: a DNS label, and
        with its project's name at most 21 characters."""
        if request.method not in ("POST", "PUT", "PATCH") or (match and match.group(3)):
            return None
        if match is not None:
            namespace, name = match.group(1), match.group(2)
        elif (
            collection := _SHOOTS.match(request.url.path)
        ) is not None and request.method == "POST":
            namespace = collection.group(1)
            try:
                name = str(json.loads(await request.body() or b"{}")["metadata"]["name"])
            except (json.JSONDecodeError, KeyError, TypeError):
                return None  # the apiserver names the problem
        else:
            return None
        if not DNS_LABEL.match(name) or len(name) > 63:
            return _status(
                422,
                "Invalid",
                f'Shoot.core.gardener.cloud "{name}" is invalid: metadata.name: Invalid value: '
                "a DNS label must consist of lower case alphanumeric characters or '-'",
            )
        project = namespace.removeprefix("garden-")
        if len(project) + len(name) > PROJECT_AND_SHOOT_MAX:
            return _status(
                403,
                "Forbidden",
                f'shoots.core.gardener.cloud "{name}" is forbidden: the length of the shoot '
                f"name and the project name must not exceed {PROJECT_AND_SHOOT_MAX} characters "
                f"(project: {project}; shoot: {name})",
            )
        return None

    async def _refuse_invalid_shoot(
        self, request: Request, match: re.Match[str] | None
    ) -> Response | None:
        """A Shoot written whole (created, replaced, server-side applied) is checked as
        Gardener's admission and API validation check it (`shootvalidation.py`): the default
        domain (403), the spec and, for an update, against the stored Shoot (422 with causes),
        the ConfigMaps it refers to (403). Merge patches (annotations) are not checked."""
        written = await self._shoot_write(request, match)
        if written is None:
            return None
        namespace, name, body = written
        spec: dict[str, Any] = body["spec"]
        if not (spec.get("dns") or {}).get("domain") and self.default_domain is None:
            return _status(
                403,
                "Forbidden",
                f'shoots.core.gardener.cloud "{name}" is forbidden: shoot domain field '
                ".spec.dns.domain must be set if provider != unmanaged (this garden has no "
                "default domain)",
            )
        causes = shootvalidation.validate(spec)
        stored = await self._shoot(namespace, name)
        if stored is not None and not stored["metadata"].get("deletionTimestamp"):
            causes += shootvalidation.validate_update(spec, stored.get("spec") or {})
        if causes:
            return JSONResponse(shootvalidation.status(name, causes), status_code=422)
        for field, configmap in shootvalidation.structured_references(spec):
            found = await self._upstream.get(
                f"/api/v1/namespaces/{namespace}/configmaps/{configmap}"
            )
            if found.status_code == 404:
                return _status(
                    403,
                    "Forbidden",
                    f'shoots.core.gardener.cloud "{name}" is forbidden: referenced ConfigMap '
                    f"{namespace}/{configmap} ({field}) does not exist",
                )
        return None

    async def _shoot(self, namespace: str, name: str) -> dict[str, Any] | None:
        response = await self._upstream.get(f"{API}/namespaces/{namespace}/shoots/{name}")
        return dict(response.json()) if response.status_code == 200 else None

    async def _refuse_unconfirmed_delete(self, namespace: str, name: str) -> Response | None:
        shoot = await self._shoot(namespace, name)
        annotations = (shoot or {}).get("metadata", {}).get("annotations") or {}
        if shoot is not None and annotations.get(DELETION_CONFIRMATION) != "true":
            return _status(
                403,
                "Forbidden",
                f'shoots.core.gardener.cloud "{name}" is forbidden: '
                f'must have a "{DELETION_CONFIRMATION}" annotation to delete',
            )
        return None

    async def _admin_kubeconfig(self, namespace: str, name: str, request: Request) -> Response:
        try:
            body = json.loads(await request.body() or b"{}")
        except json.JSONDecodeError:
            return _status(400, "BadRequest", "the body is not JSON")
        if body.get("kind") != "AdminKubeconfigRequest":
            return _status(400, "BadRequest", "expected an AdminKubeconfigRequest")
        seconds = int((body.get("spec") or {}).get("expirationSeconds") or 3600)
        if not 600 <= seconds <= 86400:
            return _status(422, "Invalid", "spec.expirationSeconds must be within [600, 86400]")
        shoot = await self._shoot(namespace, name)
        if shoot is None:
            return _status(404, "NotFound", f'shoots.core.gardener.cloud "{name}" not found')
        last = (shoot.get("status") or {}).get("lastOperation") or {}
        if last.get("type") in (None, "Create") and last.get("state") != "Succeeded":
            return _status(400, "BadRequest", f"shoot {name} is not created yet")
        kubeconfig, expires = self._kubeconfig_for(name, dt.timedelta(seconds=seconds))
        self.kubeconfigs_issued += 1
        body["status"] = {
            "kubeconfig": base64.b64encode(kubeconfig.encode()).decode(),
            "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        body.setdefault("metadata", {}).update({"name": name, "namespace": namespace})
        return JSONResponse(body, status_code=201)

    def _kubeconfig_for(self, shoot: str, validity: dt.timedelta) -> tuple[str, dt.datetime]:
        """The shoot apiserver's kubeconfig with a fresh client certificate valid `validity`
        (when its CA key is at hand, as on the test bed; else its own kubeconfig)."""
        config = yaml.safe_load(self.shoot_kubeconfig.read_text())
        pki = Pki(self.shoot_kubeconfig.parent / "pki")
        expires = utcnow() + validity
        if pki.ca_key.is_file():
            cert, key, expires = issue_client(pki, f"admin@{shoot}", "system:masters", validity)
            config["users"] = [
                {
                    "name": config["users"][0]["name"],
                    "user": {
                        "client-certificate-data": base64.b64encode(cert).decode(),
                        "client-key-data": base64.b64encode(key).decode(),
                    },
                }
            ]
        return yaml.safe_dump(config, sort_keys=False), expires

    # --- the controller: Shoot status as Gardener advances it ------------------------------

    async def _control(self) -> None:
        def observe(kind: str, shoot: dict[str, Any]) -> None:
            if kind != "DELETED":
                self._observe(shoot)

        await list_and_watch(self.garden, f"{API}/shoots", observe, retry_delay=0.5)

    def _observe(self, shoot: dict[str, Any]) -> None:
        meta = shoot["metadata"]
        key = (meta["namespace"], meta["name"])
        annotations = meta.get("annotations") or {}
        status = shoot.get("status") or {}
        fault = self.faults.pop(meta["name"], None)
        if fault is not None and not meta.get("deletionTimestamp"):
            patch = {"metadata": {"annotations": {FAULT: fault}}}
            self._tasks.append(asyncio.create_task(self._patch(shoot, patch, status=False)))
            return  # seen again with the annotation
        if meta.get("deletionTimestamp"):
            identity: Any = "delete"
        else:
            identity = (meta.get("generation"), annotations.get(FAULT))
            done = status.get("observedGeneration") == meta.get("generation") and (
                (status.get("lastOperation") or {}).get("state") in ("Succeeded", "Failed")
            )
            if done and key not in self._operations and not annotations.get(FAULT):
                return
        current = self._operations.get(key)
        if current is not None and current[0] == identity:
            return
        if current is not None:
            current[1].cancel()
        if identity == "delete" and FINALIZER not in (meta.get("finalizers") or []):
            self._operations.pop(key, None)
            return
        operate = self._delete(shoot) if identity == "delete" else self._reconcile(shoot)
        task = asyncio.create_task(operate)
        self._operations[key] = (identity, task)
        task.add_done_callback(functools.partial(self._done, key, identity))

    def _done(self, key: tuple[str, str], identity: Any, task: asyncio.Task[None]) -> None:
        current = self._operations.get(key)
        if current is not None and current[1] is task and identity != "delete":
            return  # keep: the finished operation is what this Shoot currently is
        if current is not None and current[1] is task:
            self._operations.pop(key, None)

    def _path(self, shoot: dict[str, Any]) -> str:
        meta = shoot["metadata"]
        return f"{API}/namespaces/{meta['namespace']}/shoots/{meta['name']}"

    async def _patch(self, shoot: dict[str, Any], patch: dict[str, Any], status: bool) -> None:
        path = self._path(shoot) + ("/status" if status else "")
        with contextlib.suppress(ReconcilerError):  # gone meanwhile
            await self.garden.request(
                "PATCH", path, body=patch, content_type="application/merge-patch+json"
            )

    async def _operation(
        self,
        shoot: dict[str, Any],
        kind: str,
        state: str,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        status: dict[str, Any] = {
            "observedGeneration": shoot["metadata"].get("generation"),
            "lastOperation": {
                "type": kind,
                "state": state,
                "lastUpdateTime": _now(),
                "progress": 100 if state == "Succeeded" else 50,
                "description": f"{kind} {state.lower()}",
            },
            "lastErrors": errors,
        }
        await self._patch(shoot, {"status": status}, status=True)

    def _duration(self, shoot: dict[str, Any]) -> float:
        annotations = shoot["metadata"].get("annotations") or {}
        with contextlib.suppress(ValueError):
            return float(annotations.get(DURATION, self.duration))
        return self.duration

    async def _schedule(self, shoot: dict[str, Any]) -> None:
        """Place a Shoot without `spec.seedName` on a Seed, as Gardener's scheduler binds it
        (a new generation, operated on next); while no Seed fits, its `lastOperation` says
        why (`Create Pending`, as Gardener's scheduler writes it) and it is tried again."""
        written = ""
        while True:
            listing = await self.garden.request("GET", f"{API}/seeds")
            chosen, why = schedule(shoot, list(listing.get("items") or []))
            if chosen is not None:
                await self._patch(shoot, {"spec": {"seedName": chosen}}, status=False)
                return
            if why != written:
                last = {
                    "type": "Create",
                    "state": "Pending",
                    "progress": 0,
                    "lastUpdateTime": _now(),
                    "description": why,
                }
                await self._patch(shoot, {"status": {"lastOperation": last}}, status=True)
                written = why
            await asyncio.sleep(max(self.duration, 0.2))

    async def _reconcile(self, shoot: dict[str, Any]) -> None:
        meta = shoot["metadata"]
        if not (shoot.get("spec") or {}).get("seedName"):
            await self._schedule(shoot)
            return  # the binding is a new generation: seen again, and operated on then
        if FINALIZER not in (meta.get("finalizers") or []):
            finalizers = [*(meta.get("finalizers") or []), FINALIZER]
            await self._patch(shoot, {"metadata": {"finalizers": finalizers}}, status=False)
        last = (shoot.get("status") or {}).get("lastOperation") or {}
        created = last.get("type") not in (None, "Create") or last.get("state") == "Succeeded"
        kind = "Reconcile" if created else "Create"
        await self._operation(shoot, kind, "Processing")
        await asyncio.sleep(self._duration(shoot))
        outcome = fault_outcome((meta.get("annotations") or {}).get(FAULT))
        if outcome is not None:
            state, codes = outcome
            error = {"description": f"simulated {state}", "codes": codes, "lastUpdateTime": _now()}
            await self._operation(shoot, kind, state, [error])
            return
        await self._operation(shoot, kind, "Succeeded")

    async def _delete(self, shoot: dict[str, Any]) -> None:
        await self._operation(shoot, "Delete", "Processing")
        await asyncio.sleep(self._duration(shoot))
        finalizers = [f for f in shoot["metadata"].get("finalizers") or [] if f != FINALIZER]
        await self._patch(shoot, {"metadata": {"finalizers": finalizers or None}}, status=False)


# --- fault injection (tests and demo) ------------------------------------------------------------


def fault_outcome(fault: str | None) -> tuple[str, list[str]] | None:
    """How an operation of a Shoot with the `FAULT` annotation ends: (its `lastOperation` state,
    its `lastErrors` codes), None when it succeeds. `quota` and `rate-limit` end in `Error`,
    `error` in `Failed` with `ERR_CONFIGURATION_PROBLEM`; `<State>:<CODE>[,<CODE>...]` ends in
    that state with those codes (e.g. `Failed:ERR_INFRA_UNAUTHORIZED`), as Gardener reports
    each of its error classes."""
    if not fault:
        return None
    if fault in ERROR_CODES:
        return ("Failed" if fault == "error" else "Error"), [ERROR_CODES[fault]]
    state, _, codes = fault.partition(":")
    if state not in ("Failed", "Error") or not codes:
        return None
    return state, [code.strip() for code in codes.split(",") if code.strip()]


def _refusal(status: int) -> Response:
    reasons = {403: "Forbidden", 409: "Conflict", 422: "Invalid"}
    return _status(
        status,
        reasons.get(status, "InternalError"),
        f"simulated refusal ({status}) of a Shoot write, as Gardener's admission answers",
    )
