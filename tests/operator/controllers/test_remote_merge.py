"""The merge rule between the control plane's Kyma and the remote users' Kyma."""

from __future__ import annotations

from reconciler.operator.controllers.remote_merge import (
    MAX_REMOTE_MODULES,
    REMOTE_MODULES,
    merge,
    remote_names,
    valid_entries,
)


def test_remote_entries_are_added_and_their_names_recorded() -> None:
    modules, names = merge([{"name": "a"}], [], [{"name": "b", "channel": "fast"}])
    assert modules == [{"name": "a"}, {"name": "b", "channel": "fast"}]
    assert names == ["b"]


def test_removing_a_remote_entry_removes_only_what_the_remote_side_added() -> None:
    modules, names = merge([{"name": "a"}, {"name": "b"}], ["b"], [])
    assert modules == [{"name": "a"}]
    assert names == []


def test_a_platform_entry_of_the_same_name_wins_and_stays() -> None:
    modules, names = merge([{"name": "a", "channel": "regular"}], [], [{"name": "a"}])
    assert modules == [{"name": "a", "channel": "regular"}]
    assert names == []
    assert merge(modules, names, []) == (modules, [])


def test_invalid_or_repeated_remote_entries_are_left_out_with_the_reason() -> None:
    entries, problems = valid_entries([{"name": "a"}, {"channel": "x"}, {"name": "a"}])
    assert entries == [{"name": "a", "managed": True}]
    assert problems == [
        "spec.modules[1].name: Field required",
        "spec.modules[2]: module a is listed twice",
    ]


def test_the_recorded_names_survive_a_garbled_annotation() -> None:
    assert remote_names({"metadata": {"annotations": {REMOTE_MODULES: '["a"]'}}}) == ["a"]
    assert remote_names({"metadata": {"annotations": {REMOTE_MODULES: "{oops"}}}) == []


def test_at_most_max_remote_modules_entries_are_taken_and_the_excess_reported() -> None:
    entries, problems = valid_entries([{"name": f"m{i}"} for i in range(MAX_REMOTE_MODULES + 1)])
    assert len(entries) == MAX_REMOTE_MODULES
    assert problems == [
        f"spec.modules: {MAX_REMOTE_MODULES + 1} entries, more than {MAX_REMOTE_MODULES}:"
        f" only the first {MAX_REMOTE_MODULES} are taken"
    ]
