"""The rollout's pure decisions: membership, waves, the gate's arithmetic, the version a Kyma
gets (`operator/rollout/plan.py`, `index.py`). No cluster: table cases, fast."""

from __future__ import annotations

import datetime as dt

import pytest

from reconciler.model.lifecycle import LabelSelector, Module
from reconciler.model.rollout import ModuleRolloutSpec, Phase, RolloutGate
from reconciler.operator.catalog.resolve import resolve
from reconciler.operator.controllers.remote_catalog import offered_catalog
from reconciler.operator.rollout import plan
from reconciler.operator.rollout.index import RolloutIndex
from tests.operator.modules import kyma as modules_kyma
from tests.operator.modules import release_meta, template

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NS = "kcp-system"


def spec(**fields: object) -> ModuleRolloutSpec:
    base: dict[str, object] = {
        "module": "alpha",
        "waves": [
            {"name": "internal", "selector": {"matchLabels": {"tier": "internal"}}},
            {"name": "one", "percent": 1, "soakSeconds": 10},
            {"name": "ten", "percent": 10, "soakSeconds": 10},
            {"name": "rest", "soakSeconds": 10},
        ],
        "gate": {"deadlineSeconds": 60},
    }
    return ModuleRolloutSpec.model_validate(base | fields)


def test_buckets_are_stable_across_processes_and_spread_evenly() -> None:
    here = [plan.bucket("salt", NS, f"k{i}") for i in range(5)]
    # pinned: sha256, not Python's seeded hash(), so every process and release agrees
    assert here == [44.46, 52.78, 55.89, 86.11, 2.48]
    assert plan.bucket("other", NS, "k0") != here[0]  # the salt moves it
    places = [plan.bucket("s", NS, f"k{i}") for i in range(10_000)]
    assert all(0 <= p < 100 for p in places)
    assert 80 <= sum(p < 1 for p in places) <= 120  # about 1 %
    assert 4_800 <= sum(p < 50 for p in places) <= 5_200


def test_waves_take_selectors_then_cumulative_percentages_then_the_rest() -> None:
    s = spec()
    waves = [plan.wave_of(s, "salt", NS, f"k{i}", {}) for i in range(10_000)]
    counts = [waves.count(w) for w in range(4)]
    assert counts[0] == 0  # nobody is labelled internal
    assert 80 <= counts[1] <= 120
    assert 880 <= counts[2] <= 1_120  # 10 % cumulative: 9 % more
    assert counts[3] == 10_000 - sum(counts[:3])
    assert plan.wave_of(s, "salt", NS, "k1", {"tier": "internal"}) == 0
    both = spec(
        waves=[
            {
                "name": "half-internal",
                "percent": 50,
                "selector": {"matchLabels": {"tier": "internal"}},
            },
            {"name": "rest"},
        ]
    )
    internal = [plan.wave_of(both, "x", NS, f"k{i}", {"tier": "internal"}) for i in range(1_000)]
    assert 400 <= internal.count(0) <= 600
    assert plan.wave_of(both, "x", NS, "k1", {}) == 1


@pytest.mark.parametrize(
    ("expressions", "labels", "selected"),
    [
        ([{"key": "tier", "operator": "In", "values": ["a", "b"]}], {"tier": "b"}, True),
        ([{"key": "tier", "operator": "In", "values": ["a"]}], {}, False),
        ([{"key": "tier", "operator": "NotIn", "values": ["a"]}], {}, True),
        ([{"key": "tier", "operator": "NotIn", "values": ["a"]}], {"tier": "a"}, False),
        ([{"key": "tier", "operator": "Exists"}], {"tier": ""}, True),
        ([{"key": "tier", "operator": "DoesNotExist"}], {"tier": ""}, False),
        ([{"key": "tier", "operator": "Gt", "values": ["1"]}], {"tier": "2"}, False),
    ],
)
def test_selector_expressions(
    expressions: list[dict[str, object]], labels: dict[str, str], selected: bool
) -> None:
    selector = LabelSelector.model_validate({"matchExpressions": expressions})
    assert selector.selects(labels) is selected


