"""What every custom resource model of ours shares: Kubernetes' camelCase field names, unknown
fields ignored on read (a newer resource still parses), and the standard status condition.

Operator mode and the infrastructure manager build their resources (and, through
`kube/crdgen.py`, their CRDs) from these.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class ResourceModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", use_enum_values=True
    )

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class Condition(ResourceModel):
    """`metav1.Condition`."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str
    last_transition_time: str
    observed_generation: int | None = Field(default=None, ge=0)
