"""Runtime -> Shoot, pure: a table of cases per provider (fixtures/shoots/*.yaml: a Runtime's
differences from the sample, for an update the Shoot as Gardener has it, and the Shoot KIM's
converter makes of it), and the Runtimes KIM refuses."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from reconciler.cli.infra import app
from reconciler.devcluster import shootvalidation
from reconciler.infra.converter import ConversionError
from reconciler.infra.converter.acl import AclAddresses, AclConfigError, addresses_of
from reconciler.infra.converter.common import structured_auth_configmap
from reconciler.infra.converter.config import ConverterConfigError, load_converter_config
from reconciler.infra.shoot import AuditLogError, refusal_reason, shoot_for
from reconciler.infra.skr import oidc_configs
from reconciler.model.infrastructure import RuntimeSpec
from tests.infra.samples import CONVERTER, CONVERTER_CONFIG, runtime

CASES = sorted((Path(__file__).parent / "fixtures" / "shoots").glob("*.yaml"))
NAMESPACE = "garden-kyma-dev"


def merged(base: Any, change: Any) -> Any:
    """`change` over `base`: mappings merged, a None value removes the key, the rest replaced."""
    if not isinstance(base, dict) or not isinstance(change, dict):
        return copy.deepcopy(change)
    result = copy.deepcopy(base)
    for key, value in change.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merged(result.get(key), value)
    return result


def case_runtime(case: dict[str, Any]) -> dict[str, Any]:
    body = merged(runtime("rt-conv", "kcp-system", shoot="conv-shoot"), case.get("runtime") or {})
    body["metadata"]["generation"] = 2
    return dict(body)


def existing_shoot(case: dict[str, Any]) -> dict[str, Any] | None:
    if "existing" not in case:
        return None
    created = shoot_for(case_runtime({}), NAMESPACE, CONVERTER)
    return {**created, "spec": merged(created["spec"], case["existing"])}


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_a_runtime_becomes_the_shoot_kim_makes_of_it(path: Path) -> None:
    case = yaml.safe_load(path.read_text())
    shoot = shoot_for(case_runtime(case), NAMESPACE, CONVERTER, existing_shoot(case))
    assert shoot["metadata"] == case["shoot"]["metadata"]
    assert shoot["spec"] == case["shoot"]["spec"]


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_every_case_is_a_shoot_the_simulated_gardener_accepts(path: Path) -> None:
    case = yaml.safe_load(path.read_text())
    spec = case["shoot"]["spec"]
    assert shootvalidation.validate(spec) == []
    existing = existing_shoot(case)
    if existing is not None:
        assert shootvalidation.validate_update(spec, existing["spec"]) == []


def test_the_update_after_an_auto_upgrade_would_be_refused_without_keeping_gardeners_choices() -> (
    None
):
    """What the Runtime alone says (1.33.4, image 1592.1.0, zones a-b-c) downgrades and
    reorders: Gardener refuses it; the converter's Shoot (the case above) passes."""
    case = yaml.safe_load((CASES[0].parent / "aws-update-after-auto-upgrade.yaml").read_text())
    existing = existing_shoot(case)
    assert existing is not None
    naive = shoot_for(case_runtime(case), NAMESPACE, CONVERTER)
    fields = {c.field for c in shootvalidation.validate_update(naive["spec"], existing["spec"])}
    assert {
        "spec.kubernetes.version",
        "spec.provider.workers[0].machine.image.version",
        "spec.provider.workers[0].zones",
    } <= fields


@pytest.mark.parametrize(
    ("label", "value"),
    [("kyma-project.io/subaccount-id", None), ("kyma-project.io/broker-plan-name", "")],
    ids=["missing", "empty"],
)
def test_a_runtime_without_a_required_label_is_refused(label: str, value: str | None) -> None:
    body = runtime("rt-x", "kcp-system")
    if value is None:
        del body["metadata"]["labels"][label]
    else:
        body["metadata"]["labels"][label] = value
    with pytest.raises(ConversionError, match=f"missing required label {label}") as caught:
        shoot_for(body, NAMESPACE, CONVERTER)
    assert refusal_reason(caught.value) == "ConversionErr"


