"""One kubeconfig module: client text that would run a command or read a file here is refused
naming the field, the operator's own files are trusted, and every credential is known to the
scrubber."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.errors import KubeconfigError
from reconciler.kube.kubeconfig import (
    check_text,
    credential_values,
    load_kubeconfig,
    scrubber,
)
from reconciler.util.secrecy import REDACTED

TOKEN = "inline-token-0123456789"


def kubeconfig(user: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "c", "cluster": {"server": "https://127.0.0.1:1", **(cluster or {})}}
            ],
            "users": [{"name": "u", "user": user if user is not None else {"token": TOKEN}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    )


@pytest.mark.parametrize(
    ("user", "cluster", "field"),
    [
        ({"exec": {"apiVersion": "v1", "command": "/bin/sh"}}, {}, "exec"),
        (
            {"auth-provider": {"name": "gcp", "config": {"cmd-path": "/bin/sh"}}},
            {},
            "auth-provider",
        ),
        ({"tokenFile": "/etc/shadow"}, {}, "tokenFile"),
        ({"client-certificate": "/etc/cert", "client-key-data": "a2V5"}, {}, "client-certificate"),
        ({"client-key": "/etc/key", "client-certificate-data": "Y2VydA=="}, {}, "client-key"),
        ({"token": TOKEN}, {"certificate-authority": "/etc/ca.pem"}, "certificate-authority"),
    ],
)
def test_client_text_with_host_access_is_refused_naming_the_field(
    user: dict[str, Any], cluster: dict[str, Any], field: str
) -> None:
    text = kubeconfig(user, cluster)
    with pytest.raises(KubeconfigError, match=f"`{field}`"):
        check_text(text)
    with pytest.raises(KubeconfigError, match=f"`{field}`"):
        load_kubeconfig(text, text=True)
    check_text(text, allow_host_access=True)


def test_not_a_mapping_or_not_yaml_is_refused_without_quoting_it() -> None:
    with pytest.raises(KubeconfigError, match="not a YAML mapping"):
        check_text(TOKEN)
    with pytest.raises(KubeconfigError, match="line 2") as raised:
        check_text(f"token: {TOKEN}\n  bad: [\n")
    assert TOKEN not in str(raised.value)


def test_the_operators_own_kubeconfig_file_may_use_exec(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(kubeconfig({"exec": {"apiVersion": "v1", "command": "gcloud-login"}}))
    assert load_kubeconfig(path).cluster.server == "https://127.0.0.1:1"
    assert load_kubeconfig(str(path)).cluster.server == "https://127.0.0.1:1"


def test_credential_values_cover_user_fields_certificates_and_nested_provider_config() -> None:
    text = kubeconfig(
        {
            "token": TOKEN,
            "client-key-data": "a2V5LWRhdGEtdmFsdWU=",
            "username": "admin",
            "auth-provider": {"config": {"id-token": "id-token-value-99"}},
        },
        {"certificate-authority-data": "Y2EtZGF0YS12YWx1ZQ=="},
    )
    values = credential_values(text)
    for secret in (TOKEN, "a2V5LWRhdGEtdmFsdWU=", "id-token-value-99", "Y2EtZGF0YS12YWx1ZQ=="):
        assert secret in values
    assert "https://127.0.0.1:1" not in values
    assert "admin" not in values
    broken = f"users:\n  - token: {TOKEN}\n   bad: [\n"
    assert TOKEN in credential_values(broken)  # found by pattern when the text does not parse


def test_the_cluster_scrubber_removes_kubeconfig_credentials_and_secret_values() -> None:
    text = kubeconfig()
    scrub = scrubber(text, ["hunter2-secret-value", {"nested": "deep-secret-value"}])
    message = f"bad {TOKEN} label hunter2-secret-value! and deep-secret-value; {text}"
    clean = scrub(message)
    for secret in (TOKEN, "hunter2-secret-value", "deep-secret-value", text.strip()):
        assert secret not in clean
    assert clean.startswith(f"bad {REDACTED} label {REDACTED}!")
