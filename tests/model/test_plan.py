"""Plans: CRDs, then prerequisites in order, then the rest concurrently unless dependsOn."""

from __future__ import annotations

import pytest

from reconciler.model.component import ComponentSet, ComponentSetError
from reconciler.model.plan import plan_components

SET = ComponentSet.model_validate(
    {
        "defaultNamespace": "kyma-system",
        "prerequisites": [{"name": "cluster-essentials"}, {"name": "istio"}],
        "components": [
            {"name": "a"},
            {"name": "b", "dependsOn": ["a"]},
            {"name": "c"},
        ],
    }
)


def test_groups_follow_crds_prerequisites_then_the_rest() -> None:
    plan = plan_components(SET)
    assert plan.groups() == [["CRDs"], ["cluster-essentials"], ["istio"], ["a", "c"], ["b"]]


def test_rest_waits_for_the_last_prerequisite_and_its_dependencies() -> None:
    plan = plan_components(SET)
    assert plan.step("a").after == {"istio"}
    assert plan.step("b").after == {"istio", "a"}
    assert plan.dependants("a") == {"b"}
    assert plan.dependants("istio") == {"a", "b", "c"}


def test_delete_plan_reverses_edges_and_priorities() -> None:
    reverse = plan_components(SET).reversed()
    assert reverse.groups() == [["b"], ["c", "a"], ["istio"], ["cluster-essentials"], ["CRDs"]]
    assert reverse.step("a").after == {"b"}
    assert reverse.step("istio").after == {"a", "b", "c"}


def test_dependency_cycle_is_named() -> None:
    cyclic = ComponentSet.model_validate(
        {"components": [{"name": "x", "dependsOn": ["y"]}, {"name": "y", "dependsOn": ["x"]}]}
    )
    with pytest.raises(ComponentSetError, match="x -> y -> x"):
        plan_components(cyclic)


def test_unknown_dependency_and_duplicates_are_rejected() -> None:
    with pytest.raises(ValueError, match="depends on unknown"):
        ComponentSet.model_validate({"components": [{"name": "x", "dependsOn": ["nope"]}]})
    with pytest.raises(ValueError, match="more than once"):
        ComponentSet.model_validate({"components": [{"name": "x"}, {"name": "x"}]})


def test_selecting_components_drops_dependencies_outside_the_selection() -> None:
    subset = SET.select(["b", "c"])
    assert subset.names() == ["b", "c"]
    assert subset.get("b").depends_on == ()
