"""The realistic platform set in examples/platform, prepared and rendered for the tests here.

The set's two biggest CRDs are generated (examples/tools/make_platform_crds.py), so tests work on
a complete copy made by that tool. Rendered output is parsed the way Kubernetes reads YAML for
the traits this set has on purpose (an unquoted `=` is a string, dates stay strings), which a
plain YAML 1.1 loader gets wrong; the reconciler's own loader is what the cluster tests exercise.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from reconciler.model.component import ComponentSet
from tests.examples.sample import EXAMPLES, KUBE_VERSION, helm

PLATFORM = EXAMPLES / "platform"
TOOL = EXAMPLES / "tools" / "make_platform_crds.py"
IMPOSSIBLE_ON_1_20 = "backup"
"""The chart that uses a kind Kubernetes 1.20 does not serve (batch/v1 CronJob)."""

Obj = dict[str, Any]


class KubeLikeLoader(yaml.SafeLoader):
    """YAML 1.1 without the two resolvers Kubernetes does not have: `=` and timestamps."""


KubeLikeLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:value", "tag:yaml.org,2002:timestamp")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def copy_set(destination: Path) -> Path:
    """A complete copy of the set (generated CRDs included) in `destination`."""
    subprocess.run(
        [sys.executable, str(TOOL), "--copy-to", str(destination)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return destination


def component_set(workspace: Path = PLATFORM) -> ComponentSet:
    raw = (workspace / "installation" / "resources" / "components.yaml").read_text()
    return ComponentSet.model_validate(yaml.safe_load(raw))


def chart_names(workspace: Path = PLATFORM) -> list[str]:
    resources = workspace / "resources"
    return sorted(p.name for p in resources.iterdir() if (p / "Chart.yaml").is_file())


@functools.cache
def render_text(workspace: Path, chart: str, run: int = 0) -> str:
    """`helm template` of one chart (CRDs included); `run` tells renders apart for the cache."""
    components = component_set(workspace)
    namespace = components.namespace_of(components.get(chart))
    done = subprocess.run(
        [
            str(helm()),
            "template",
            chart,
            str(workspace / "resources" / chart),
            "--namespace",
            namespace,
            "--include-crds",
            "--kube-version",
            KUBE_VERSION,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, f"helm template {chart} failed:\n{done.stderr}"
    return done.stdout


def render(workspace: Path, chart: str, run: int = 0) -> list[Obj]:
    text = render_text(workspace, chart, run)
    return [doc for doc in yaml.load_all(text, Loader=KubeLikeLoader) if doc]
