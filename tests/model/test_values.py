"""Configuration layering: flat and nested overrides, later layers win, maps merge."""

from __future__ import annotations

import json

import pytest

from reconciler.model.values import ValuesError, layer, merge, nest, parse_assignment


def test_flat_keys_become_nested_maps() -> None:
    assert nest({"a.b.c": 1, "a.d": 2, "e": {"f.g": 3}}) == {
        "a": {"b": {"c": 1}, "d": 2},
        "e": {"f": {"g": 3}},
    }


def test_later_layers_win_and_maps_merge_but_lists_are_replaced() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "keep": True}
    assert layer([base, {"a.b": 2}, {"a": {"c": [3]}}]) == {"a": {"b": 2, "c": [3]}, "keep": True}


def test_merge_does_not_modify_its_inputs() -> None:
    base = {"a": {"b": 1}}
    merge(base, {"a": {"b": 2}})
    assert base == {"a": {"b": 1}}


def test_conflicting_keys_are_named() -> None:
    with pytest.raises(ValuesError, match=r"a\.b\.c"):
        nest({"a.b": 1, "a.b.c": 2})
    with pytest.raises(ValuesError, match="empty path"):
        nest({"a..b": 1})


def test_command_line_assignments_are_typed_like_yaml() -> None:
    assert parse_assignment("replicas=2") == ("replicas", 2)
    assert parse_assignment("global.domain=kyma.local") == ("global.domain", "kyma.local")
    assert parse_assignment("flag=true") == ("flag", True)
    assert parse_assignment("since=2024-01-01") == ("since", "2024-01-01")  # as Helm reads it
    assert parse_assignment("days=[2024-01-01, 3]") == ("days", ["2024-01-01", 3])
    json.dumps(parse_assignment("at=2024-01-01T10:00:00Z"))  # a JSON value, fit for the render
    with pytest.raises(ValuesError, match="KEY=VALUE"):
        parse_assignment("novalue")
