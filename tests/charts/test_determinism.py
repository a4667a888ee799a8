"""Telling charts that may render differently each time from those that cannot, by their files
(so that stable generated values render a chart a second time only when it could find
something)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from reconciler.charts import determinism
from reconciler.charts.determinism import chart_varying_calls, varying_calls
from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.model.component import CRDS_COMPONENT
from reconciler.model.task import ChartRef, Task
from tests.helpers.charts import CONFIGMAPS, DEPLOYMENT, make_chart

FIXTURES = Path(__file__).parents[1] / "fixtures" / "charts"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("password: {{ randAlphaNum 16 | b64enc }}", {"randAlphaNum"}),
        ('{{- $ca := genCA "ca" 365 -}}', {"genCA"}),
        ('at: {{ now | date "2006" }}', {"now"}),
        ("id: {{ uuidv4 }}\nn: {{ randInt 1 9 }}", {"uuidv4", "randInt"}),
        ("{{ range keys .Values.m }}{{ . }}{{ end }}", {"keys"}),
        ('{{ tpl (printf "{{ %s 5 }}" "randAlpha") . }}', {"randAlpha"}),
        ('unclosed: {{ include "x" (dict "a" (shuffle .Values.s', {"shuffle"}),
        # deterministic: fields, variables, comments, text outside actions, derived values
        ("{{ .Values.now }} {{ $rand := 1 }}{{ $rand }} {{ .Values.keys.genCA }}", set()),
        ("{{/* a random password, generated now */}}\nnote: generated now, random", set()),
        ('{{- include "generic.labels" . }}{{ derivePassword 1 "long" "p" "u" "s" }}', set()),
        ("{{ sha256sum (toYaml .Values) }} {{ .Values.x | b64enc }}", set()),
    ],
)
def test_varying_calls_are_the_varying_functions_a_template_action_names(
    text: str, found: set[str]
) -> None:
    assert varying_calls(text) == found


def test_fixture_charts_with_generated_values_vary_and_plain_ones_do_not() -> None:
    assert chart_varying_calls(FIXTURES / "generated") == {"genCA", "genSignedCert", "randAlphaNum"}
    assert chart_varying_calls(FIXTURES / "subcharts") == set()
    assert chart_varying_calls(FIXTURES / "capabilities") == set()
    assert chart_varying_calls(FIXTURES / "plain") == {"lookup"}  # the cluster's objects


def archive(path: Path, files: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_subcharts_values_and_archives_are_read_and_what_is_not_read_counts_as_varying(
    tmp_path: Path,
) -> None:
    chart = make_chart(tmp_path, "top", {"cms.yaml": CONFIGMAPS})
    assert chart_varying_calls(chart) == set()

    (chart / "files").mkdir()
    (chart / "files" / "snippet.tpl").write_text("token: {{ randAscii 8 }}")  # for tpl
    assert chart_varying_calls(chart) == {"randAscii"}
    (chart / "files" / "snippet.tpl").unlink()

    (chart / "values.yaml").write_text('stamp: "{{ now }}"\n')  # a value templates may tpl
    assert chart_varying_calls(chart) == {"now"}
    (chart / "values.yaml").write_text("{}\n")

    (chart / "charts").mkdir()
    archive(chart / "charts" / "sub-0.1.0.tgz", {"sub/templates/s.yaml": b"k: {{ uuidv4 }}"})
    assert chart_varying_calls(chart) == {"uuidv4"}

    archive(chart / "charts" / "sub-0.1.0.tgz", {"sub/templates/s.yaml": b"k: {{ .Values.k }}"})
    assert chart_varying_calls(chart) == set()

    (chart / "charts" / "sub-0.1.0.tgz").write_bytes(b"not a tar archive")
    assert [call.startswith("<unread:") for call in chart_varying_calls(chart)] == [True]


async def test_provider_reads_a_chart_once_per_file_tree_and_checks_the_tasks_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = make_chart(tmp_path, "web", {"deploy.yaml": DEPLOYMENT})
    provider = HelmChartProvider(ChartCache(tmp_path / "cache"))
    reads: list[Path] = []
    real = determinism.chart_varying_calls

    def counted(chart_dir: Path) -> set[str]:
        reads.append(chart_dir)
        return real(chart_dir)

    monkeypatch.setattr("reconciler.core.charts.chart_varying_calls", counted)
    task = Task(component="web", namespace="a", version="1", source=ChartRef(str(chart)))
    assert not await provider.may_vary(task)
    assert not await provider.may_vary(Task(**{**task.__dict__, "namespace": "b"}))
    assert len(reads) == 1  # cached by the chart's file tree, not per release

    tpl_value = {**task.__dict__, "configuration": {"secret": "{{ randAlphaNum 9 }}"}}
    assert await provider.may_vary(Task(**tpl_value))

    (chart / "templates" / "pw.yaml").write_text("p: {{ randAlphaNum 9 }}\n")
    assert await provider.may_vary(task)  # a new file tree is read again
    assert len(reads) == 2

    crds = Task(
        component=CRDS_COMPONENT, namespace="a", version="1", source=ChartRef(str(tmp_path))
    )
    assert not await provider.may_vary(crds)  # CRD files are not templates
