"""Fixtures for the component reconciler service: a stand-in mothership and small charts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import KubeTarget
from tests.helpers.charts import CONFIGMAPS, DEPLOYMENT, make_chart
from tests.remote.support import CallbackReceiver, serve_app


@pytest.fixture
async def receiver() -> AsyncIterator[CallbackReceiver]:
    recorder = CallbackReceiver()
    async with serve_app(recorder.app()) as url:
        recorder.url = url
        yield recorder


@pytest.fixture
def kubeconfig_text(kube_cluster: KubeTarget) -> str:
    return kube_cluster.kubeconfig.read_text()


@pytest.fixture
def configmaps_chart(tmp_path: Path) -> Path:
    return make_chart(tmp_path, "web", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["a", "b"]})


@pytest.fixture
def deployment_chart(tmp_path: Path) -> Path:
    """A Deployment nobody runs (no kubelet stand-in): waiting for it blocks until the timeout."""
    return make_chart(tmp_path, "slow", {"deploy.yaml": DEPLOYMENT})


@pytest.fixture
def broken_chart(tmp_path: Path) -> Path:
    return make_chart(tmp_path, "broken", {"bad.yaml": '{{ fail "this chart is broken" }}\n'})
