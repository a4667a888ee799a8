"""Stable generated values against the real apiserver, with a chart that uses genCA,
genSignedCert, randAlphaNum and checksum annotations over them (issue 11 A.7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.charts.render import Capabilities
from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.generated import differing_paths, keep_live
from reconciler.core.runner import ComponentReconciler
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import ChartRef, Task
from tests.helpers.charts import CONFIGMAPS, make_chart

CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "generated"


class CountingProvider(HelmChartProvider):
    renders = 0

    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        self.renders += 1
        return await super().render(task, capabilities)


def gen(namespace: str, **changes: Any) -> Task:
    base = Task("gen", namespace, "1", ChartRef(str(CHART)), timeout=60, wait=False)
    return Task(**{**base.__dict__, **changes})


async def snapshot(cluster: Cluster, namespace: str) -> dict[str, Any]:
    async def get(api_version: str, kind: str, name: str, ns: str = namespace) -> dict[str, Any]:
        meta = {"name": name, **({"namespace": ns} if ns else {})}
        live = await cluster.get({"apiVersion": api_version, "kind": kind, "metadata": meta})
        assert live is not None
        return live.raw

    tls = await get("v1", "Secret", "gen-webhook-tls")
    deployment = await get("apps/v1", "Deployment", "gen")
    webhook = await get(
        "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", f"gen-{namespace}", ""
    )
    return {
        "tls": tls["data"],
        "password": (await get("v1", "Secret", "gen-password"))["data"],
        "pod annotations": deployment["spec"]["template"]["metadata"]["annotations"],
        "generation": deployment["metadata"]["generation"],
        "caBundle": webhook["webhooks"][0]["clientConfig"]["caBundle"],
    }


async def test_generated_values_stay_until_regenerated_and_ca_bundle_matches_the_cert(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    provider = CountingProvider(ChartCache(tmp_path / "cache"))
    reconciler = ComponentReconciler(provider)
    try:
        assert (await reconciler.run(gen(namespace), cluster)).ok
        first = await snapshot(cluster, namespace)
        assert first["caBundle"] == first["tls"]["ca.crt"]

        again = await reconciler.run(gen(namespace, force=True), cluster)
        assert again.ok, again.error
        assert again.changed == []  # same certificate, password and checksums
        assert await snapshot(cluster, namespace) == first  # pods not rolled
        assert provider.renders == 3  # the generated paths were found with a second render

        once_more = await reconciler.run(gen(namespace, force=True), cluster)
        assert (once_more.changed, provider.renders) == ([], 4)  # recorded: one render

        upgraded = await reconciler.run(gen(namespace, configuration={"replicas": 2}), cluster)
        assert [k.name for k in upgraded.changed] == ["gen"]
        after_upgrade = await snapshot(cluster, namespace)
        assert after_upgrade["tls"] == first["tls"]
        assert after_upgrade["pod annotations"] == first["pod annotations"]

        rotated = await reconciler.run(gen(namespace, regenerate="r1"), cluster)
        assert rotated.ok, rotated.error
        new = await snapshot(cluster, namespace)
        assert new["tls"] != first["tls"]
        assert new["password"] != first["password"]
        assert new["caBundle"] == new["tls"]["ca.crt"] != first["caBundle"]

        same_token = await reconciler.run(gen(namespace, regenerate="r1", force=True), cluster)
        assert same_token.changed == []
    finally:
        await cluster.delete(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": f"gen-{namespace}"},
            }
        )


PASSWORD = """\
apiVersion: v1
kind: Secret
metadata:
  name: pw
stringData:
  password: {{ randAlphaNum 24 | quote }}
  user: {{ .Values.user | quote }}
"""


async def test_a_chart_renders_twice_only_when_it_may_vary_and_objects_exist(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    plain = make_chart(tmp_path, "plain", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["a"]})
    varying = make_chart(tmp_path, "varying", {"pw.yaml": PASSWORD}, {"user": "u1"})
    provider = CountingProvider(ChartCache(tmp_path / "cache"))
    reconciler = ComponentReconciler(provider)

    def task(chart: Path, component: str, **changes: Any) -> Task:
        base = Task(component, namespace, "1", ChartRef(str(chart)), timeout=60, wait=False)
        return Task(**{**base.__dict__, **changes})

    assert (await reconciler.run(task(plain, "plain"), cluster)).ok
    assert provider.renders == 1  # a first install: nothing exists whose values to keep
    changed = await reconciler.run(task(plain, "plain", configuration={"greeting": "hi"}), cluster)
    assert changed.ok, changed.error
    assert [key.name for key in changed.changed] == ["a"]
    assert provider.renders == 2  # new inputs over existing objects, and still one render

    assert (await reconciler.run(task(varying, "varying"), cluster)).ok
    assert provider.renders == 3
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pw", "namespace": namespace},
    }
    first = await cluster.get(secret)
    upgraded = await reconciler.run(task(varying, "varying", configuration={"user": "u2"}), cluster)
    assert upgraded.ok, upgraded.error
    assert provider.renders == 5  # randAlphaNum: a second render finds the generated path
    kept = await cluster.get(secret)
    assert first is not None
    assert kept is not None
    assert kept.raw["data"]["password"] == first.raw["data"]["password"]
    assert kept.raw["data"]["user"] != first.raw["data"]["user"]


def test_paths_that_differ_between_renders_are_found_as_deep_as_shapes_agree() -> None:
    first = {"a": {"b": 1, "c": [1, 2]}, "d": {"x": 1}, "e": [1]}
    second = {"a": {"b": 1, "c": [1, 3]}, "d": {"y": 1}, "e": [1, 2]}
    assert differing_paths(first, second) == [("a", "c", 1), ("d",), ("e",)]


def test_live_values_replace_rendered_ones_only_where_both_have_the_path() -> None:
    desired = KubeObject({"kind": "Secret", "data": {"p": "new", "q": "new"}, "list": [1]})
    live = KubeObject({"kind": "Secret", "data": {"p": "old"}, "list": []})
    kept = keep_live(desired, live, [("data", "p"), ("data", "q"), ("list", 0)])
    assert kept.raw == {"kind": "Secret", "data": {"p": "old", "q": "new"}, "list": [1]}
    assert desired.raw["data"]["p"] == "new"