def test_without_a_mandatory_audit_log_tenant_the_runtime_is_refused() -> None:
    config = CONVERTER.model_copy(
        update={"audit_logging": CONVERTER.audit_logging.model_copy(update={"mandatory": True})}
    )
    body = runtime("rt-audit", "kcp-system")  # aws eu-central-1: no tenant configured
    with pytest.raises(AuditLogError, match="no audit-log tenant for provider aws") as caught:
        shoot_for(body, NAMESPACE, config)
    assert refusal_reason(caught.value) == "AuditLogErr"
    body["spec"]["shoot"]["region"] = "eu-west-1"
    assert shoot_for(body, NAMESPACE, config)["spec"]["extensions"][-1]["type"] == (
        "shoot-auditlog-service"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"additionalWorkers": None, "workers": []}, "exactly one main worker pool"),
        ({"type": "azure"}, "Azure zone 'eu-central-1a' is not a number"),
        (
            {
                "type": "gcp",
                "workers": [{"name": "w", "machine": {"type": "n2"}, "minimum": 1, "maximum": 1}],
            },
            "GCP needs at least one zone",
        ),
    ],
    ids=["no-main-pool", "azure-zone-names", "gcp-without-zones"],
)
def test_a_layout_no_provider_extension_accepts_is_refused(
    change: dict[str, Any], message: str
) -> None:
    body = runtime("rt-layout", "kcp-system")
    body["spec"]["shoot"]["provider"] = merged(body["spec"]["shoot"]["provider"], change)
    with pytest.raises(ConversionError, match=message):
        shoot_for(body, NAMESPACE, CONVERTER)


def test_the_structured_authentication_configmap_uses_the_runtime_oidc_or_the_operators() -> None:
    own = RuntimeSpec.model_validate(runtime("rt-oidc", "kcp-system")["spec"])
    configmap = structured_auth_configmap(own, NAMESPACE, CONVERTER)
    assert configmap["metadata"]["name"] == f"structured-auth-config-{own.shoot.name}"
    jwt = yaml.safe_load(configmap["data"]["config.yaml"])["jwt"][0]
    assert jwt["issuer"] == {"url": "https://issuer.example.com", "audiences": ["kyma"]}
    assert jwt["claimMappings"]["username"] == {"claim": "sub", "prefix": "-"}
    broker = runtime("rt-oidc", "kcp-system")
    broker["spec"]["shoot"]["kubernetes"]["kubeAPIServer"]["oidcConfig"] = {}
    default = structured_auth_configmap(
        RuntimeSpec.model_validate(broker["spec"]), NAMESPACE, CONVERTER
    )
    jwt = yaml.safe_load(default["data"]["config.yaml"])["jwt"][0]
    assert jwt["issuer"]["url"] == "https://operators.example.com"


def test_kims_cluster_section_names_the_shared_ias_tenant(tmp_path: Path) -> None:
    """KIM's whole file: `cluster.defaultSharedIASTenant` beside `converter` is the default
    OIDC of a Runtime without its own (structured authentication and OpenIDConnect)."""
    path = tmp_path / "config.yaml"
    kim = yaml.safe_load(CONVERTER_CONFIG.read_text())
    tenant = {"clientID": "shared", "issuerURL": "https://ias.example.com"}
    path.write_text(yaml.safe_dump({**kim, "cluster": {"defaultSharedIASTenant": tenant}}))
    config = load_converter_config(path)
    assert config.cluster.default_shared_ias_tenant is not None
    broker = runtime("rt-oidc", "kcp-system")
    broker["spec"]["shoot"]["kubernetes"]["kubeAPIServer"]["oidcConfig"] = {}
    spec = RuntimeSpec.model_validate(broker["spec"])
    configmap = structured_auth_configmap(spec, NAMESPACE, config)
    jwt = yaml.safe_load(configmap["data"]["config.yaml"])["jwt"][0]
    assert jwt["issuer"] == {"url": "https://ias.example.com", "audiences": ["shared"]}
    (shared,) = oidc_configs(spec, config.cluster.default_shared_ias_tenant)
    assert (shared.issuer_url, shared.client_id) == ("https://ias.example.com", "shared")
    assert CONVERTER.cluster.default_shared_ias_tenant is None  # none configured: as before


