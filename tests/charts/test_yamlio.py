"""Manifests parse exactly as kubectl (and so Helm: both sigs.k8s.io/yaml) parses them.

The oracle is the test bed's `kubectl create --dry-run=client -o json`: for every tricky document
in the corpus, our loader must produce the same JSON value, with the same types; where kubectl
refuses a document (what JSON cannot hold), our loader refuses it too, naming the line.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from typing import Any

import pytest
import yaml

from reconciler.charts import yamlio
from reconciler.paths import find_binary
from tests.conftest import KubeTarget

CORPUS: dict[str, str] = {
    "equals-in-enum": "enum:\n- =\n- '='\n- ==\n- '!='",
    "dates-stay-strings": (
        "date: 2024-01-01\ncanonical: 2001-12-14t21:59:43.10-05:00\n"
        "spaced: 2001-12-14 21:59:43.10\niso: 2001-12-15T02:59:43.1Z"
    ),
    "yaml11-booleans": "values: [yes, Yes, YES, no, No, on, On, off, OFF, y, Y, n, N, true, False]",
    "boolean-look-alikes": "values: [yEs, tRue, oN, nO, 'yes', \"on\", yes please]",
    "nulls": "values: [~, null, Null, NULL, '', nil, None]\nempty:\nexplicit: !!null ''",
    "octal": "values: [0755, 0o755, 0O17, 0644, 08, 09, 0, -0, 007]",
    "hex-and-binary": "values: [0x1F, 0X1f, 0b101, -0b101, +0x10, 0x, 0b2]",
    "underscores": "values: [1_000, 0x_1F, 1_0.5, 1__2, _1, 1_]",
    "floats": "values: [1.0, 1.5, 1e3, 1E-3, -.5, .5, +1.5, 1., 6.02e23, 3.14e-10, 1e400, 1e21]",
    "sexagesimal-is-text": "values: [1:20, 190:20:30, 12:30:00, -1:30]",
    "big-integers": (
        "values: [9223372036854775807, 9223372036854775808, 18446744073709551615,"
        " 18446744073709551616, -9223372036854775808, -9223372036854775809]"
    ),
    "look-alike-strings": (
        "values: [~x, .x, -x, +x, 1.2.3, 10.0.0.1, 1e, e1, .inf.x, .iNf, -, +, ., 1-2, v1.2]"
    ),
    "non-string-keys": "map: {yes: a, on: b, 1: c, 0x10: d, 1.5: e, 1e6: f, no: g, 0755: h, y: i}",
    "merge-keys-after": "base: &b {p: 1, q: 2}\nmerged: {<<: *b, p: 9}",
    "merge-keys-before": "base: &b {p: 1, q: 2}\nmerged:\n  p: 9\n  <<: *b",
    "merge-key-list": "a: &a {p: 1}\nb: &b {p: 2, q: 2}\nc: {<<: [*a, *b], r: 3}",
    "anchors": "a: &x [1, yes, =]\nb: *x",
    "block-scalars": "literal: |\n  yes\n  1\nfolded: >\n  on\n  off\nkeep: |+\n  x\n\n",
    "explicit-tags": (
        "values: [!!str 1, !!str yes, !!int '12', !!float '1', !!float '1.5', !!bool 'true',"
        " !!str 2024-01-01, !!timestamp 2024-01-01]"
    ),
    "custom-tags": "plain: !foo bar\nnumber: !foo 12\nmap: !bar {a: 1}\nlist: !baz [yes]",
    "multi-line-plain": "text: hello\n  world\n  yes",
    "unicode": 'emoji: 😀\nescaped: "\\U0001F600 \\u00e9"\nchinese: 中文',
    "quoted-keys-and-values": "'yes': \"no\"\n\"1\": '2'\n'~': '~'",
}

REFUSED: dict[str, str] = {
    "infinity": "value: .inf",
    "negative-infinity": "value: -.Inf",
    "not-a-number": "value: .nan",
    "null-key": "map: {~: a}",
}


def _document(name: str, body: str) -> str:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\nx:\n"
        + textwrap.indent(body, "  ")
        + "\n"
    )


def _kubectl(kube: KubeTarget, text: str) -> subprocess.CompletedProcess[str]:
    kubectl = find_binary("kubectl")
    assert kubectl is not None, "kubectl is not available; run `make testbed`"
    return subprocess.run(
        [
            *(str(kubectl), "--kubeconfig", str(kube.kubeconfig), "create", "--dry-run=client"),
            *("--validate=false", "-o", "json", "-f", "-"),
        ],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _as_apiserver_reads(value: Any) -> Any:
    """An integer beyond int64 is a float64 to the apiserver (kubectl prints it without a point)."""
    if isinstance(value, dict):
        return {key: _as_apiserver_reads(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_apiserver_reads(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return float(value)
    return value


def _canonical(value: Any) -> str:
    """Type-exact comparison: True is not 1, 1 is not 1.0 is not "1"."""
    return json.dumps(_as_apiserver_reads(value), sort_keys=True, ensure_ascii=False)


@pytest.fixture(scope="module")
def kubectl_reads(kube_cluster: KubeTarget) -> dict[str, Any]:
    """What kubectl makes of each corpus document (one kubectl run for all of them)."""
    stream = "---\n".join(_document(name, body) for name, body in CORPUS.items())
    done = _kubectl(kube_cluster, stream)
    assert done.returncode == 0, done.stderr
    items, decoder, text = [], json.JSONDecoder(), done.stdout.strip()
    while text:  # one JSON object per document, one after the other
        item, end = decoder.raw_decode(text)
        items.append(item)
        text = text[end:].strip()
    return {item["metadata"]["name"]: item for item in items}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_loader_reads_documents_as_kubectl_does(name: str, kubectl_reads: dict[str, Any]) -> None:
    ours = yamlio.load(_document(name, CORPUS[name]))
    assert _canonical(ours["x"]) == _canonical(kubectl_reads[name]["x"])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_loader_refuses_what_kubectl_refuses(name: str, kube_cluster: KubeTarget) -> None:
    document = _document(name, REFUSED[name])
    assert _kubectl(kube_cluster, document).returncode != 0
    with pytest.raises(yaml.YAMLError) as caught:
        yamlio.load(document)
    assert "line 6" in yamlio.where(caught.value)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_dumped_yaml_reads_back_as_the_same_data(name: str) -> None:
    data = yamlio.load(_document(name, CORPUS[name]))
    assert _canonical(yamlio.load(yamlio.dump(data))) == _canonical(data)
