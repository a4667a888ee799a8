"""Component sets: which components make up a version, in which order, from which chart.

The file format is the original `components.yaml` (`defaultNamespace`, `prerequisites[]`,
`components[]` of `{name, namespace?, url?, version?}`) plus our additions: `dependsOn[]` and
`configuration` per component. Prerequisites are installed one after another, in file order,
after the `CRDs` pseudo-component; the remaining components run concurrently unless `dependsOn`
orders them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from reconciler.errors import ReconcilerError

CRDS_COMPONENT = "CRDs"
DNS_LABEL_MAX = 63


class ComponentSetError(ReconcilerError):
    """A component set is invalid (unknown dependency, duplicate, cycle, bad YAML)."""


class UnknownComponentError(ComponentSetError):
    """A component was requested that the component set does not contain."""


class ComponentSpec(BaseModel):
    """One component of a set."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=DNS_LABEL_MAX)
    namespace: str | None = None
    url: str | None = Field(default=None, description="Chart source; default resources/<name>.")
    version: str | None = None
    depends_on: tuple[str, ...] = Field(default=(), alias="dependsOn")
    configuration: dict[str, Any] = Field(default_factory=dict)


class ComponentSet(BaseModel):
    """A whole component set as read from `components.yaml`."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    default_namespace: str = Field(default="kyma-system", alias="defaultNamespace")
    prerequisites: tuple[ComponentSpec, ...] = ()
    components: tuple[ComponentSpec, ...] = ()

    @field_validator("prerequisites", "components", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return () if value is None else value

    @model_validator(mode="after")
    def _check_names_and_dependencies(self) -> ComponentSet:
        seen: set[str] = set()
        for spec in self.all():
            if spec.name in seen or spec.name == CRDS_COMPONENT:
                raise ValueError(f"component {spec.name!r} is listed more than once or reserved")
            seen.add(spec.name)
        for spec in self.all():
            unknown = [d for d in spec.depends_on if d not in seen]
            if unknown:
                raise ValueError(f"component {spec.name!r} depends on unknown {unknown}")
        return self

    def all(self) -> tuple[ComponentSpec, ...]:
        return self.prerequisites + self.components

    def names(self) -> list[str]:
        return [spec.name for spec in self.all()]

    def get(self, name: str) -> ComponentSpec:
        for spec in self.all():
            if spec.name == name:
                return spec
        raise UnknownComponentError(
            f"unknown component {name!r}; the component set has: {', '.join(self.names())}"
        )

    def namespace_of(self, spec: ComponentSpec) -> str:
        return spec.namespace or self.default_namespace

    def select(self, names: list[str]) -> ComponentSet:
        """The subset with just `names` (dependencies outside the subset are dropped)."""
        wanted = {self.get(name).name for name in names}

        def keep(specs: tuple[ComponentSpec, ...]) -> tuple[ComponentSpec, ...]:
            return tuple(
                s.model_copy(update={"depends_on": tuple(d for d in s.depends_on if d in wanted)})
                for s in specs
                if s.name in wanted
            )

        return self.model_copy(
            update={
                "prerequisites": keep(self.prerequisites),
                "components": keep(self.components),
            }
        )
