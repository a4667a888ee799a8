"""The configuration diff's rows: side by side, changes paired, long unchanged runs folded."""

from __future__ import annotations

import asyncio
import itertools
import random
import time

import pytest

from reconciler.api.console.diff import (
    MAX_LINES,
    DiffBusy,
    DiffPool,
    DiffRow,
    folded,
    opcodes,
    side_by_side,
)
from reconciler.model.cluster import KymaConfig
from tests.helpers.clusters import cluster_spec


def kinds(rows: list[DiffRow]) -> list[str]:
    return [row.kind for row in rows]


def test_a_changed_line_is_paired_and_extra_lines_are_added_or_removed() -> None:
    rows = side_by_side(["a", "b", "c"], ["a", "B", "c", "d"])

    assert kinds(rows) == ["same", "changed", "same", "added"]
    assert (rows[1].left, rows[1].right) == ("b", "B")
    assert (rows[3].left, rows[3].right_number) == (None, 4)


def test_unchanged_runs_beyond_the_context_fold_into_one_gap_each() -> None:
    left = [f"line {n}" for n in range(20)]
    right = [*left[:10], "new", *left[11:]]

    rows = folded(side_by_side(left, right), context=2)

    assert kinds(rows) == ["gap", "same", "same", "changed", "same", "same", "gap"]
    assert rows[0].left == "8 unchanged lines"
    assert rows[-1].left == "7 unchanged lines"


def test_equal_versions_fold_to_a_single_gap() -> None:
    lines = [f"line {n}" for n in range(5)]
    assert kinds(folded(side_by_side(lines, lines))) == ["gap"]


def _lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            same = table[i + 1][j + 1] + 1 if a[i] == b[j] else 0
            table[i][j] = max(same, table[i + 1][j], table[i][j + 1])
    return table[0][0]


def test_the_alignment_is_a_longest_common_subsequence() -> None:
    generator = random.Random(7)
    for _ in range(500):
        a = [generator.choice("abc") for _ in range(generator.randint(0, 10))]
        b = [generator.choice("abc") for _ in range(generator.randint(0, 10))]
        codes, exact = opcodes(a, b)
        assert exact
        i = j = equal = 0
        for tag, i1, i2, j1, j2 in codes:
            assert (i1, j1) == (i, j)
            if tag == "equal":
                assert a[i1:i2] == b[j1:j2]
                equal += i2 - i1
            i, j = i2, j2
        assert (i, j) == (len(a), len(b))
        assert equal == _lcs(a, b)


def test_repeated_lines_that_froze_the_old_diff_take_milliseconds() -> None:
    """SequenceMatcher: 17.9 s on 3.2 KB of repeated lines, no end on 95 KB."""
    left = ["  - key: x", "    value: y"] * 4000  # ~95 KB
    right = ["    value: y", "  - key: x"] * 4000
    started = time.monotonic()
    rows = side_by_side(left, right)
    assert time.monotonic() - started < 2.0
    assert {row.kind for row in rows} >= {"same", "added"}


def test_what_cannot_be_aligned_in_time_is_shown_line_against_line() -> None:
    generator = random.Random(3)
    left = [str(generator.randint(0, 40)) for _ in range(5000)]
    right = [str(generator.randint(0, 40)) for _ in range(5000)]
    started = time.monotonic()
    rows = side_by_side(left, right, budget=0.2)
    assert time.monotonic() - started < 1.5
    assert rows[0].kind == "gap"
    assert "time budget" in str(rows[0].left)
    assert len(rows) == 5001


def test_inputs_beyond_the_bound_are_not_compared() -> None:
    rows = side_by_side(["x"] * (MAX_LINES + 1), ["y"])
    assert [row.kind for row in rows] == ["gap"]
    assert "too large to compare" in str(rows[0].left)


def _config(entries: int, salt: str) -> KymaConfig:
    configuration = [
        {"key": f"k{n % 7}", "value": f"{salt}{n % 3}", "secret": False} for n in range(entries)
    ]
    return cluster_spec("rt", configuration={"istio": configuration}).kyma_config


async def test_diffs_run_off_the_event_loop_and_a_flood_is_refused() -> None:
    pool = DiffPool(concurrent=1, waiting=1)
    left, right = _config(3000, "a"), _config(3000, "b")
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    running = asyncio.create_task(ticker())
    started = time.monotonic()
    try:
        first = asyncio.create_task(pool.diff(left, right))
        second = asyncio.create_task(pool.diff(left, right))
        await asyncio.sleep(0)
        with pytest.raises(DiffBusy):
            await pool.diff(left, right)
        rows = await first
        await second
        took = time.monotonic() - started
    finally:
        running.cancel()
    assert any(row.kind == "changed" for row in rows)
    gaps = [later - earlier for earlier, later in itertools.pairwise(ticks)]
    assert len(ticks) > 5
    # the loop kept turning while the diffs ran (a pause of the loaded machine or a garbage
    # collection in the worker may hold it briefly, never for the diffs' whole time)
    assert max(gaps) < min(1.0, took / 2), (max(gaps), took)