@pytest.mark.parametrize(
    ("gate", "size", "allowed"),
    [
        ({}, 100, 0),
        ({"maxFailing": 2}, 100, 2),
        ({"maxFailingPercent": 5}, 100, 5),
        ({"maxFailingPercent": 5}, 19, 0),  # rounded down: 0.95 Kymas is none
        ({"maxFailing": 3, "maxFailingPercent": 10}, 100, 10),  # the larger of both
        ({"maxFailing": 3, "maxFailingPercent": 10}, 10, 3),
    ],
)
def test_gate_allowance(gate: dict[str, float], size: int, allowed: int) -> None:
    assert plan.allowance(RolloutGate.model_validate(gate), size) == allowed


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def seen(*waves: tuple[int, plan.Health]) -> list[plan.Observed]:
    return [plan.Observed(f"k{i}", w, h, f"m{i}") for i, (w, h) in enumerate(waves)]


def test_a_release_soaks_each_wave_skips_empty_ones_and_completes() -> None:
    s = spec()
    release = plan.start(plan.adopt("alpha", "regular", "1.0.0", T0), "1.1.0", T0).release
    assert (release.phase, release.wave, release.previous) == (Phase.PROGRESSING, 0, "1.0.0")
    pending = seen((1, "pending"), (2, "pending"), (3, "pending"))
    r = plan.step(s, release, pending, T0).release
    assert r.wave == 1  # the internal wave is empty: passed at once, no soak
    assert plan.next_look(s, r, at(4)) == pytest.approx(6)  # the soak ends first
    assert plan.step(s, r, pending, at(5)).release.wave == 1  # not ready yet
    ready1 = seen((1, "ready"), (2, "pending"), (3, "pending"))
    assert plan.step(s, r, ready1, at(5)).release.wave == 1  # ready, but soaking
    r = plan.step(s, r, ready1, at(10)).release
    assert r.wave == 2
    assert [(w.size, w.ready, w.pending) for w in r.waves[1:]] == [(1, 1, 0), (1, 0, 1), (1, 0, 1)]
    r = plan.step(s, r, seen((1, "ready"), (2, "ready"), (3, "pending")), at(20)).release
    step = plan.step(s, r, seen((1, "ready"), (2, "ready"), (3, "ready")), at(30))
    assert step.release.phase == Phase.COMPLETE
    assert [e[1] for e in step.events] == ["RolloutComplete"]
    assert plan.stable(step.release) == "1.1.0"
    assert plan.next_look(s, step.release, at(30)) is None


def test_a_failed_gate_halts_or_rolls_back_at_the_deadline() -> None:
    release = plan.start(plan.adopt("alpha", "regular", "1.0.0", T0), "1.1.0", T0).release
    stuck = seen((1, "pending"), (1, "ready"), (2, "pending"))
    r = plan.step(spec(), release, stuck, T0).release  # the empty first wave passed
    assert plan.step(spec(), r, stuck, at(59.9)).release.phase == Phase.PROGRESSING
    assert (r.phase, r.wave) == (Phase.PROGRESSING, 1)
    halted = plan.step(spec(), r, stuck, at(60))
    assert (halted.release.phase, halted.release.wave) == (Phase.HALTED, 1)
    assert "wave one: 1 of 2 Kymas not Ready on 1.1.0 within 60s (at most 0 allowed)" in (
        halted.release.message
    )
    assert halted.events[0][:2] == ("Warning", "RolloutHalted")
    assert [b.kyma for b in halted.release.failing] == ["k0"]  # the later wave is not listed
    assert halted.release.waves[2].pending == 1
    tolerant = spec(gate={"deadlineSeconds": 60, "maxFailing": 1})
    assert plan.step(tolerant, r, stuck, at(60)).release.wave == 2  # one may fail
    back = plan.step(spec(onFailure="Rollback"), r, stuck, at(60)).release
    assert back.phase == Phase.ROLLED_BACK
    # a halted release stays halted, whatever its Kymas do
    assert plan.step(spec(), halted.release, seen((1, "ready")), at(99)).release.phase is (
        Phase.HALTED
    )
    # a fixed version starts over from the first wave; the previous stays the last good one
    fixed = plan.start(halted.release, "1.1.1", at(100)).release
    assert (fixed.wave, fixed.previous, fixed.phase) == (0, "1.0.0", Phase.PROGRESSING)


