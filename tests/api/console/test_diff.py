"""The configuration diff's rows: side by side, changes paired, long unchanged runs folded."""

from __future__ import annotations

from reconciler.api.console.diff import DiffRow, folded, side_by_side


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
