"""Errors say whether trying again may help (`errors.py`)."""

from __future__ import annotations

import pytest

from reconciler.errors import (
    ApplyError,
    ChartError,
    ClusterUnreachable,
    KubeApiError,
    KubeconfigError,
    ReadinessTimeout,
    ReconcilerError,
    WaitTimeout,
)


@pytest.mark.parametrize("error", [ClusterUnreachable, ReadinessTimeout, WaitTimeout])
def test_a_cause_that_may_pass_is_transient(error: type[ReconcilerError]) -> None:
    assert error("x").transient


@pytest.mark.parametrize("error", [ApplyError, ChartError, KubeconfigError, ReconcilerError])
def test_a_cause_that_stays_is_final(error: type[ReconcilerError]) -> None:
    assert not error("x").transient


@pytest.mark.parametrize(
    ("status", "retryable"), [(409, True), (429, True), (503, True), (422, False), (404, False)]
)
def test_an_apiserver_answer_says_whether_the_request_may_be_sent_again(
    status: int, retryable: bool
) -> None:
    error = KubeApiError(status, "", "answer")
    assert error.retryable is retryable
    assert not error.transient  # a component's failure is not retried for a single answer