def test_pause_resume_and_abort() -> None:
    release = plan.start(plan.adopt("alpha", "regular", "1.0.0", T0), "1.1.0", T0).release
    ready = seen((1, "ready"))
    paused = plan.step(spec(paused=True), release, ready, at(30)).release
    assert (paused.phase, paused.wave) == (Phase.PAUSED, 0)
    assert plan.step(spec(paused=True), paused, ready, at(90)).release.phase == Phase.PAUSED
    resumed = plan.step(spec(), paused, ready, at(100)).release
    assert (resumed.phase, resumed.wave) == (Phase.PROGRESSING, 1)  # the empty wave passed
    assert resumed.wave_started == plan.stamp(at(100))  # its soak counts from the resume
    aborted = plan.step(spec(aborted=["1.1.0"]), resumed, ready, at(101)).release
    assert aborted.phase == Phase.ABORTED
    back = plan.step(spec(aborted=["1.1.0"], onFailure="Rollback"), resumed, ready, at(101))
    assert back.release.phase == Phase.ROLLED_BACK


@pytest.mark.parametrize(
    ("phase", "wave", "installed", "expected"),
    [
        (Phase.PROGRESSING, 1, "1.0.0", plan.Choice("1.1.0")),  # admitted
        (Phase.PROGRESSING, 2, "1.0.0", plan.Choice("1.0.0")),  # not yet: keeps its version
        (Phase.PROGRESSING, 2, None, plan.Choice("1.0.0")),  # new: the fleet's version
        (Phase.HALTED, 1, "1.1.0", plan.Choice("1.1.0")),  # stays
        (Phase.HALTED, 3, "1.0.0", plan.Choice("1.0.0")),  # switches no further Kyma
        (Phase.ROLLED_BACK, 0, "1.1.0", plan.Choice("1.0.0", downgrade=True)),
        (Phase.ROLLED_BACK, 3, "1.0.0", plan.Choice("1.0.0")),
        (Phase.COMPLETE, 3, "1.0.0", plan.Choice("1.1.0")),
    ],
)
def test_the_version_a_kyma_gets(
    phase: Phase, wave: int, installed: str | None, expected: plan.Choice
) -> None:
    release = plan.start(plan.adopt("alpha", "regular", "1.0.0", T0), "1.1.0", T0).release
    release.phase, release.wave = phase, 1
    assert plan.choose(release, "1.1.0", wave, installed) == expected


def test_a_release_the_controller_has_not_started_holds_every_kyma() -> None:
    done = plan.adopt("alpha", "regular", "1.0.0", T0)
    assert plan.choose(done, "1.1.0", 0, "1.0.0") == plan.Choice("1.0.0")
    assert plan.choose(done, "1.1.0", 0, None) == plan.Choice("1.0.0")
    assert plan.choose(None, "1.1.0", 0, "1.0.0") == plan.Choice("1.0.0")
    assert plan.choose(None, "1.1.0", 0, None) == plan.Choice("1.1.0")


def _policy(
    module: str, name: str, status: list[dict[str, object]] | None = None
) -> dict[str, object]:
    return {
        "metadata": {"namespace": NS, "name": name, "uid": "u1"},
        "spec": {"module": module, "waves": [{"name": "all"}]},
        "status": {"releases": status or []},
    }


