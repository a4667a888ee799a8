"""The finalizer patch: only a real change is sent, and it is guarded by the resourceVersion."""

from __future__ import annotations

from reconciler.kube.finalizers import finalizer_patch


def test_adding_keeps_others_finalizers_and_carries_the_resource_version() -> None:
    meta = {"finalizers": ["someone/else"], "resourceVersion": "42"}
    assert finalizer_patch(meta, "ours", present=True) == {
        "metadata": {"finalizers": ["someone/else", "ours"], "resourceVersion": "42"}
    }


def test_removing_drops_only_ours_and_nothing_is_sent_when_already_so() -> None:
    meta = {"finalizers": ["someone/else", "ours"], "resourceVersion": "7"}
    patch = finalizer_patch(meta, "ours", present=False)
    assert patch == {"metadata": {"finalizers": ["someone/else"], "resourceVersion": "7"}}
    assert finalizer_patch({"resourceVersion": "7"}, "ours", present=False) is None
    assert finalizer_patch(meta, "ours", present=True) is None
