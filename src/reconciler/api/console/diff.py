"""A side-by-side diff of two configuration versions, as the console shows it.

Both sides are the configuration as the API shows it (`convert.kyma_config`: secret values
already `<redacted>`), dumped as YAML with sorted keys, so the diff can only ever show what a
viewer may read through `GET /v1/clusters/{id}/config/{version}`. The rows are data (kind, left
line, right line); the template turns them into an accessible table.

Any viewer may ask for any pair of versions, so the work is bounded: at most `MAX_LINES` lines a
side (else one row says so), lines shown up to `MAX_LINE` characters, and the lines are aligned
by Myers' algorithm (O((N+M)·D) for D differing lines) after the common beginning and end are
set aside, given at most `MAX_EDITS` differing lines and `BUDGET` seconds. Beyond either, the
differing middle is shown line against line, with a row saying so. difflib's SequenceMatcher,
used before, is superlinear on repeated lines (17.9 s on 3.2 KB of them, and no end on 95 KB).
The caller runs it in a worker thread (`diff_configs_off_loop`), a few at a time.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import yaml

from reconciler.api import convert
from reconciler.model.cluster import KymaConfig

RowKind = Literal["same", "changed", "removed", "added", "gap"]
CONTEXT = 3
"""Unchanged lines shown around each change; longer unchanged runs fold into one gap row."""
MAX_LINES = 20_000
MAX_LINE = 2_000
MAX_EDITS = 1_000
BUDGET = 1.0
CONCURRENT = 2
"""Diffs computed at once (worker threads); `WAITING` more may wait for one, the rest are told
to come back (503)."""
WAITING = 8
Opcode = tuple[str, int, int, int, int]
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's dumper where installed: the same YAML, a tenth of the time of the pure one."""


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
    text = yaml.dump(data, Dumper=_DUMPER, sort_keys=True, default_flow_style=False)
    return text.splitlines()


def _myers(a: Sequence[int], b: Sequence[int], limit: int, deadline: float) -> list[int] | None:
    """For each line of `a`, the line of `b` it is paired with (-1: none) in a shortest edit
    script; None when that needs more than `limit` edits or the deadline passes."""
    n, m = len(a), len(b)
    most = min(limit, n + m)
    off = most + 1
    v = array("i", [0]) * (2 * most + 3)
    trace: list[array[int]] = []
    for d in range(most + 1):
        if d % 8 == 0 and time.monotonic() > deadline:
            return None
        trace.append(v[off - d - 1 : off + d + 2])  # V before step d, for k in [-d-1, d+1]
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            v[off + k] = x
            if x >= n and y >= m:
                return _pairs(trace, n, m, d)
    return None


def _pairs(trace: list[array[int]], n: int, m: int, edits: int) -> list[int]:
    paired = [-1] * n
    x, y = n, m
    for d in range(edits, 0, -1):
        before = trace[d]
        k = x - y
        if k == -d or (k != d and before[k - 1 + d + 1] < before[k + 1 + d + 1]):
            start_k = k + 1
        else:
            start_k = k - 1
        start_x = before[start_k + d + 1]
        start_y = start_x - start_k
        while x > start_x and y > start_y:
            x, y = x - 1, y - 1
            paired[x] = y
        x, y = start_x, start_y
    while x > 0 and y > 0:
        x, y = x - 1, y - 1
        paired[x] = y
    return paired


def opcodes(
    left: Sequence[str], right: Sequence[str], *, limit: int = MAX_EDITS, budget: float = BUDGET
) -> tuple[list[Opcode], bool]:
    """SequenceMatcher-style opcodes aligning `left` and `right`, and whether they are exact
    (False: the differing middle could not be aligned within `limit` edits or `budget`
    seconds and is one `replace`)."""
    head = 0
    while head < min(len(left), len(right)) and left[head] == right[head]:
        head += 1
    tail = 0
    while tail < min(len(left), len(right)) - head and left[-1 - tail] == right[-1 - tail]:
        tail += 1
    a_mid, b_mid = left[head : len(left) - tail], right[head : len(right) - tail]
    ids: dict[str, int] = {}
    a = [ids.setdefault(line, len(ids)) for line in a_mid]
    b = [ids.setdefault(line, len(ids)) for line in b_mid]
    paired = _myers(a, b, limit, time.monotonic() + budget)
    codes: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    exact = paired is not None
    if paired is None:
        if a or b:
            codes.append(("replace", head, head + len(a), head, head + len(b)))
    else:
        i = j = 0
        while i < len(a) or j < len(b):
            if i < len(a) and paired[i] == j:
                start = i
                while i < len(a) and paired[i] == j:
                    i, j = i + 1, j + 1
                codes.append(("equal", head + start, head + i, head + j - (i - start), head + j))
                continue
            i0, j0 = i, j
            while i < len(a) and paired[i] == -1:
                i += 1
            target = paired[i] if i < len(a) else len(b)
            j = max(j, target)
            codes.append(("replace", head + i0, head + i, head + j0, head + j))
    if tail:
        codes.append(("equal", len(left) - tail, len(left), len(right) - tail, len(right)))
    return codes, exact


def _shown(line: str | None) -> str | None:
    if line is None or len(line) <= MAX_LINE:
        return line
    return line[:MAX_LINE] + f" … ({len(line) - MAX_LINE} more characters)"


def side_by_side(
    left: list[str], right: list[str], *, limit: int = MAX_EDITS, budget: float = BUDGET
) -> list[DiffRow]:
    if max(len(left), len(right)) > MAX_LINES:
        note = (
            f"too large to compare here ({len(left)} and {len(right)} lines, at most "
            f"{MAX_LINES}): read both versions through the API"
        )
        return [DiffRow("gap", note, None, None, None)]
    codes, exact = opcodes(left, right, limit=limit, budget=budget)
    rows: list[DiffRow] = []
    if not exact:
        note = "too many differences to align within the time budget: shown line against line"
        rows.append(DiffRow("gap", note, None, None, None))
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal":
            rows.extend(
                DiffRow("same", _shown(left[i]), _shown(right[j]), i + 1, j + 1)
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
                    _shown(left[i]) if has_left else None,
                    _shown(right[j]) if has_right else None,
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


class DiffBusy(Exception):
    """More diffs are wanted at once than may run or wait."""


class DiffPool:
    """Diffs in worker threads, `CONCURRENT` at a time and `WAITING` more waiting: the event
    loop (the API, the engine's loops) never computes one, and a flood is refused, not queued."""

    def __init__(self, concurrent: int = CONCURRENT, waiting: int = WAITING) -> None:
        self._concurrent, self._waiting = concurrent, waiting
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self._wanted = 0

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()  # one per loop: a module's pool outlives test loops
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self._concurrent))
            self._wanted = 0
        return self._slots[1]

    async def diff(self, left: KymaConfig, right: KymaConfig) -> list[DiffRow]:
        slots = self._semaphore()
        if self._wanted >= self._concurrent + self._waiting:
            raise DiffBusy("too many configuration diffs at once: try again shortly")
        self._wanted += 1
        try:
            async with slots:
                return await asyncio.to_thread(diff_configs, left, right)
        finally:
            self._wanted -= 1
