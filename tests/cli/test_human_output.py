"""What `deploy` and `delete` print for people: progress, each failure once, warnings in plain
words at the end, a closing line, never a log line."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sys
from pathlib import Path

import yaml

from reconciler.cli.errors import INTERRUPTED
from reconciler.util.polling import poll_until
from tests.cli.test_deploy_cli import invoke_async
from tests.conftest import KubeTarget
from tests.helpers.charts import CONFIGMAPS, DEPLOYMENT, make_chart

FIXTURES = Path(__file__).parents[1] / "fixtures" / "charts"
REJECTED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: rejected
data:
  number: 5
"""


def mixed_set(root: Path, namespace: str) -> Path:
    """One component with warnings (nulls dropped), one fine, one the apiserver rejects and one
    that depends on it (skipped)."""
    resources = root / "resources"
    shutil.copytree(FIXTURES / "nulls-in-cr", resources / "nulls")
    make_chart(resources, "fine", {"cm.yaml": CONFIGMAPS}, {"configmaps": ["one"]})
    make_chart(resources, "rejected", {"cm.yaml": REJECTED})
    make_chart(resources, "after", {"cm.yaml": CONFIGMAPS}, {"configmaps": ["two"]})
    (root / "installation" / "resources").mkdir(parents=True)
    (root / "installation" / "resources" / "components.yaml").write_text(
        yaml.safe_dump(
            {
                "defaultNamespace": namespace,
                "components": [
                    {"name": "nulls"},
                    {"name": "fine"},
                    {"name": "rejected"},
                    {"name": "after", "dependsOn": ["rejected"]},
                ],
            }
        )
    )
    return root


def no_log_lines(output: str) -> None:
    for line in output.splitlines():
        assert not line.lstrip().startswith("{"), f"a log line reached the output: {line}"
        assert '"event"' not in line, line


async def test_a_failing_run_tells_each_failure_once_and_warnings_in_plain_words(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    ws = mixed_set(tmp_path / "ws", namespace)

    result = await invoke_async(
        "deploy", "--kubeconfig", str(kube_cluster.kubeconfig), "-w", str(ws)
    )

    assert result.exit_code == 1
    output = result.output
    no_log_lines(output)
    assert "transformed" not in output
    full_error = next(line for line in output.splitlines() if line.startswith("✗ component"))
    assert "component rejected: 1 object rejected: configmap" in full_error
    assert output.count(full_error[2:]) == 1, output  # progress lines show it cut short
    assert "! nulls: " in output
    assert "dropped null value at Monitor.spec.podMetadata.annotations" in output
    closing = output.strip().splitlines()[-1]
    assert closing.startswith("✗ 1 of 5 components failed in ")
    assert closing.endswith(": rejected; 1 skipped (they wait for a failed one): after")


async def test_verbose_shows_every_warning_and_json_output_stays_pure(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    ws = mixed_set(tmp_path / "ws", namespace)
    kubeconfig = str(kube_cluster.kubeconfig)

    verbose = await invoke_async("deploy", "--kubeconfig", kubeconfig, "-w", str(ws), "-v")
    # --force: render again (an unchanged component's no-op run has nothing to warn about)
    quiet = await invoke_async("deploy", "--kubeconfig", kubeconfig, "-w", str(ws), "--force")
    as_json = await invoke_async("deploy", "--kubeconfig", kubeconfig, "-w", str(ws), "-o", "json")

    assert "--verbose shows every warning" in quiet.output
    assert "--verbose shows every warning" not in verbose.output
    assert verbose.output.count("! nulls: ") == 3
    assert json.loads(as_json.stdout)["ok"] is False


async def test_a_successful_deploy_and_delete_end_with_a_summary_in_their_own_words(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    resources = tmp_path / "ws" / "resources"
    make_chart(resources, "one", {"cm.yaml": CONFIGMAPS}, {"configmaps": ["a"]})
    make_chart(resources, "two", {"cm.yaml": CONFIGMAPS}, {"configmaps": ["b", "c"]})
    (tmp_path / "ws" / "installation" / "resources").mkdir(parents=True)
    (tmp_path / "ws" / "installation" / "resources" / "components.yaml").write_text(
        yaml.safe_dump(
            {"defaultNamespace": namespace, "components": [{"name": "one"}, {"name": "two"}]}
        )
    )
    args = ("--kubeconfig", str(kube_cluster.kubeconfig), "-w", str(tmp_path / "ws"))

    deployed = await invoke_async("deploy", *args)
    again = await invoke_async("deploy", *args)
    deleted = await invoke_async("delete", *args)

    assert deployed.exit_code == 0, deployed.output
    assert "one: success" in deployed.output
    assert "1 object applied, 1 changed" in deployed.output  # not "1 objects"
    assert deployed.output.strip().splitlines()[-1].startswith("✓ 3 components ready in ")
    assert again.output.strip().splitlines()[-1].endswith("nothing changed")
    assert deleted.exit_code == 0, deleted.output
    no_log_lines(deleted.output)
    assert "applied" not in deleted.output  # a delete in a delete's words
    assert "two: success" in deleted.output
    assert "2 objects deleted" in deleted.output
    assert deleted.output.count("one: success") == 1
    closing = deleted.output.strip().splitlines()[-1]
    assert closing.startswith("✓ 3 components deleted in ")


async def test_ctrl_c_says_interrupted_and_exits_130(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    """No kubelet in this namespace: the Deployment never becomes ready, so the run waits."""
    resources = tmp_path / "ws" / "resources"
    make_chart(resources, "waits", {"deployment.yaml": DEPLOYMENT})
    (tmp_path / "ws" / "installation" / "resources").mkdir(parents=True)
    (tmp_path / "ws" / "installation" / "resources" / "components.yaml").write_text(
        yaml.safe_dump({"defaultNamespace": namespace, "components": [{"name": "waits"}]})
    )
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "reconciler"),
        "deploy",
        "--kubeconfig",
        str(kube_cluster.kubeconfig),
        "-w",
        str(tmp_path / "ws"),
        stderr=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
    )
    assert process.stderr is not None
    seen: list[str] = []

    async def waiting() -> bool:
        line = (await process.stderr.readline()).decode()
        seen.append(line)
        return ("waits: running" in line and "waiting" in line) or not line

    await poll_until(waiting, timeout=60, interval=0, what="the deploy to wait for the Deployment")
    process.send_signal(signal.SIGINT)
    rest = (await asyncio.wait_for(process.stderr.read(), timeout=30)).decode()
    code = await process.wait()

    assert code == INTERRUPTED, "".join(seen) + rest
    assert "waits: interrupted" in rest
    assert "interrupted (waits stopped): what was applied stays" in rest
    assert "Traceback" not in rest
