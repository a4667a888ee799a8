"""A real Kubernetes 1.20 apiserver accepts every object of the sample set (server-side dry run).

CRDs (the bundle and the charts' own crds/) are applied for real, as the reconciler's CRDs step
would, so that the custom resources can be validated against their schemas; everything else is
checked with a server-side apply dry run. Hooks are left out, as the reconciler leaves them out.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from reconciler.paths import find_binary
from reconciler.util.polling import poll_until
from tests.conftest import ClusterFactory
from tests.examples.sample import (
    CRDS_BUNDLE,
    Obj,
    applied,
    component_set,
    render,
    values_files,
)

pytestmark = pytest.mark.slow

BIG_CRD = CRDS_BUNDLE / "monitoring" / "prometheuses.monitoring.example.io.yaml"
FIELD_MANAGER = "reconciler"


class Kubectl:
    def __init__(self, kubeconfig: Path) -> None:
        binary = find_binary("kubectl")
        assert binary is not None, "kubectl is not available; run `make testbed`"
        self.base = [str(binary), "--kubeconfig", str(kubeconfig)]

    async def run(self, *args: str, stdin: str | None = None) -> tuple[int, str]:
        process = await asyncio.create_subprocess_exec(
            *self.base,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(
            process.communicate(stdin.encode() if stdin is not None else None), timeout=120
        )
        assert process.returncode is not None
        return process.returncode, out.decode()

    async def server_side_apply(self, *args: str, stdin: str | None = None) -> str:
        code, out = await self.run(
            "apply", "--server-side", f"--field-manager={FIELD_MANAGER}", *args, stdin=stdin
        )
        assert code == 0, out[-2000:]
        return out

    async def wait_established(self) -> None:
        """Every CRD in the cluster is Established."""
        not_yet: list[str] = []

        async def all_established() -> bool:
            code, out = await self.run("get", "crd", "-o", "json")
            assert code == 0, out[-2000:]
            not_yet[:] = [
                crd["metadata"]["name"]
                for crd in json.loads(out)["items"]
                if not any(
                    c["type"] == "Established" and c["status"] == "True"
                    for c in crd.get("status", {}).get("conditions") or []
                )
            ]
            return not not_yet

        await poll_until(all_established, timeout=60, what=lambda: f"CRDs {not_yet} Established")


async def test_the_big_crd_needs_server_side_apply(cluster_factory: ClusterFactory) -> None:
    kubectl = Kubectl((await cluster_factory()).kubeconfig)

    code, out = await kubectl.run("apply", "--dry-run=server", "-f", str(BIG_CRD))
    assert code != 0
    assert "Too long: must have at most 262144 bytes" in out

    await kubectl.server_side_apply("-f", str(BIG_CRD))
    await kubectl.wait_established()


async def test_every_chart_passes_a_server_side_dry_run(cluster_factory: ClusterFactory) -> None:
    kubectl = Kubectl((await cluster_factory()).kubeconfig)
    components = component_set()
    await kubectl.server_side_apply("--recursive", "-f", str(CRDS_BUNDLE))
    await kubectl.wait_established()
    for namespace in sorted({components.namespace_of(spec) for spec in components.all()}):
        code, out = await kubectl.run("create", "namespace", namespace)
        assert code == 0, out

    checked = 0
    for spec in components.all():
        for values in values_files(spec.name):
            objs = applied(render(spec.name, values))
            crds = [obj for obj in objs if obj["kind"] == "CustomResourceDefinition"]
            rest: list[Obj] = [obj for obj in objs if obj not in crds]
            if crds:
                await kubectl.server_side_apply("-f", "-", stdin=yaml.safe_dump_all(crds))
                await kubectl.wait_established()

            out = await kubectl.server_side_apply(
                "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(rest)
            )

            assert out.count("(server dry run)") == len(rest), f"{spec.name} {values}: {out}"
            checked += len(rest)
    assert checked > 40