def test_catalog_resolution_asks_the_rollout_and_without_a_policy_nothing_changes() -> None:
    index = RolloutIndex()
    metas = [release_meta(NS, "alpha", {"regular": "1.1.0"})]
    templates = [template(NS, "alpha", v, "/c") for v in ("1.0.0", "1.1.0")]  # type: ignore[arg-type]
    choose = index.for_kyma(NS, "k1", {}, {"alpha": "1.0.0"})
    resolved = resolve(Module(name="alpha"), "regular", metas, templates, choose=choose)
    assert resolved.version == "1.1.0"  # no policy: the channel's version at once
    release = plan.start(plan.adopt("alpha", "regular", "1.0.0", T0), "1.1.0", T0).release
    release.phase = Phase.ROLLED_BACK
    assert index.observe(_policy("alpha", "alpha", [release.dump()])) is None  # new: all Kymas
    assert index.observe(_policy("alpha", "alpha", [release.dump()])) == set()  # nothing new
    choose = index.for_kyma(NS, "k1", {}, {"alpha": "1.1.0"})
    resolved = resolve(Module(name="alpha"), "regular", metas, templates, choose=choose)
    assert (resolved.version, choose.rollback) == ("1.0.0", {"alpha"})
    # a default policy covers modules without their own; an invalid own policy holds
    index.observe(_policy("", "default"))
    assert index.policy_for(NS, "beta") is index.policy(NS, "default")
    broken = _policy("beta", "beta")
    broken["spec"] = {"module": "beta", "waves": []}
    index.observe(broken)
    assert index.for_kyma(NS, "k1", {}, {"beta": "0.9.0"})("beta", "regular", "1.0.0") == "0.9.0"


def test_a_wave_moving_requeues_only_the_kymas_up_to_it() -> None:
    index = RolloutIndex()
    for name, tier in (("k1", "canary"), ("k2", ""), ("k3", "")):
        labels = {"tier": tier} if tier else {}
        index.observe_kyma(
            {
                "metadata": {"namespace": NS, "name": name, "labels": labels},
                "spec": {"channel": "regular", "modules": [{"name": "alpha"}]},
            }
        )
    policy = _policy("alpha", "alpha")
    policy["spec"] = {  # type: ignore[index]
        "module": "alpha",
        "waves": [
            {"name": "canary", "selector": {"matchLabels": {"tier": "canary"}}},
            {"name": "rest"},
        ],
    }
    release = plan.start(plan.adopt("alpha", "regular", "1.0.0", T0), "1.1.0", T0).release
    policy["status"] = {"releases": [release.dump()]}
    assert index.observe(policy) is None  # first seen: every Kyma
    release.wave = 0
    release.message = "counted again"  # no decision changed
    policy["status"] = {"releases": [release.dump()]}
    assert index.observe(policy) == set()
    release.phase = Phase.HALTED
    policy["status"] = {"releases": [release.dump()]}
    assert index.observe(policy) == {"k1"}
    release.phase, release.wave = Phase.PROGRESSING, 1
    policy["status"] = {"releases": [release.dump()]}
    assert index.observe(policy) == {"k1", "k2", "k3"}


def test_a_held_kymas_cluster_is_offered_the_version_it_runs_not_the_channels_newest() -> None:
    """The remote catalog copy follows the rollout: a Kyma its wave holds on 1.0.0 sees 1.0.0 on
    its channel (and only that template); admitted, it sees 1.1.0."""
    index = RolloutIndex()
    metas = [release_meta(NS, "alpha", {"regular": "1.1.0"})]
    templates = [template(NS, "alpha", v, "/c") for v in ("1.0.0", "1.1.0")]  # type: ignore[arg-type]
    kyma = modules_kyma(NS, "k1", "regular", ["alpha"])
    release = plan.start(plan.adopt("alpha", "regular", "1.0.0", T0), "1.1.0", T0).release
    policy = _policy("alpha", "alpha", [release.dump()])
    policy["spec"] = {
        "module": "alpha",
        "waves": [{"name": "nobody", "percent": 0}, {"name": "all"}],
    }  # type: ignore[index]
    index.observe(policy)
    held = index.for_kyma(NS, "k1", {}, {"alpha": "1.0.0"})
    released, copied = offered_catalog(kyma, metas, templates, held)
    assert released["alpha"]["spec"]["channels"] == [{"channel": "regular", "version": "1.0.0"}]
    assert set(copied) == {"alpha-1.0.0"}
    assert metas[0]["spec"]["channels"] == [{"channel": "regular", "version": "1.1.0"}]  # untouched
    release.wave = 1
    policy["status"] = {"releases": [release.dump()]}
    index.observe(policy)
    admitted = index.for_kyma(NS, "k1", {}, {"alpha": "1.0.0"})
    released, copied = offered_catalog(kyma, metas, templates, admitted)
    assert released["alpha"]["spec"]["channels"] == [{"channel": "regular", "version": "1.1.0"}]
    assert set(copied) == {"alpha-1.1.0"}
