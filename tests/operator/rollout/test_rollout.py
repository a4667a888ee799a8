"""Progressive rollout on the test bed: one scenario walking a module's releases through a
ModuleRollout's waves, four Kymas on the control plane (`sync: "false"`, each module in its own
namespace): a good release paused and resumed by the CLI rolls through every wave in order; an
operator replaced mid-wave continues the same wave; a release whose Deployment never becomes
ready halts after the first wave with only that wave on it; its fix starts again from the first
wave; with `onFailure: Rollback` a broken release goes back to the previous version, and so does
one aborted by hand."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from reconciler.charts.sources import ChartCache
from reconciler.cli.main import app as main_app
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import API_VERSION, SYNC
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.wiring import Operator
from reconciler.util.clock import utcnow
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.operator.conftest import SETTINGS
from tests.operator.modules import plain_chart, release_meta, template
from tests.operator.running import running

MODULE = "rollme"
WAVES = {"k1": "canary", "k2": "early", "k3": "rest", "k4": "rest"}


class Bed:
    def __init__(self, control: Cluster, namespace: str, charts: Path, prefix: str) -> None:
        self.control, self.ns, self.charts, self.prefix = control, namespace, charts, prefix

    def kyma(self, short: str) -> str:
        return f"{self.prefix}-{short}"

    async def get(self, kind: str, name: str) -> dict[str, Any] | None:
        body = {
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": {"name": name, "namespace": self.ns},
        }
        live = await self.control.get(body)
        return None if live is None else live.raw

    async def release(self, version: str, *, broken: bool = False) -> None:
        path = plain_chart(self.charts, MODULE, version, broken=broken)
        await self.control.apply(template(self.ns, MODULE, version, path, data=False))
        await self.control.apply(release_meta(self.ns, MODULE, {"regular": version}))

    async def policy(self, early_soak: float = 0.5, **spec: Any) -> None:
        waves = [
            {"name": "canary", "selector": {"matchLabels": {"tier": "canary"}}, "soakSeconds": 0.5},
            {
                "name": "early",
                "selector": {"matchLabels": {"tier": "early"}},
                "soakSeconds": early_soak,
            },
            {"name": "rest", "soakSeconds": 0.5},
        ]
        body = {
            "apiVersion": API_VERSION,
            "kind": "ModuleRollout",
            "metadata": {"name": MODULE, "namespace": self.ns},
            "spec": {"module": MODULE, "waves": waves, "gate": {"deadlineSeconds": 60}, **spec},
        }
        await self.control.apply(body)

    async def versions(self) -> dict[str, tuple[str, str]]:
        """Kyma (short name) -> (its Manifest's version, state)."""
        out = {}
        for short in WAVES:
            kyma = await self.get("Kyma", self.kyma(short))
            modules = ((kyma or {}).get("status") or {}).get("modules") or []
            manifest = modules[0].get("manifest") if modules else None
            body = await self.get("Manifest", manifest["metadata"]["name"]) if manifest else None
            if body is None:
                out[short] = ("", "")
                continue
            state = str((body.get("status") or {}).get("state") or "")
            out[short] = (str(body["spec"].get("version")), state)
        return out

    async def release_status(self, version: str) -> dict[str, Any] | None:
        body = await self.get("ModuleRollout", MODULE)
        releases = ((body or {}).get("status") or {}).get("releases") or []
        return next((r for r in releases if r["version"] == version), None)

    async def phase(self, version: str, phase: str, timeout: float = 60) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            found = await self.release_status(version)
            return found if found and found["phase"] == phase else None

        try:
            result: dict[str, Any] = await poll_until(
                check, timeout=timeout, what=f"{version} {phase}", interval=0.1
            )
        except Exception as exc:
            raise AssertionError(
                f"{exc}: {await self.release_status(version)}, {await self.versions()}"
            ) from None
        return result

    async def all_on(self, version: str, timeout: float = 60) -> None:
        async def check() -> bool:
            return all(v == (version, "Ready") for v in (await self.versions()).values())

        try:
            await poll_until(check, timeout=timeout, what=f"all on {version}", interval=0.2)
        except Exception as exc:
            raise AssertionError(f"{exc}: {await self.versions()}") from None


async def cli(kubeconfig: Path, *args: str) -> str:
    """`reconciler operator rollout ...`, in a thread of this process (its own event loop)."""
    command = ["operator", "rollout", *args, "--kubeconfig", str(kubeconfig)]
    result = await asyncio.to_thread(CliRunner().invoke, main_app, command)
    assert result.exit_code == 0, result.output
    return str(result.output)


async def test_a_release_rolls_through_waves_halts_resumes_and_rolls_back(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    settings = SETTINGS.model_copy(update={"module_namespace": "{kyma}"})
    kubeconfig = Path(kube_cluster.kubeconfig)
    prefix = f"ro{namespace[-6:]}"
    async with await Cluster.connect(kubeconfig) as control:
        await install_crds(control)
        bed = Bed(control, namespace, tmp_path / "charts", prefix)
        await bed.release("1.0.0")
        for short, wave in WAVES.items():
            labels = {SYNC: "false"} | ({"tier": wave} if wave != "rest" else {})
            await control.apply(
                {
                    "apiVersion": API_VERSION,
                    "kind": "Kyma",
                    "metadata": {"name": bed.kyma(short), "namespace": namespace, "labels": labels},
                    "spec": {"channel": "regular", "modules": [{"name": MODULE}]},
                }
            )
        await bed.policy()
        operator = Operator(control, ChartCache(tmp_path / "cache"), settings)
        async with running(operator, kubeconfig, namespace):
            await bed.all_on("1.0.0")
            await bed.phase("1.0.0", "Complete")  # the version in place is adopted

            # a good release, paused: only the first wave takes it until it is resumed
            await cli(kubeconfig, "pause", MODULE, "-n", namespace)
            await bed.release("1.1.0")
            paused = await bed.phase("1.1.0", "Paused")
            assert paused["wave"] == 0

            async def canary_counted() -> dict[str, Any] | None:  # while paused
                found = await bed.release_status("1.1.0")
                return found if found and found["waves"][0]["ready"] == 1 else None

            counted = await poll_until(canary_counted, timeout=60, what="canary Ready on 1.1.0")
            assert (counted["phase"], counted["wave"]) == ("Paused", 0)
            assert {k: v[0] for k, v in (await bed.versions()).items()} == {
                "k1": "1.1.0",
                "k2": "1.0.0",
                "k3": "1.0.0",
                "k4": "1.0.0",
            }
            await cli(kubeconfig, "resume", MODULE, "-n", namespace)
            order: list[str] = []

            async def done_in_order() -> bool:
                for short, (version, _) in (await bed.versions()).items():
                    if version == "1.1.0" and short not in order:
                        order.append(short)
                found = await bed.release_status("1.1.0")
                return bool(found and found["phase"] == "Complete")

            await poll_until(done_in_order, timeout=60, what="1.1.0 complete", interval=0.05)
            assert order[:2] == ["k1", "k2"]
            assert set(order[2:]) == {"k3", "k4"}
            await bed.all_on("1.1.0")
            shown = json.loads(
                await cli(kubeconfig, "status", MODULE, "-n", namespace, "-o", "json")
            )
            release = next(r for r in shown["releases"] if r["version"] == "1.1.0")
            assert [w["ready"] for w in release["waves"]] == [1, 1, 2]
            assert release["previous"] == "1.0.0"

            # the operator replaced mid-wave: the next one goes on with the same wave (the soak
            # is long enough for a replacement on a loaded machine: 6 s was not, under CI load)
            await bed.policy(early_soak=20)
            await bed.release("1.2.0")

            async def in_early_wave() -> dict[str, Any] | None:
                found = await bed.release_status("1.2.0")
                return found if found and found["wave"] == 1 else None

            early = await poll_until(in_early_wave, timeout=60, what="1.2.0 in wave early")
        operator = Operator(control, ChartCache(tmp_path / "cache"), settings)
        async with running(operator, kubeconfig, namespace):
            wave = {"namespace": namespace, "rollout": MODULE, "module": MODULE}
            wave["channel"] = "regular"

            async def counted() -> float | None:
                return operator.metrics.registry.get_sample_value(
                    "reconciler_operator_rollout_wave", wave
                )

            assert await poll_until(counted, timeout=30, what="the new operator's count") == 1
            again = await bed.release_status("1.2.0")
            assert again is not None
            assert (again["wave"], again["waveStarted"]) == (1, early["waveStarted"])
            await bed.policy()  # a shorter soak: the wave, long past it, passes at once
            await bed.phase("1.2.0", "Complete")
            await bed.all_on("1.2.0")

            # a broken release halts after the first wave; only the canary has it
            await bed.policy(gate={"deadlineSeconds": 3})
            await bed.release("1.3.0", broken=True)
            halted = await bed.phase("1.3.0", "Halted")
            assert halted["wave"] == 0
            assert "wave canary: 1 of 1 Kymas not Ready on 1.3.0 within 3s" in halted["message"]
            assert [f["kyma"] for f in halted["failing"]] == [bed.kyma("k1")]
            assert halted["failing"][0]["manifest"]
            versions = await bed.versions()
            assert versions["k1"][0] == "1.3.0"
            assert {versions[k] for k in ("k2", "k3", "k4")} == {("1.2.0", "Ready")}
            events = await control.client.request(
                "GET",
                f"/api/v1/namespaces/{namespace}/events",
                params={"fieldSelector": f"involvedObject.name={MODULE}"},
            )
            reasons = {e["reason"] for e in events["items"]}
            assert {"RolloutStarted", "WaveStarted", "RolloutHalted", "RolloutComplete"} <= reasons
            text = await cli(kubeconfig, "status", "-n", namespace)
            assert "Halted" in text
            assert bed.kyma("k1") in text

            # its fix starts again from the first wave and reaches everyone
            await bed.policy(gate={"deadlineSeconds": 60})
            await bed.release("1.3.1")
            fixed = await bed.phase("1.3.1", "Complete")
            assert fixed["previous"] == "1.2.0"
            await bed.all_on("1.3.1")

            # with onFailure Rollback a broken release goes back to the previous version
            await bed.policy(gate={"deadlineSeconds": 3}, onFailure="Rollback")
            await bed.release("1.4.0", broken=True)
            await bed.phase("1.4.0", "RolledBack")
            await bed.all_on("1.3.1")

            # aborted by hand while paused in the first wave: under Rollback that wave goes back
            await bed.policy(gate={"deadlineSeconds": 60}, onFailure="Rollback", paused=True)
            await bed.release("1.5.0")
            await bed.phase("1.5.0", "Paused")

            async def canary_on_new() -> bool:
                return (await bed.versions())["k1"] == ("1.5.0", "Ready")

            await poll_until(canary_on_new, timeout=60, what="the canary on 1.5.0")
            assert "aborted 1.5.0" in await cli(kubeconfig, "abort", MODULE, "-n", namespace)
            aborted = await bed.phase("1.5.0", "RolledBack")
            assert aborted["message"] == "aborted by hand"
            await bed.all_on("1.3.1")
            metrics = operator.metrics.registry
            labels = {
                "namespace": namespace,
                "rollout": MODULE,
                "module": MODULE,
                "channel": "regular",
            }
            assert (
                metrics.get_sample_value(
                    "reconciler_operator_rollout_phase", labels | {"phase": "RolledBack"}
                )
                == 1
            )
            assert (
                metrics.get_sample_value(
                    "reconciler_operator_rollout_stops_total",
                    {"namespace": namespace, "module": MODULE, "phase": "RolledBack"},
                )
                == 1
            )


async def test_a_process_that_just_started_judges_a_release_on_the_kymas_it_listed(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    """Before its watches delivered the fleet, a new operator's first look at a release in its
    second wave must not see that wave empty (and pass it at once): it lists the Kymas and
    Manifests itself first."""
    kubeconfig = Path(kube_cluster.kubeconfig)
    async with await Cluster.connect(kubeconfig) as control:
        await install_crds(control)
        bed = Bed(control, namespace, tmp_path / "charts", "fresh")
        await bed.release("1.1.0")
        for short, wave in (("k1", "canary"), ("k2", "early")):
            await control.apply(
                {
                    "apiVersion": API_VERSION,
                    "kind": "Kyma",
                    "metadata": {
                        "name": bed.kyma(short),
                        "namespace": namespace,
                        "labels": {SYNC: "false", "tier": wave},
                    },
                    "spec": {"channel": "regular", "modules": [{"name": MODULE}]},
                }
            )
        await bed.policy(early_soak=3600)
        policy = await bed.get("ModuleRollout", MODULE)
        assert policy is not None
        now = utcnow().isoformat().replace("+00:00", "Z")
        release = {
            "module": MODULE,
            "channel": "regular",
            "version": "1.1.0",
            "previous": "1.0.0",
            "phase": "Progressing",
            "wave": 1,
            "waveStarted": now,
            "since": now,
        }
        await ControlPlane(control).set_status(policy, {"releases": [release]})
        operator = Operator(control, ChartCache(tmp_path / "cache"), SETTINGS)  # not running
        await operator.rollouts.handle(namespace, MODULE)
        judged = await bed.release_status("1.1.0")
        assert judged is not None
        assert (judged["phase"], judged["wave"]) == ("Progressing", 1)
        assert [w["size"] for w in judged["waves"]] == [1, 1, 0]
