"""What the Manifest and SyncResource controllers share: one `handle` for an object that puts
things on its Kyma's cluster.

Read the object (gone: forget it); skip it while it carries the skip label; validate its spec
(invalid: Error, no requeue beyond the status' own); then delete (deletion timestamp set) or add
the finalizer and reconcile. A failure is logged, a lost connection evicts the Kyma's cluster,
and the controller reports it (`_failed`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Generic, TypeVar

from pydantic import ValidationError

from reconciler.errors import ReconcilerError
from reconciler.model.kube_object import Body, KubeObject
from reconciler.model.lifecycle import SKIP_RECONCILIATION, State
from reconciler.model.resource import ResourceModel
from reconciler.observability.logging import get_logger
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.targets import TargetClusters, connection_lost
from reconciler.operator.controllers.status import invalid
from reconciler.util.backoff import Backoff

SpecT = TypeVar("SpecT", bound=ResourceModel)


class RemoteObjectController(ABC, Generic[SpecT]):
    kind: ClassVar[str]
    finalizer: ClassVar[str]
    spec_model: ClassVar[type[ResourceModel]]
    failures: ClassVar[tuple[type[Exception], ...]] = (ReconcilerError,)
    """What a reconcile or delete may raise that ends in a reported failure."""

    control: ControlPlane
    targets: TargetClusters
    backoff: Backoff

    async def handle(self, namespace: str, name: str) -> float | None:
        body = await self.control.get(self.kind, namespace, name)
        if body is None:
            self.backoff.forget((namespace, name))
            self._forget((namespace, name))
            return None
        obj = KubeObject(body)
        if obj.labels.get(SKIP_RECONCILIATION) == "true":
            return None
        try:
            spec: SpecT = self.spec_model.model_validate(body.get("spec") or {})  # type: ignore[assignment]
        except ValidationError as exc:
            return await self._report(body, State.ERROR, "invalid " + invalid(exc, "spec"))
        deleting = bool(obj.metadata.get("deletionTimestamp"))
        try:
            if deleting:
                return await self._delete(body, spec)
            await self.control.set_finalizer(body, self.finalizer, True)
            return await self._reconcile(body, spec)
        except self.failures as exc:
            kyma = self._kyma(body, spec)
            get_logger(**{self.kind.lower(): name}, namespace=namespace, kyma=kyma or None).warning(
                f"{self.kind.lower()} failed", error=str(exc)
            )
            if connection_lost(exc):
                await self.targets.evict(namespace, kyma)
            return await self._failed(body, State.DELETING if deleting else State.ERROR, exc)

    def _forget(self, key: tuple[str, str]) -> None:
        """The object is gone: drop what is kept about it (besides its backoff)."""

    @abstractmethod
    def _kyma(self, body: Body, spec: SpecT) -> str:
        """The name of the Kyma whose cluster the object targets."""

    @abstractmethod
    async def _reconcile(self, body: Body, spec: SpecT) -> float | None: ...

    @abstractmethod
    async def _delete(self, body: Body, spec: SpecT) -> float | None: ...

    @abstractmethod
    async def _report(self, body: Body, state: State, message: str) -> float | None: ...

    @abstractmethod
    async def _failed(self, body: Body, state: State, exc: Exception) -> float | None:
        """Report a failure (`state`: Error, or Deleting while deleting); the requeue delay."""
