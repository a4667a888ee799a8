"""The lifecycle manager's status rules as table cases (no cluster): the Kyma's state over its
modules, the Manifest's conditions, the marks put on every object of a module."""

from __future__ import annotations

import pytest

from reconciler.kube.transform import COMPONENT, prepare
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Stamp
from reconciler.operator.controllers.manifests import ManifestController, label_value
from reconciler.operator.controllers.status import aggregate


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        (["Ready", "Deleting"], "Processing"),  # LM: a module being removed -> Processing
        (["Ready", "Unmanaged"], "Ready"),
        (["Deleting", "Warning"], "Warning"),
        (["Error", "Deleting"], "Error"),
        ([], "Ready"),
    ],
)
def test_a_kyma_aggregates_its_modules_as_the_lifecycle_manager(
    states: list[str], expected: str
) -> None:
    assert aggregate(states) == expected


def test_manifest_conditions_start_false_and_stay_true_once_reached() -> None:
    first = ManifestController._conditions({}, {"Resources"}, True, 1)
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in first] == [
        ("Resources", "True", "ResourcesAvailable", "resources are parsed and ready for use"),
        ("Installation", "False", "Ready", "installation is not ready"),
        ("ModuleCR", "False", "ModuleCRCreated", "module CR has not been created to SKR"),
    ]
    later = ManifestController._conditions({"conditions": first}, set(), True, 1)
    assert later[0] is first[0]  # unchanged: the same condition, no status write
    newer = ManifestController._conditions({"conditions": first}, set(), True, 2)
    assert newer[0]["status"] == "True"  # once reached, for good
    assert newer[0]["lastTransitionTime"] == first[0]["lastTransitionTime"]
    assert newer[0]["observedGeneration"] == 2
    assert [c["type"] for c in ManifestController._conditions({}, set(), False, 1)] == [
        "Resources",
        "Installation",
    ]  # no default resource to create: no ModuleCR condition


def test_a_stamp_marks_every_object_and_the_core_labels_stay_the_cores() -> None:
    obj = KubeObject(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"app.kubernetes.io/part-of": "mine"}},
        }
    )
    stamp = Stamp(
        labels={"app.kubernetes.io/part-of": "Kyma", COMPONENT: "not-the-core"},
        annotations={"a": "b"},
    )
    prepared, _ = prepare(
        obj, namespace="ns", namespaced=True, version="1", component="x", stamp=stamp
    )
    assert prepared.labels["app.kubernetes.io/part-of"] == "Kyma"
    assert prepared.labels[COMPONENT] == "x"
    assert prepared.annotations == {"a": "b"}
    assert "annotations" not in obj.metadata  # the object given is not changed


def test_a_manifest_name_becomes_a_valid_label_value() -> None:
    assert label_value("k-sample-1a2b3c4d") == "k-sample-1a2b3c4d"
    cut = label_value("k" * 62 + "-x")
    assert len(cut) <= 63
    assert cut[-1].isalnum()
