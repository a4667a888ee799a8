"""What the manager writes into a shoot, decided without a cluster: which administrators' bindings
go and come (KIM's label and subjects), which OIDC providers become OpenIDConnect resources,
the `kyma-provisioning-info` details, and which runtime id a Runtime may carry."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.infra.skr import (
    BINDING_LABELS,
    LEGACY_BINDING_LABELS,
    admin_changes,
    oidc_configs,
    oidc_enabled,
    openidconnect,
    provisioning_info,
)
from reconciler.infra.states import binding_name, foreign_shoot, runtime_id, runtime_id_mismatch
from reconciler.model.infrastructure import RUNTIME_ID, SHOOT_RUNTIME_ID, RuntimeSpec
from tests.infra.samples import runtime, worker


def binding(
    name: str,
    *users: str,
    labels: dict[str, str] | None = None,
    role: str = "cluster-admin",
    kind: str = "User",
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": BINDING_LABELS if labels is None else labels},
        "roleRef": {"kind": "ClusterRole", "name": role},
        "subjects": [{"kind": kind, "name": user} for user in users],
    }


@pytest.mark.parametrize(
    ("existing", "admins", "removed", "created"),
    [
        # KIM's own cases: nothing there, all created
        ([], ["a", "b"], [], ["a", "b"]),
        # KIM's binding (generated name) of a kept administrator is adopted: no duplicate
        ([binding("admin-x7k2p", "a")], ["a"], [], []),
        # a removed administrator's binding goes, a new one comes
        (
            [binding("admin-x7k2p", "a"), binding("admin-q9r4t", "b")],
            ["b", "c"],
            ["admin-x7k2p"],
            ["c"],
        ),
        # our bindings of before (app: kyma) count as ours too
        ([binding("admin-old", "a", labels=LEGACY_BINDING_LABELS)], [], ["admin-old"], []),
        # someone else's binding, another role, a group subject: never touched, never counted
        ([binding("ops", "a", labels={"team": "ops"})], ["a"], [], ["a"]),
        ([binding("view", "a", role="view")], [], [], []),
        ([binding("grp", "a", kind="Group")], [], [], []),
        # a binding naming a kept and a removed administrator stays
        ([binding("both", "a", "gone")], ["a"], [], []),
        # an administrator listed twice is bound once
        ([], ["a", "a"], [], ["a"]),
    ],
)
def test_administrators_bindings_are_found_by_kims_label_and_subject(
    existing: list[dict[str, Any]], admins: list[str], removed: list[str], created: list[str]
) -> None:
    gone, new = admin_changes(existing, admins)
    assert gone == removed
    assert [b["subjects"][0]["name"] for b in new] == created
    for body in new:
        assert body["metadata"]["labels"] == BINDING_LABELS
        assert body["metadata"]["name"] == binding_name(body["subjects"][0]["name"])


def _spec(additional: list[dict[str, Any]] | None, main: dict[str, Any] | None) -> RuntimeSpec:
    spec = runtime("rt", "ns")["spec"]
    api = spec["shoot"]["kubernetes"]["kubeAPIServer"]
    api.pop("oidcConfig")
    if main is not None:
        api["oidcConfig"] = main
    if additional is not None:
        api["additionalOidcConfig"] = additional
    return RuntimeSpec.model_validate(spec)


MAIN = {"clientID": "main", "issuerURL": "https://main"}
EXTRA = {"clientID": "x", "issuerURL": "https://x", "signingAlgs": ["RS256"], "jwks": "a2V5"}


@pytest.mark.parametrize(
    ("additional", "main", "issuers"),
    [
        ([EXTRA], MAIN, ["https://x"]),  # additional providers are the OpenIDConnects
        ([], MAIN, []),  # an empty list: none
        (None, MAIN, ["https://main"]),  # missing: the default
        ([{"clientID": "incomplete"}], MAIN, ["https://main"]),  # incomplete: the default
        (None, {}, []),  # the broker's `oidcConfig: {}` names no provider
    ],
)
def test_oidc_providers_are_chosen_as_kim_chooses_them(
    additional: list[dict[str, Any]] | None, main: dict[str, Any], issuers: list[str]
) -> None:
    assert [c.issuer_url for c in oidc_configs(_spec(additional, main))] == issuers


def test_an_openidconnect_speaks_the_authenticators_api() -> None:
    (config,) = oidc_configs(_spec([EXTRA], None))
    body = openidconnect(config, 0)
    assert body["metadata"]["name"] == "kyma-oidc-0"
    assert body["spec"] == {
        "issuerURL": "https://x",
        "clientID": "x",
        "supportedSigningAlgs": ["RS256"],
        "jwks": {"keys": "a2V5"},
    }
    assert oidc_enabled({"spec": {"extensions": [{"type": "shoot-oidc-service"}]}})
    disabled = {"type": "shoot-oidc-service", "disabled": True}
    assert not oidc_enabled({"spec": {"extensions": [disabled]}})


def test_the_provisioning_info_describes_the_runtime_as_kim_does() -> None:
    body = runtime("rt", "ns")
    body["metadata"]["labels"] |= {
        "kyma-project.io/instance-id": "inst",
        "kyma-project.io/subaccount-id": "sa",
    }
    body["spec"]["shoot"]["provider"]["workers"] = [worker(zones=["a", "b", "c"])]
    body["spec"]["shoot"]["provider"]["additionalWorkers"] = [worker("extra", zones=["a", "b"])]
    body["spec"]["shoot"]["kubernetes"]["kubeAPIServer"]["acl"] = {"allowedCIDRs": ["10.0.0.0/8"]}
    shoot = {
        "spec": {
            "provider": {"infrastructureConfig": {"kind": "InfrastructureConfig"}},
            "networking": {"ipFamilies": ["IPv6", "IPv4"]},
        },
        "status": {"lastOperation": {"lastUpdateTime": "2026-01-01T00:00:00Z"}},
    }
    info = provisioning_info(body, shoot)
    assert info["workerPools"] == {
        "kyma": {
            "name": "cpu-worker-0",
            "machineType": "m6i.large",
            "haZones": True,
            "autoScalerMin": 1,
            "autoScalerMax": 3,
        },
        "custom": [
            {
                "name": "extra",
                "machineType": "m6i.large",
                "haZones": False,
                "autoScalerMin": 1,
                "autoScalerMax": 3,
            }
        ],
    }
    assert (info["runtimeID"], info["instanceID"], info["environmentInstanceID"]) == (
        "rt",
        "inst",
        "inst",
    )
    assert (info["globalAccountID"], info["subaccountID"], info["instanceName"]) == (
        "ga-1",
        "sa",
        "rt",
    )
    assert (info["region"], info["platformRegion"]) == ("eu-central-1", "cf-eu10")
    assert info["lastReconcileTime"] == "2026-01-01T00:00:00Z"
    assert info["infrastructureConfig"] == {"kind": "InfrastructureConfig"}
    assert info["networkDetails"] == {
        "dualStackIPEnabled": True,
        "kubeAPIServer": {"acl": ["10.0.0.0/8"]},
    }
    # missing labels are left out, not written empty
    bare = runtime("rt", "ns")
    bare["metadata"]["labels"] = {}
    assert "globalAccountID" not in provisioning_info(bare, {})


def test_the_runtime_id_is_the_label_and_must_be_the_runtimes_name() -> None:
    body = runtime("rt", "ns")
    assert runtime_id(body) == "rt"
    assert runtime_id_mismatch(body) is None
    body["metadata"]["labels"].pop(RUNTIME_ID)
    assert runtime_id(body) == "rt"
    assert runtime_id_mismatch(body) is None
    body["metadata"]["labels"][RUNTIME_ID] = "someone-else"
    assert "differs from the Runtime's name" in (runtime_id_mismatch(body) or "")
    shoot = {"metadata": {"name": "s", "annotations": {SHOOT_RUNTIME_ID: "id-1"}}}
    assert foreign_shoot(shoot, "rt", "id-1") is None  # recorded by its runtime id
    assert foreign_shoot(shoot, "rt") is not None