def test_a_bad_converter_configuration_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("converter:\n  kubernetes: {defaultVersion: ''}\n")
    with pytest.raises(ConverterConfigError) as caught:
        load_converter_config(path)
    message = str(caught.value)
    assert message.startswith(f"RECONCILER_INFRA_CONVERTER_CONFIG ({path}): ")
    assert "kubernetes.defaultVersion" in message
    assert "\n" not in message
    with pytest.raises(ConverterConfigError, match="RECONCILER_INFRA_CONVERTER_CONFIG"):
        load_converter_config(tmp_path / "missing.yaml")


def test_infra_run_refuses_a_bad_converter_configuration_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"converter": {"machineImage": {"defaultName": "gardenlinux"}}}')
    monkeypatch.setenv("RECONCILER_INFRA_CONVERTER_CONFIG", str(path))
    result = CliRunner().invoke(app, ["run", "--garden-kubeconfig", str(tmp_path / "none")])
    assert result.exit_code != 0
    assert f"RECONCILER_INFRA_CONVERTER_CONFIG ({path}): " in result.output
    assert "kubernetes: Field required" in result.output


# --- the API-server ACL extension (KIM's apiServerACL.go and its extender) -------------------

KIM_ADDRESSES = AclAddresses(("192.168.1.0/24",), "172.16.0.1/32")
"""KIM's test values: one operator CIDR, the control plane's NAT address."""
NVIDIA = {"type": "shoot-nvidia-openshell", "disabled": False}


ZONES = {"aws": "eu-central-1a", "azure": "1", "gcp": "europe-west3-a"}


def acl_runtime(cidrs: list[str] | None, provider: str = "aws") -> dict[str, Any]:
    body = case_runtime({})
    shoot = body["spec"]["shoot"]
    shoot["provider"]["type"] = provider
    shoot["provider"]["workers"][0]["zones"] = [ZONES[provider]]
    if cidrs is not None:
        shoot["kubernetes"]["kubeAPIServer"]["acl"] = {"allowedCIDRs": cidrs}
    return body


def enabled_acl(cidrs: list[str]) -> dict[str, Any]:
    rule = {"action": "ALLOW", "cidrs": cidrs, "type": "remote_ip"}
    return {"type": "acl", "providerConfig": {"rule": rule}, "disabled": False}


def extensions_of(shoot: dict[str, Any]) -> list[dict[str, Any]]:
    return list(shoot["spec"]["extensions"])


def acl_of(shoot: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in extensions_of(shoot) if e["type"] == "acl"]


@pytest.mark.parametrize(
    ("cidrs", "provider", "addresses", "expected"),
    [
        pytest.param(
            ["10.0.0.1/32", "10.0.0.2/32"],
            "aws",
            KIM_ADDRESSES,
            [enabled_acl(["10.0.0.1/32", "10.0.0.2/32", "192.168.1.0/24", "172.16.0.1/32"])],
            id="user-operator-kcp-in-order",
        ),
        pytest.param(
            ["172.16.0.1/32", "192.168.1.0/24"],
            "azure",
            KIM_ADDRESSES,
            [enabled_acl(["172.16.0.1/32", "192.168.1.0/24", "192.168.1.0/24", "172.16.0.1/32"])],
            id="azure-no-deduplication",
        ),
        pytest.param([], "aws", KIM_ADDRESSES, [], id="empty-cidrs-none"),
        pytest.param(None, "aws", KIM_ADDRESSES, [], id="no-acl-none"),
        pytest.param(["10.0.0.1/32"], "gcp", KIM_ADDRESSES, [], id="gcp-none"),
        pytest.param(["10.0.0.1/32"], "aws", None, [], id="switched-off-none"),
    ],
)
def test_a_new_shoot_gets_the_acl_extension_as_kim_builds_it(
    cidrs: list[str] | None,
    provider: str,
    addresses: AclAddresses | None,
    expected: list[dict[str, Any]],
) -> None:
    shoot = shoot_for(acl_runtime(cidrs, provider), NAMESPACE, CONVERTER, acl=addresses)
    assert acl_of(shoot) == expected
    assert shootvalidation.validate(shoot["spec"]) == []


