"""Every `reconciler` command a page shows is run by a test, or says why not.

`tests/test_docs.py` checks that each shown command and option exists. This file goes further:
each shown invocation (as `shown_commands` reads it, its words joined) is in `RUN`, with the
arguments it runs with here (the page's placeholders `K`, `W`, `FILE` filled in with the test
bed's files), or in `NOT_RUN`, with the reason and the test that runs the same command another
way. A new command on a page fails `test_every_shown_command_is_run_or_says_why_not` until it is
put in one of the two. The ones run here are those that are quick and touch nothing outside a
temporary directory: printing (`--print`, `template`, `settings reference`), checking
(`settings check`), a migration of a fresh SQLite file, a status query.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reconciler.cli.main import app
from tests.test_docs import DOCS, REPO, shown_commands

EXAMPLES = REPO / "examples" / "kyma-like"
Arguments = Callable[[Path], list[str]]

RUN: dict[str, tuple[Arguments, tuple[int, ...], str]] = {
    "settings reference > docs/settings.md": (
        lambda _: ["settings", "reference"],
        (0,),
        "| `api.auth` | `RECONCILER_API_AUTH` |",
    ),
    "settings check settings.yaml --group mothership --group api": (
        lambda tmp: [
            "settings",
            "check",
            str(_settings_file(tmp)),
            "-g",
            "mothership",
            "-g",
            "api",
        ],
        (0,),
        "settings ok",
    ),
    "infra install-crds [--kubeconfig K] [--print]": (
        lambda _: ["infra", "install-crds", "--print"],
        (0,),
        "name: runtimes.infrastructuremanager.kyma-project.io",
    ),
    "operator install-crds [--kubeconfig K] [--print]": (
        lambda _: ["operator", "install-crds", "--print"],
        (0,),
        "name: kymas.operator.kyma-project.io",
    ),
    "operator deploy [--kubeconfig K] [--namespace NS] [--image I] [--dry-run --print]": (
        lambda _: ["operator", "deploy", "--namespace", "kcp-system", "--print"],
        (0,),
        "kind: Deployment",
    ),
    "template --workspace W [-c NAME]... [--kube-version v1.20.2] [--api-versions g/v]...": (
        lambda _: [
            "template",
            "--workspace",
            str(EXAMPLES),
            "-c",
            "istio",
            "--kube-version",
            "v1.20.2",
        ],
        (0,),
        "# component: istio",
    ),
    "mothership migrate [--database-url URL]": (
        lambda tmp: [
            "mothership",
            "migrate",
            "--database-url",
            f"sqlite+aiosqlite:///{tmp / 'reconciler.db'}",
        ],
        (0,),
        "schema at revision",
    ),
    "dev-cluster status": (
        lambda tmp: ["dev-cluster", "status", "--dir", str(tmp / "none")],
        (1,),  # nothing runs there: exit 1, as the page says
        "not running",
    ),
}
"""Shown command -> (the arguments run here, the exit codes expected, a line of the output)."""

NEEDS_CLUSTER = "changes a cluster"
SERVES = "serves until stopped"
NOT_RUN: dict[str, tuple[str, str]] = {
    "deploy --kubeconfig K --workspace W [--components F] [-c NAME]... [--profile P]": (
        NEEDS_CLUSTER,
        "tests/cli/test_deploy_cli.py",
    ),
    "delete": (NEEDS_CLUSTER, "tests/cli/test_delete_cli.py"),
    "operator rollout status [NAME] [-n NS] [-o json]": (
        NEEDS_CLUSTER,
        "tests/operator/rollout/test_rollout.py",
    ),
    "diff": (NEEDS_CLUSTER, "tests/cli/test_deploy_cli.py"),
    "deploy --workspace deploy --kubeconfig K -f reconciler-values.yaml"
    " --value reconciler.mothership.replicas=3": (NEEDS_CLUSTER, "tests/deploy/test_chart.py"),
    "deploy -w examples/platform --kubeconfig ...": (
        NEEDS_CLUSTER,
        "tests/examples/test_platform_set.py",
    ),
    "dev-cluster build": ("builds the Kubernetes binaries (minutes)", "tests/conftest.py"),
    "dev-cluster up": ("starts a test bed (seconds to minutes)", "tests/devcluster/"),
    "dev-cluster down": ("stops the test bed `up` started", "tests/devcluster/"),
    "mothership serve --host 127.0.0.1 --port 8080": (SERVES, "tests/api/test_serve_process.py"),
    "mothership serve --host 0.0.0.0 --port 8443 --cert-file /etc/reconciler/tls.crt"
    " --key-file /etc/reconciler/tls.key": (SERVES, "tests/api/test_serve_process.py"),
    "mothership run --workspace examples/kyma-like": (SERVES, "tests/mothership/"),
    "cluster list --url https://localhost:8080 --ca-file tls.crt --token-file token.txt": (
        "needs a running mothership with TLS",
        "tests/cli/test_admin_cli.py",
    ),
    "component serve --host 0.0.0.0 --port 8090 --token-file /etc/reconciler/token --workers 16"
    " [--components istio,eventing] [--cert-file tls.crt --key-file tls.key]": (
        SERVES,
        "tests/remote/test_serve_process.py",
    ),
    "component serve --port $port --token-file /etc/reconciler/token": (
        SERVES,
        "tests/remote/test_serve_process.py",
    ),
    "infra run [--kubeconfig K] --garden-kubeconfig G [--config FILE] [--namespace NS]"
    " [--metrics-port P [--metrics-host H]]": (SERVES, "tests/deploy/test_in_cluster.py"),
    "operator run [--kubeconfig K] [--config FILE] [--namespace NS]"
    " [--metrics-port P [--metrics-host H]]": (SERVES, "tests/deploy/test_in_cluster.py"),
    "operator install-crds": (NEEDS_CLUSTER, "tests/examples/test_operator_example.py"),
    "operator run --namespace kcp-system": (SERVES, "tests/examples/test_operator_example.py"),
}
"""Shown command -> (why it is not run here, the test that runs it or its like)."""


def _settings_file(tmp_path: Path) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(f"data_dir: {tmp_path}\napi:\n  auth: none\n")
    return path


def _shown() -> dict[str, str]:
    """Shown command (words joined) -> where the first page shows it."""
    found: dict[str, str] = {}
    for page in DOCS:
        for shown, arguments in shown_commands(page):
            found.setdefault(" ".join(arguments), shown.where())
    return found


def test_every_shown_command_is_run_or_says_why_not() -> None:
    shown = _shown()
    unclassified = [where for command, where in shown.items() if command not in {**RUN, **NOT_RUN}]
    assert not unclassified, (
        "put each in RUN (with the arguments to run) or NOT_RUN (with the reason) of "
        "tests/test_doc_commands.py:\n" + "\n".join(unclassified)
    )
    stale = set(RUN) | set(NOT_RUN)
    assert stale <= set(shown), f"no page shows these any more: {sorted(stale - set(shown))}"
    assert not set(RUN) & set(NOT_RUN)
    for reason, test in NOT_RUN.values():
        assert reason
        assert (REPO / test).exists(), test


def test_the_shown_commands_that_are_safe_to_run_do_what_the_page_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One test for all (each is quick; a CliRunner per command, in this process)."""
    monkeypatch.setenv("RECONCILER_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("RECONCILER_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    failed = []
    for command, (arguments, codes, expected) in RUN.items():
        result = runner.invoke(app, arguments(tmp_path))
        if result.exit_code not in codes or expected not in result.output:
            failed.append(f"reconciler {command}: exit {result.exit_code}\n{result.output[-800:]}")
    assert not failed, "\n\n".join(failed)
