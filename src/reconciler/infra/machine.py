"""One Runtime through the state machine: read fresh, walk the states (`states.py` decides, this
module acts), write the status once at the end, and say when to look again.

Level-triggered and resumable: every pass starts from what exists (the Runtime, the Shoot, the
kubeconfig Secret), so a manager killed at any point continues where the world is. The Shoot is
only ever created by server-side apply under its fixed name, so a second Shoot cannot appear.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from reconciler.errors import ReconcilerError
from reconciler.infra.acl import acl_addresses
from reconciler.infra.converter import ConversionError
from reconciler.infra.converter.common import STRUCTURED_AUTH, structured_auth_configmap
from reconciler.infra.converter.config import ConverterConfig, load_converter_config
from reconciler.infra.gardener import Gardener, GardenerError, check_shoot_name
from reconciler.infra.kubeconfigs import Kubeconfigs
from reconciler.infra.metrics import InfraMetrics
from reconciler.infra.settings import InfraSettings
from reconciler.infra.shoot import refusal_reason, shoot_for
from reconciler.infra.skr import (
    apply_provisioning_info,
    configure_administrators,
    configure_oidc,
    ensure_kyma_system,
    oidc_enabled,
)
from reconciler.infra.states import (
    ROTATION_MARGIN,
    Progress,
    Reason,
    Step,
    foreign_shoot,
    initialise,
    rotation_due,
    runtime_id,
    runtime_id_mismatch,
    set_condition,
    shoot_progress,
)
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.model.infrastructure import (
    FINALIZER,
    ConditionType,
    LastError,
    LastOperation,
    RuntimeSpec,
    State,
)
from reconciler.model.kube_object import Body
from reconciler.model.seeds import no_matching_seeds, seed_regions
from reconciler.observability.logging import get_logger, log_state_change
from reconciler.util.backoff import Backoff
from reconciler.util.clock import Clock, utcnow


@dataclass
class Pass:
    """What one pass over a Runtime has observed and decided so far."""

    runtime: Body
    spec: RuntimeSpec | None = None
    shoot: Body | None = None
    kubeconfig: str | None = None
    shoot_client: KubeClient | None = None
    """Opened for the shoot's configuration, closed at the end of the pass (a connection per
    Runtime kept open would hold thousands of sockets)."""
    rotated: bool = False
    rotate_at: dt.datetime | None = None
    conditions: list[Body] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.runtime["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.runtime["metadata"]["namespace"])

    @property
    def generation(self) -> int | None:
        value = self.runtime["metadata"].get("generation")
        return int(value) if value is not None else None


@dataclass(frozen=True)
class Stop:
    """The pass ends: report `state` (with `message` on the running condition), look again
    after `requeue` seconds (None: only when the Runtime changes)."""

    state: State
    requeue: float | None


class NameLocks:
    """One lock per Shoot name while a pass uses it: two Runtimes naming one Shoot never read
    and write it at the same time (the second would otherwise create it in the same moment as
    the first, and neither would see the other's ownership)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, name: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(name, (asyncio.Lock(), 0))
        self._locks[name] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[name]
            if users <= 1:
                del self._locks[name]
            else:
                self._locks[name] = (lock, users - 1)


def shoot_operation(shoot: Body | None) -> Body:
    """Gardener's `lastOperation` and `lastErrors` of the Shoot, as KIM copies them into the
    Runtime's status (`shootLastOperation`, `shootLastErrors`); what the CRD would refuse is
    left out."""
    gardener_status = (shoot or {}).get("status") or {}
    result: Body = {}
    with contextlib.suppress(ValidationError):
        operation = gardener_status.get("lastOperation")
        if operation:
            result["shootLastOperation"] = LastOperation.model_validate(operation).dump()
    with contextlib.suppress(ValidationError):
        errors = gardener_status.get("lastErrors")
        if errors:
            result["shootLastErrors"] = [LastError.model_validate(e).dump() for e in errors]
    return result


def _invalid(exc: ValidationError) -> str:
    """A spec's validation errors as one readable line (where, what)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}" for error in exc.errors()[:5]
    )


class RuntimeMachine:
    def __init__(
        self,
        kcp: Cluster,
        gardener: Gardener,
        settings: InfraSettings,
        metrics: InfraMetrics,
        clock: Clock = utcnow,
        converter: ConverterConfig | None = None,
    ) -> None:
        self.converter = converter or load_converter_config(settings.converter_config)
        self.kcp = kcp
        self.gardener = gardener
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        self.backoff = Backoff(settings.error_interval, settings.error_max_interval)
        self.kubeconfigs = Kubeconfigs(kcp)
        self._shoot_names = NameLocks()
        self._steps: dict[Step, Callable[[Pass], Awaitable[Step | Stop]]] = {
            Step.TAKE_SNAPSHOT: self._take_snapshot,
            Step.INITIALISE: self._initialise,
            Step.CREATE_SHOOT: self._apply_shoot,
            Step.PATCH_SHOOT: self._apply_shoot,
            Step.WAIT_FOR_SHOOT: self._wait_for_shoot,
            Step.KUBECONFIG: self._kubeconfig,
            Step.KYMA_SYSTEM: self._kyma_system,
            Step.CONFIGURE_SKR: self._configure_skr,
            Step.ADMINISTRATORS: self._administrators,
            Step.READY: self._ready,
            Step.DELETE_KUBECONFIG: self._delete_kubeconfig,
            Step.DELETE_SHOOT: self._delete_shoot,
            Step.REMOVE_FINALIZER: self._remove_finalizer,
        }

    async def handle(self, namespace: str, name: str) -> float | None:
        runtime = await self.kubeconfigs.get_runtime(namespace, name)
        if runtime is None:
            self.backoff.forget((namespace, name))
            self.metrics.forget(namespace, name)
            return None
        run = Pass(runtime, conditions=list((runtime.get("status") or {}).get("conditions") or []))
        log = get_logger(runtime=name, namespace=namespace)
        step: Step = Step.TAKE_SNAPSHOT
        shoot = str(((runtime.get("spec") or {}).get("shoot") or {}).get("name") or "")
        try:
            async with self._shoot_names.hold(shoot):
                return await self._walk(run, step, log)
        finally:
            if run.shoot_client is not None:
                await run.shoot_client.aclose()

    async def _walk(self, run: Pass, step: Step, log: Any) -> float | None:
        namespace, name = run.namespace, run.name
        try:
            while True:
                result = await self._steps[step](run)
                if isinstance(result, Stop):
                    if result.state is not State.FAILED and result.requeue is not None:
                        self.backoff.forget((namespace, name))
                    return result.requeue
                log.debug("transition", step=str(step), next=str(result))
                step = result
        except GardenerError as exc:
            # KIM fails a Runtime only where it decides so (a Shoot refused on update, an
            # operation failed for good): any other Gardener error is looked at again, and a
            # deletion never ends as Failed (that would stop the machine with our finalizer left)
            return await self._retry(run, step, str(exc), Reason.GARDENER_ERR)
        except (ReconcilerError, ValidationError) as exc:
            log.warning("runtime pass failed", step=str(step), error=str(exc))
            return await self._retry(run, step, f"{step}: {exc}", Reason.KUBERNETES_ERR)

    async def _retry(self, run: Pass, step: Step, message: str, reason: str) -> float:
        deleting = bool(run.runtime["metadata"].get("deletionTimestamp"))
        state = State.TERMINATING if deleting else State.PENDING
        kind = ConditionType.DEPROVISIONED if deleting else ConditionType.PROVISIONED
        await self._report(run, state, kind, reason, message, ok=False)
        return self.backoff.next((run.namespace, run.name))

    async def _report(
        self,
        run: Pass,
        state: State,
        kind: ConditionType,
        reason: str,
        message: str,
        *,
        ok: bool | None = False,
        completed: bool | None = None,
    ) -> None:
        """Set one condition (`ok` None: Unknown, a step in progress) and the state."""
        run.conditions = set_condition(
            run.conditions, kind, ok, reason, message, run.generation, self.clock()
        )
        status: Body = {"state": str(state), "conditions": run.conditions}
        if run.shoot is not None and foreign_shoot(run.shoot, run.name) is None:
            status.update(shoot_operation(run.shoot))  # never another Runtime's Shoot's
        previous = run.runtime.get("status") or {}
        done = completed if completed is not None else previous.get("provisioningCompleted")
        if done is not None:
            status["provisioningCompleted"] = done
        await self.kubeconfigs.set_status(run.runtime, status)
        if state is State.FAILED:
            self.metrics.unexpected_stops.inc()  # KIM counts each stop in Failed
        shoot_spec = (run.runtime.get("spec") or {}).get("shoot") or {}
        shoot = str(shoot_spec.get("name") or "")
        self.metrics.set_state(
            run.namespace,
            run.name,
            str(state),
            runtime_id=runtime_id(run.runtime),
            shoot=shoot,
            provider=str((shoot_spec.get("provider") or {}).get("type") or ""),
            message=message,
        )
        log = get_logger(runtime=run.name, namespace=run.namespace, shoot=shoot or None)
        log_state_change(log, "runtime", previous.get("state"), str(state), message)

    # --- the states -------------------------------------------------------------------------

    async def _take_snapshot(self, run: Pass) -> Step | Stop:
        if not run.runtime["metadata"].get("deletionTimestamp"):
            try:
                run.spec = RuntimeSpec.model_validate(run.runtime.get("spec") or {})
            except ValidationError as exc:
                # the CRD checks most of it; what it cannot (administrators that are system
                # identities, a CRD installed before its patterns) stops here, touching nothing
                message = f"invalid Runtime: {_invalid(exc)}"
                kind = ConditionType.PROVISIONED
                await self._report(run, State.FAILED, kind, Reason.CONVERSION_ERR, message)
                return Stop(State.FAILED, None)
            mismatch = runtime_id_mismatch(run.runtime)
            if mismatch is not None:
                kind = ConditionType.PROVISIONED
                await self._report(run, State.FAILED, kind, Reason.CONVERSION_ERR, mismatch)
                return Stop(State.FAILED, None)
            run.shoot = await self.gardener.get_shoot(run.spec.shoot.name)
            foreign = foreign_shoot(run.shoot, run.name, runtime_id(run.runtime))
            if foreign is not None:
                kind = ConditionType.PROVISIONED
                await self._report(run, State.FAILED, kind, "ShootOwnedByAnotherRuntime", foreign)
                return Stop(State.FAILED, None)
        return Step.INITIALISE

    async def _initialise(self, run: Pass) -> Step:
        if not run.runtime["metadata"].get("deletionTimestamp"):
            await self.kubeconfigs.set_finalizer(run.runtime, FINALIZER, True)
        return initialise(run.runtime, run.shoot)

    async def _apply_shoot(self, run: Pass) -> Step | Stop:
        """Convert the Runtime (a refusal fails it for good: nothing is sent until it changes),
        then apply the structured-authentication ConfigMap and create or patch the Shoot. As
        KIM: whatever Gardener answers a creation with is retried; a patch refused with a
        conflict (or a 403, which Gardener answers now and then to authorised requests) is
        retried, refused otherwise it fails the Runtime. Ours besides: a patch meeting a
        throttled, failing or unreachable Gardener (429, 5xx) is retried too, as client-go
        retries those before KIM sees them."""
        assert run.spec is not None
        creating = run.shoot is None
        before = None if run.shoot is None else run.shoot["metadata"].get("generation")
        kind = ConditionType.PROVISIONED
        interval = self.settings.gardener_requeue_interval
        if creating and run.spec.shoot.enforce_seed_location:
            refused = await self._seed_missing(run)
            if refused is not None:
                return refused
        namespace = self.gardener.namespace
        try:
            acl = await acl_addresses(
                self.kcp,
                run.spec,
                run.namespace,
                self.settings.api_server_acl_enabled,
                self.converter,
            )
            shoot = shoot_for(run.runtime, namespace, self.converter, run.shoot, acl)
        except ConversionError as exc:
            await self._report(run, State.FAILED, kind, Reason(refusal_reason(exc)), str(exc))
            return Stop(State.FAILED, None)
        try:
            await self.gardener.apply_configmap(
                structured_auth_configmap(run.spec, namespace, self.converter)
            )
            run.shoot = await self.gardener.apply_shoot(shoot)
        except GardenerError as exc:
            if creating:
                message = f"Gardener API create error: {exc}"
                await self._report(run, State.PENDING, kind, Reason.GARDENER_ERR, message)
                return Stop(State.PENDING, interval)
            if exc.status in (403, 409):
                what = "conflict" if exc.status == 409 else "forbidden"
                message = f"Shoot is pending for update after {what} error: {exc}"
                await self._report(run, State.PENDING, kind, Reason.PROCESSING, message, ok=None)
                return Stop(State.PENDING, interval)
            if exc.retryable:
                message = f"Shoot is pending for update, Gardener unavailable: {exc}"
                await self._report(run, State.PENDING, kind, Reason.PROCESSING, message, ok=None)
                return Stop(State.PENDING, interval)
            message = f"Gardener API shoot patch error: {exc}"
            await self._report(run, State.FAILED, kind, Reason.PROCESSING_ERR, message)
            return Stop(State.FAILED, None)
        if creating:
            await self._report(
                run, State.PENDING, kind, Reason.PENDING, "Shoot is pending", ok=None
            )
            return Stop(State.PENDING, interval)
        if run.shoot["metadata"].get("generation") == before:
            return Step.WAIT_FOR_SHOOT  # nothing Gardener has to do: go on at once
        message = "Shoot is pending for update after patch"
        await self._report(run, State.PENDING, kind, Reason.PROCESSING, message, ok=None)
        return Stop(State.PENDING, interval)

    async def _seed_missing(self, run: Pass) -> Stop | None:
        """KIM's check before creating a Shoot bound to its region (`enforceSeedLocation`): a
        usable Seed of the provider must exist there, else the Runtime fails for good
        (`SeedNotFound`, naming the regions that have one) and nothing is sent; Seeds that
        cannot be listed are asked for again after the requeue interval."""
        assert run.spec is not None
        region, kind = run.spec.shoot.region, ConditionType.PROVISIONED
        try:
            seeds = await self.gardener.list_seeds()
        except GardenerError as exc:
            message = f"Failed to verify whether seed is available for the region {region}: {exc}"
            await self._report(run, State.PENDING, kind, Reason.GARDENER_ERR, message)
            return Stop(State.PENDING, self.settings.gardener_requeue_interval)
        regions = seed_regions(seeds, run.spec.shoot.provider.type)
        if region in regions:
            return None
        message = (
            f"Cannot find available seed for the region {region}. The following regions have "
            f"seeds ready: {', '.join(regions) or 'none'}."
        )
        await self._report(run, State.FAILED, kind, Reason.SEED_NOT_FOUND, message)
        return Stop(State.FAILED, None)

    async def _wait_for_shoot(self, run: Pass) -> Step | Stop:
        """Gardener's word on the current generation, read and reported as KIM reports it:
        Unknown while in progress (and while failed with errors KIM retries), Failed only for
        errors it does not retry."""
        assert run.shoot is not None
        seen = shoot_progress(run.shoot)
        kind = ConditionType.PROVISIONED
        interval = (
            self.settings.create_poll_interval
            if seen.creating
            else self.settings.update_poll_interval
        )
        codes = f" ({seen.codes})" if seen.codes else ""
        if seen.progress is Progress.SUCCEEDED or self._settled(run, seen.progress):
            reason, message = (
                (Reason.SHOOT_CREATION_COMPLETED, "Shoot creation completed")
                if seen.creating
                else (Reason.CONFIGURATION_COMPLETED, "Runtime processing completed successfully")
            )
            if seen.progress is Progress.SUCCEEDED:
                run.conditions = set_condition(
                    run.conditions, kind, True, reason, message, run.generation, self.clock()
                )
            return Step.KUBECONFIG
        if seen.progress is Progress.FAILED:
            if seen.creating:
                message = f"Shoot creation failed{codes}"
                await self._report(run, State.FAILED, kind, Reason.CREATION_ERR, message)
            else:
                message = seen.codes or "Shoot reconcile failed"
                await self._report(run, State.FAILED, kind, Reason.PROCESSING_ERR, message)
            return Stop(State.FAILED, None)
        if seen.progress is Progress.PROCESSING and seen.creating and no_matching_seeds(run.shoot):
            # Gardener cannot place the Shoot: KIM gives up rather than wait for a seed
            message = "Shoot creation failed, no matching seeds"
            await self._report(run, State.FAILED, kind, Reason.CREATION_ERR, message)
            return Stop(State.FAILED, None)
        if seen.progress is Progress.RETRYING:
            what = "provisioning" if seen.creating else "reconcile"
            message = f"Retryable gardener errors during cluster {what}{codes}"
            await self._report(run, State.PENDING, kind, Reason.PENDING, message, ok=None)
            return Stop(State.PENDING, interval)
        reason, message = (
            (Reason.PENDING, "Shoot creation in progress")
            if seen.creating
            else (Reason.PROCESSING, "Shoot update is in progress")
        )
        await self._report(run, State.PENDING, kind, reason, f"{message}{codes}", ok=None)
        return Stop(State.PENDING, interval)

    @staticmethod
    def _settled(run: Pass, progress: Progress) -> bool:
        """A Ready Runtime whose Shoot Gardener later failed to reconcile by itself (its
        maintenance, say) and no longer works on: KIM leaves such a Runtime as it is."""
        state = (run.runtime.get("status") or {}).get("state")
        return state == State.READY and progress in (Progress.FAILED, Progress.RETRYING)

    async def _kubeconfig(self, run: Pass) -> Step:
        assert run.spec is not None
        secret, cluster = await self.kubeconfigs.read(run.runtime)
        now = self.clock()
        due = rotation_due(secret, now, self.settings.rotation_ratio, run.runtime, cluster)
        unreadable = not ((secret or {}).get("data") or {}).get("config")
        if unreadable or (due is not None and due <= now):
            assert run.shoot is not None
            seconds = int(self.settings.kubeconfig_validity)
            kubeconfig, expires = await self.gardener.admin_kubeconfig(run.spec.shoot.name, seconds)
            await self.kubeconfigs.write(
                run.runtime, run.shoot, kubeconfig, now, expires, rotated=secret is not None
            )
            run.rotated = True
            share = self.settings.rotation_ratio * ROTATION_MARGIN
            run.rotate_at = now + (expires - now) * share
            identity = runtime_id(run.runtime)
            self.metrics.set_expiry(
                run.namespace,
                run.name,
                expires,
                runtime_id=identity,
                shoot=run.spec.shoot.name,
                rotation=seconds * self.settings.rotation_ratio,
                validity=float(seconds),
            )
            reason = "KubeconfigSecretRotated" if secret is not None else "KubeconfigSecretCreated"
            self.metrics.set_cluster_state(
                run.namespace, run.name, identity, run.spec.shoot.name, "Ready", reason
            )
        else:
            assert secret is not None
            run.rotate_at = due
            kubeconfig = base64.b64decode(secret["data"]["config"]).decode("utf-8")
        run.kubeconfig = kubeconfig
        run.conditions = set_condition(
            run.conditions,
            ConditionType.KUBECONFIG_READY,
            True,
            Reason.GARDENER_CR_READY,
            "Gardener Cluster CR is ready.",
            run.generation,
            now,
        )
        return Step.KYMA_SYSTEM

    def _configured(self, run: Pass, kind: ConditionType) -> bool:
        """Done for this generation already, with the same kubeconfig: nothing to redo."""
        if run.rotated or (run.runtime.get("status") or {}).get("state") != State.READY:
            return False
        return any(
            c.get("type") == kind
            and c.get("status") == "True"
            and c.get("observedGeneration") == run.generation
            for c in run.conditions
        )

    @staticmethod
    def _shoot(run: Pass) -> KubeClient:
        if run.shoot_client is None:
            assert run.kubeconfig is not None
            run.shoot_client = KubeClient.from_kubeconfig(run.kubeconfig, text=True, pool=2)
        return run.shoot_client

    async def _kyma_system(self, run: Pass) -> Step:
        if not self._configured(run, ConditionType.KYMA_SYSTEM_CREATED):
            await ensure_kyma_system(self._shoot(run))
            run.conditions = set_condition(
                run.conditions,
                ConditionType.KYMA_SYSTEM_CREATED,
                True,
                Reason.KYMA_SYSTEM_NS_READY,
                "Creation of kyma-system Namespace",
                run.generation,
                self.clock(),
            )
        return Step.CONFIGURE_SKR

    async def _configure_skr(self, run: Pass) -> Step:
        """The `kyma-provisioning-info` ConfigMap, then the OpenIDConnect resources where the
        shoot's OIDC extension runs."""
        assert run.spec is not None
        assert run.shoot is not None
        if not self._configured(run, ConditionType.OIDC_AND_CONFIGMAPS):
            client = self._shoot(run)
            seed = await self._seed_of(run.shoot)
            await apply_provisioning_info(client, run.runtime, run.shoot, seed)
            if oidc_enabled(run.shoot):
                shared = self.converter.cluster.default_shared_ias_tenant
                await configure_oidc(client, run.spec, shared)
                message = "OIDC and kyma-provisioning-info configuration completed"
            else:
                message = "OIDC extension disabled"
            run.conditions = set_condition(
                run.conditions,
                ConditionType.OIDC_AND_CONFIGMAPS,
                True,
                Reason.OIDC_AND_CMS_CONFIGURED,
                message,
                run.generation,
                self.clock(),
            )
        return Step.ADMINISTRATORS

    async def _seed_of(self, shoot: Body) -> Body | None:
        """The Seed Gardener placed the Shoot on (`spec.seedName`; None while it has none). A
        Seed it names that cannot be read is an error, retried, as KIM's."""
        name = (shoot.get("spec") or {}).get("seedName")
        if not name:
            return None
        seed = await self.gardener.get_seed(str(name))
        if seed is None:
            raise GardenerError(f"Seed {name} of the Shoot does not exist", retryable=True)
        return seed

    async def _administrators(self, run: Pass) -> Step:
        assert run.spec is not None
        assert run.kubeconfig is not None
        if not self._configured(run, ConditionType.CONFIGURED):
            await configure_administrators(self._shoot(run), run.spec.security.administrators)
        return Step.READY

    async def _ready(self, run: Pass) -> Stop:
        """As KIM ends: Ready with `Configured` (the administrators) set last."""
        await self._report(
            run,
            State.READY,
            ConditionType.CONFIGURED,
            Reason.ADMINISTRATORS_CONFIGURED,
            "Cluster admin configuration completed",
            ok=True,
            completed=True,
        )
        wait = self.settings.ready_interval
        if run.rotate_at is not None:
            wait = min(wait, max((run.rotate_at - self.clock()).total_seconds(), 0.0))
        return Stop(State.READY, wait)

    async def _delete_kubeconfig(self, run: Pass) -> Step:
        await self.kubeconfigs.delete(run.runtime)
        self.metrics.forget_expiry(run.namespace, run.name)
        return Step.DELETE_SHOOT

    async def _delete_shoot(self, run: Pass) -> Step | Stop:
        name = str(((run.runtime.get("spec") or {}).get("shoot") or {}).get("name") or "")
        try:
            check_shoot_name(name)
        except GardenerError:
            return Step.REMOVE_FINALIZER  # no Shoot can have such a name: none of ours exists
        shoot = await self.gardener.get_shoot(name)
        if shoot is None:
            # the Shoot is gone: so goes the structured authentication it named, as with KIM
            await self.gardener.delete_configmap(STRUCTURED_AUTH.format(name))
            return Step.REMOVE_FINALIZER
        if foreign_shoot(shoot, run.name, runtime_id(run.runtime)) is not None:
            return Step.REMOVE_FINALIZER  # another Runtime's Shoot is never ours to delete
        if not shoot["metadata"].get("deletionTimestamp"):
            await self.gardener.delete_shoot(name)
        message = f"Runtime shoot deletion started (Shoot {name})"
        kind, reason = ConditionType.DEPROVISIONED, Reason.GARDENER_SHOOT_DELETED
        await self._report(run, State.TERMINATING, kind, reason, message, ok=None)
        return Stop(State.TERMINATING, self.settings.delete_poll_interval)

    async def _remove_finalizer(self, run: Pass) -> Stop:
        if FINALIZER in (run.runtime["metadata"].get("finalizers") or []):
            # whatever the state was (Failed included: no Shoot was ever created), the Runtime
            # reports its deletion; other finalizers may keep it a while longer
            await self._report(
                run,
                State.TERMINATING,
                ConditionType.DEPROVISIONED,
                Reason.GARDENER_SHOOT_DELETED,
                "Shoot deleted",
                ok=True,
            )
        await self.kubeconfigs.set_finalizer(run.runtime, FINALIZER, False)
        self.backoff.forget((run.namespace, run.name))
        self.metrics.forget(run.namespace, run.name)
        return Stop(State.TERMINATING, None)
