"""The rule between the control plane's Kyma and the remote users' Kyma: the remote spec is
the truth (the lifecycle manager's "replace spec"), the spec both agreed on is recorded."""

from __future__ import annotations

import pytest

from reconciler.operator.controllers.remote_merge import (
    MAX_REMOTE_MODULES,
    REMOTE_SPEC,
    agreed,
    decide,
    spec_of,
    valid_entries,
)


def _spec(channel: str, *names: str) -> dict[str, object]:
    return spec_of({"channel": channel, "modules": [{"name": n} for n in names]})


@pytest.mark.parametrize(
    ("control", "remote", "last", "where", "result"),
    [
        # created: both sides carry the control plane's spec, nothing agreed yet
        (_spec("regular", "a"), _spec("regular", "a"), None, "", _spec("regular", "a")),
        # the SKR user adds b: the control plane takes it
        (
            _spec("regular", "a"),
            _spec("regular", "a", "b"),
            _spec("regular", "a"),
            "control",
            _spec("regular", "a", "b"),
        ),
        # the SKR user removes a (the control plane listed it first): removed all the same
        (
            _spec("regular", "a"),
            _spec("regular"),
            _spec("regular", "a"),
            "control",
            _spec("regular"),
        ),
        # the SKR user switches to fast
        (
            _spec("regular", "a"),
            _spec("fast", "a"),
            _spec("regular", "a"),
            "control",
            _spec("fast", "a"),
        ),
        # only the platform moved: the remote Kyma gets its spec
        (
            _spec("fast", "a"),
            _spec("regular", "a"),
            _spec("regular", "a"),
            "remote",
            _spec("fast", "a"),
        ),
        # both moved: the remote side wins
        (
            _spec("fast"),
            _spec("regular", "b"),
            _spec("regular", "a"),
            "control",
            _spec("regular", "b"),
        ),
        # a remote Kyma of the merge rule before (nothing agreed): the union, once
        (
            _spec("regular", "a"),
            _spec("fast", "b", "a"),
            None,
            "both",
            _spec("regular", "a", "b"),
        ),
        # a remote Kyma without a channel keeps the control plane's
        (_spec("fast", "a"), _spec("", "a"), _spec("fast", "a"), "", _spec("fast", "a")),
        # agreed and unchanged: nothing written
        (
            _spec("regular", "a"),
            _spec("regular", "a"),
            _spec("regular", "a"),
            "",
            _spec("regular", "a"),
        ),
    ],
)
def test_the_remote_spec_is_the_truth(
    control: dict[str, object],
    remote: dict[str, object],
    last: dict[str, object] | None,
    where: str,
    result: dict[str, object],
) -> None:
    assert decide(control, remote, last) == (where, result)


def test_both_sides_compare_with_the_crd_defaults_filled() -> None:
    stored = {
        "channel": "regular",
        "modules": [{"name": "a", "managed": True, "customResourcePolicy": "CreateAndDelete"}],
    }
    assert spec_of(stored) == spec_of({"channel": "regular", "modules": [{"name": "a"}]})


def test_the_agreed_spec_survives_a_garbled_annotation() -> None:
    assert agreed({"metadata": {"annotations": {REMOTE_SPEC: '{"channel": "x"}'}}}) == {
        "channel": "x"
    }
    assert agreed({"metadata": {"annotations": {REMOTE_SPEC: "{oops"}}}) is None
    assert agreed({"metadata": {}}) is None


def test_invalid_or_repeated_remote_entries_are_left_out_with_the_reason() -> None:
    entries, problems = valid_entries([{"name": "a"}, {"channel": "x"}, {"name": "a"}])
    assert entries == [{"name": "a", "managed": True}]
    assert problems == [
        "spec.modules[1].name: Field required",
        "spec.modules[2]: module a is listed twice",
    ]


def test_at_most_max_remote_modules_entries_are_taken_and_the_excess_reported() -> None:
    entries, problems = valid_entries([{"name": f"m{i}"} for i in range(MAX_REMOTE_MODULES + 1)])
    assert len(entries) == MAX_REMOTE_MODULES
    assert problems == [
        f"spec.modules: {MAX_REMOTE_MODULES + 1} entries, more than {MAX_REMOTE_MODULES}:"
        f" only the first {MAX_REMOTE_MODULES} are taken"
    ]
