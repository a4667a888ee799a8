"""Reading YAML the way Helm and Kubernetes read it, with errors that say where.

PyYAML turns unquoted dates (`2024-01-01`) into `datetime` objects, which Helm and the
apiserver keep as strings and which `json.dumps` refuses; this loader keeps them as strings.
Everything else is PyYAML's safe loading (the C implementation where available).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import yaml

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class Loader(_Base):  # type: ignore[valid-type,misc]
    """Safe loading without the timestamp type."""

    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def load(text: str) -> Any:
    """One YAML document."""
    return yaml.load(text, Loader=Loader)


def load_all(text: str) -> list[Any]:
    """Every document of a YAML stream."""
    return list(yaml.load_all(text, Loader=Loader))


def where(exc: yaml.YAMLError) -> str:
    """` at line N, column M: problem` for a YAML error (1-based), as far as PyYAML knows."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is None:
        return f": {problem}"
    return f" at line {mark.line + 1}, column {mark.column + 1}: {problem}"