@pytest.mark.parametrize(
    ("on_the_shoot", "cidrs", "expected"),
    [
        pytest.param(
            None,
            ["10.0.0.1/32"],
            enabled_acl(["10.0.0.1/32", "192.168.1.0/24", "172.16.0.1/32"]),
            id="gained",
        ),
        pytest.param(
            enabled_acl(["10.9.9.9/32"]),
            ["10.0.0.1/32"],
            enabled_acl(["10.0.0.1/32", "192.168.1.0/24", "172.16.0.1/32"]),
            id="changed",
        ),
        pytest.param(
            enabled_acl(["10.9.9.9/32"]), None, {"type": "acl", "disabled": True}, id="dropped"
        ),
        pytest.param(
            enabled_acl(["10.9.9.9/32"]), [], {"type": "acl", "disabled": True}, id="emptied"
        ),
        pytest.param(None, None, None, id="never"),
    ],
)
def test_an_update_adds_changes_or_disables_the_acl_extension_and_keeps_the_others(
    on_the_shoot: dict[str, Any] | None,
    cidrs: list[str] | None,
    expected: dict[str, Any] | None,
) -> None:
    created = shoot_for(case_runtime({}), NAMESPACE, CONVERTER)
    foreign = {"type": "shoot-foreign", "providerConfig": {"x": 1}}
    before = [foreign, *extensions_of(created)]
    if on_the_shoot is not None:
        before.insert(1, on_the_shoot)
    before.append(NVIDIA)  # the Runtime does not ask for it: switched off in place
    existing = {**created, "spec": {**created["spec"], "extensions": before}}
    addresses = KIM_ADDRESSES if cidrs else None  # read only when the Runtime needs them
    shoot = shoot_for(acl_runtime(cidrs), NAMESPACE, CONVERTER, existing, addresses)
    after = extensions_of(shoot)
    assert [e["type"] for e in after][: len(before)] == [e["type"] for e in before]
    assert after[0] == foreign
    assert acl_of(shoot) == ([] if expected is None else [expected])
    if on_the_shoot is not None:
        assert after[1] == expected  # in the place it had
    others = [e for e in after if e["type"] not in ("acl", NVIDIA["type"])]
    assert others == [e for e in before if e["type"] not in ("acl", NVIDIA["type"])]


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        (None, "key acl-list.json is missing"),
        ({"acl-list.json": '["1.2.3.4/32"]'}, "key kcp-external-nat-ip.json is missing"),
        ({"acl-list.json": "[1.2.", "kcp-external-nat-ip.json": '"5.6.7.8/32"'}, "not JSON"),
        (
            {"acl-list.json": '"1.2.3.4/32"', "kcp-external-nat-ip.json": '"x"'},
            "acl-list.json is not a list of strings",
        ),
        (
            {"acl-list.json": "[]", "kcp-external-nat-ip.json": '["5.6.7.8/32"]'},
            "kcp-external-nat-ip.json is not a string",
        ),
    ],
)
def test_a_malformed_acl_configmap_is_a_conversion_error_naming_it(
    data: dict[str, str] | None, complaint: str
) -> None:
    with pytest.raises(AclConfigError) as caught:
        addresses_of("kcp-system/kcp-acl", data)
    assert str(caught.value).startswith("ACL ConfigMap kcp-system/kcp-acl: ")
    assert complaint in str(caught.value)
    assert refusal_reason(caught.value) == "ConversionErr"


def test_the_acl_configmap_as_kim_reads_it() -> None:
    data = {
        "acl-list.json": '["192.168.1.0/24", "10.1.0.0/16"]',
        "kcp-external-nat-ip.json": '"172.16.0.1/32"',
    }
    assert addresses_of("kcp-acl", data) == AclAddresses(
        ("192.168.1.0/24", "10.1.0.0/16"), "172.16.0.1/32"
    )


def test_infra_run_refuses_the_acl_switched_on_without_its_configmap_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECONCILER_INFRA_CONVERTER_CONFIG", raising=False)  # no name in these
    monkeypatch.setenv("RECONCILER_INFRA_API_SERVER_ACL_ENABLED", "true")
    result = CliRunner().invoke(app, ["run", "--garden-kubeconfig", str(tmp_path / "none")])
    assert result.exit_code != 0
    assert "RECONCILER_INFRA_API_SERVER_ACL_ENABLED is on" in result.output
    assert "kubernetes.kubeApiServer.acl.configMapName" in result.output
