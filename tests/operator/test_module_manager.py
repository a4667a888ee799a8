"""The module resource sync loop end to end, with the example module manager
(`examples/module-manager/manager.py`) running as a kopf process in the control plane:
a remote user edits the module's custom resource -> ModuleConfig -> SyncResource -> the object
in the remote cluster, timed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from reconciler.devcluster.processes import tied_to_parent
from reconciler.model.lifecycle import API_VERSION, module_object_name
from reconciler.util.polling import poll_until
from tests.operator import modules
from tests.operator.conftest import World
from tests.operator.remote import MERGE

MANAGER = Path(__file__).parents[2] / "examples" / "module-manager" / "manager.py"
LOOP_SECONDS = 2.0


@contextlib.asynccontextmanager
async def _module_manager(kubeconfig: Path, namespace: str, log: Path) -> AsyncIterator[None]:
    with log.open("wb") as out:
        command = [
            sys.executable,
            "-m",
            "kopf",
            "run",
            "--standalone",
            "-n",
            namespace,
            str(MANAGER),
        ]
        process = await asyncio.create_subprocess_exec(
            *tied_to_parent(command),  # gone with a killed test run
            env={**os.environ, "KUBECONFIG": str(kubeconfig), "MODULE_NAME": "alpha"},
            stdout=out,
            stderr=out,
        )
        try:
            yield
        finally:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()


async def _settings(world: World) -> dict[str, Any] | None:
    configmap = await world.remote_configmap("alpha-settings")
    return None if configmap is None else dict(configmap.get("data") or {})


async def test_a_remote_edit_of_the_module_resource_reaches_the_remote_objects_within_2_s(
    world: World, tmp_path: Path
) -> None:
    await world.catalog()
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "m1", world.remote_kubeconfig)
    )
    await world.control.apply(
        modules.kyma(world.namespace, "m1", "regular", [{"name": "alpha", "managed": True}])
    )
    await world.kyma_state("m1", "Ready")
    config = await world.until(
        lambda: world.get("ModuleConfig", module_object_name("m1", "alpha")), "ModuleConfig"
    )
    assert config["spec"]["config"] == {"replicas": 1}
    assert config["spec"]["resource"]["metadata"] == {
        "name": "default-alpha",
        "namespace": "kyma-system",
    }

    assert world.control_kubeconfig is not None
    async with _module_manager(world.control_kubeconfig, world.namespace, tmp_path / "mm.log"):
        first = await world.until(lambda: _settings(world), "alpha-settings in the remote cluster")
        assert first == {"replicas": "1"}
        path = f"/apis/{modules.CRD_GROUP}/v1/namespaces/kyma-system/alphas/default-alpha"
        started = time.monotonic()
        await world.remote.client.request(
            "PATCH", path, body={"spec": {"message": "hello"}}, content_type=MERGE
        )

        async def after(check: Callable[[], Awaitable[bool]], what: str) -> float:
            await poll_until(check, timeout=30, what=what, interval=0.02, max_interval=0.05)
            return time.monotonic() - started

        async def configured() -> bool:
            config = await world.get("ModuleConfig", module_object_name("m1", "alpha")) or {}
            return bool(config.get("spec", {}).get("config", {}).get("message") == "hello")

        async def written() -> bool:
            sync = (
                await world.get("SyncResource", f"{module_object_name('m1', 'alpha')}-sync") or {}
            )
            objects = sync.get("spec", {}).get("objects") or [{}]
            return bool(objects[0].get("data", {}).get("message") == "hello")

        async def arrived() -> bool:
            return ((await _settings(world)) or {}).get("message") == "hello"

        config_at, sync_at, elapsed = await asyncio.gather(
            after(configured, "hello in the ModuleConfig"),
            after(written, "hello in the SyncResource"),
            after(arrived, "hello in alpha-settings"),
        )
    print(
        f"remote edit -> ModuleConfig {config_at:.2f} s -> SyncResource {sync_at:.2f} s "
        f"-> remote object {elapsed:.2f} s"
    )
    sync = await world.get("SyncResource", f"{module_object_name('m1', 'alpha')}-sync")
    assert sync is not None
    assert [o["state"] for o in sync["status"]["objects"]] == ["Applied"]
    assert elapsed <= LOOP_SECONDS


async def test_a_module_config_edited_by_someone_else_is_put_back(world: World) -> None:
    await world.catalog()
    await world.control.apply(
        modules.kubeconfig_secret(world.namespace, "m2", world.remote_kubeconfig)
    )
    await world.control.apply(
        modules.kyma(world.namespace, "m2", "regular", [{"name": "alpha", "managed": True}])
    )
    await world.until(
        lambda: world.get("ModuleConfig", module_object_name("m2", "alpha")), "ModuleConfig"
    )
    config_name = module_object_name("m2", "alpha")
    path = f"/apis/{API_VERSION}/namespaces/{world.namespace}/moduleconfigs/{config_name}"
    await world.control.client.request(
        "PATCH", path, body={"spec": {"config": {"replicas": 9}}}, content_type=MERGE
    )

    async def restored() -> bool:
        config = await world.get("ModuleConfig", module_object_name("m2", "alpha"))
        return (config or {}).get("spec", {}).get("config") == {"replicas": 1}

    await world.until(restored, "the ModuleConfig's spec copied from the remote again")
