"""What the inventory encrypts, and where each ciphertext belongs.

The kubeconfig column and every `secret: true` configuration value are sealed with the store's
`Cipher`, each bound (associated data) to its place: `clusters.kubeconfig:<runtime ID>` and
`cluster_configs.components:<runtime ID>/<component>/<key>`. A sealed value is stored in the
components JSON as `{"$encrypted": "<base64>"}`; everything else stays readable for operators.
"""

from __future__ import annotations

import json
from typing import Any

from reconciler.model.cluster import KymaConfig
from reconciler.store.crypto import Cipher

ENCRYPTED = "$encrypted"


def _kubeconfig_context(runtime_id: str) -> str:
    return f"clusters.kubeconfig:{runtime_id}"


def _value_context(runtime_id: str, component: dict[str, Any], entry: dict[str, Any]) -> str:
    return f"cluster_configs.components:{runtime_id}/{component['component']}/{entry['key']}"


class Sealer:
    def __init__(self, cipher: Cipher) -> None:
        self.cipher = cipher

    def seal_kubeconfig(self, runtime_id: str, kubeconfig: str) -> bytes:
        return self.cipher.encrypt(kubeconfig.encode(), _kubeconfig_context(runtime_id))

    def open_kubeconfig(self, runtime_id: str, blob: bytes) -> str:
        return self.cipher.decrypt(blob, _kubeconfig_context(runtime_id)).decode()

    def seal_components(self, runtime_id: str, kyma: KymaConfig) -> list[dict[str, Any]]:
        """The components as stored: secret values encrypted."""
        sealed = []
        for component in kyma.model_dump(mode="json", by_alias=True)["components"]:
            for entry in component.get("configuration", []):
                if entry.get("secret"):
                    context = _value_context(runtime_id, component, entry)
                    entry["value"] = {
                        ENCRYPTED: self.cipher.encrypt_text(json.dumps(entry["value"]), context)
                    }
            sealed.append(component)
        return sealed

    def open_components(
        self, runtime_id: str, sealed: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The components as stored, secret values decrypted (a copy: `sealed` is untouched)."""
        opened = json.loads(json.dumps(sealed))
        for component in opened:
            for entry in component.get("configuration", []):
                value = entry.get("value")
                if entry.get("secret") and isinstance(value, dict) and ENCRYPTED in value:
                    context = _value_context(runtime_id, component, entry)
                    entry["value"] = json.loads(self.cipher.decrypt_text(value[ENCRYPTED], context))
        return list(opened)
