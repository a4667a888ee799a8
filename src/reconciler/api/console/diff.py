"""A side-by-side diff of two configuration versions, as the console shows it.

Both sides are the configuration as the API shows it (`convert.kyma_config`: secret values
already `<redacted>`), dumped as YAML with sorted keys, so the diff can only ever show what a
viewer may read through `GET /v1/clusters/{id}/config/{version}`. The rows are data (kind, left
line, right line); the template turns them into an accessible table.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

import yaml

from reconciler.api import convert
from reconciler.model.cluster import KymaConfig

RowKind = Literal["same", "changed", "removed", "added", "gap"]
CONTEXT = 3
"""Unchanged lines shown around each change; longer unchanged runs fold into one gap row."""


@dataclass(frozen=True)
class DiffRow:
    kind: RowKind
    left: str | None
    right: str | None
    left_number: int | None
    right_number: int | None


def config_lines(config: KymaConfig) -> list[str]:
    """The redacted configuration as YAML lines."""
    data = convert.kyma_config(config).model_dump(mode="json", by_alias=True)
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False).splitlines()


def side_by_side(left: list[str], right: list[str]) -> list[DiffRow]:
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows.extend(
                DiffRow("same", left[i], right[j], i + 1, j + 1)
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            i, j = i1 + k, j1 + k
            has_left, has_right = i < i2, j < j2
            kind: RowKind = (
                "changed" if has_left and has_right else "removed" if has_left else "added"
            )
            rows.append(
                DiffRow(
                    kind,
                    left[i] if has_left else None,
                    right[j] if has_right else None,
                    i + 1 if has_left else None,
                    j + 1 if has_right else None,
                )
            )
    return rows


def folded(rows: list[DiffRow], context: int = CONTEXT) -> list[DiffRow]:
    """The rows with unchanged runs beyond `context` lines of a change folded into a gap row
    (`left` says how many lines it stands for)."""
    near = [False] * len(rows)
    for index, row in enumerate(rows):
        if row.kind != "same":
            for k in range(max(0, index - context), min(len(rows), index + context + 1)):
                near[k] = True
    result: list[DiffRow] = []
    hidden = 0
    for row, keep in zip(rows, near, strict=True):
        if keep:
            if hidden:
                result.append(DiffRow("gap", f"{hidden} unchanged lines", None, None, None))
                hidden = 0
            result.append(row)
        else:
            hidden += 1
    if hidden:
        result.append(DiffRow("gap", f"{hidden} unchanged lines", None, None, None))
    return result


def diff_configs(left: KymaConfig, right: KymaConfig) -> list[DiffRow]:
    return folded(side_by_side(config_lines(left), config_lines(right)))
