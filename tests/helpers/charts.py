"""Build small Helm charts on disk for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def make_chart(
    root: Path,
    name: str,
    templates: dict[str, str],
    values: dict[str, Any] | None = None,
    crds: dict[str, str] | None = None,
) -> Path:
    chart = root / name
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v2", "name": name, "version": "0.1.0"})
    )
    (chart / "values.yaml").write_text(yaml.safe_dump(values or {}))
    for file, text in templates.items():
        (chart / "templates" / file).write_text(text)
    for file, text in (crds or {}).items():
        (chart / "crds").mkdir(exist_ok=True)
        (chart / "crds" / file).write_text(text)
    return chart


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas | default 1 }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: app
          image: example.com/app:{{ .Values.tag | default "1" }}
          ports:
            - containerPort: 8080
"""

CONFIGMAPS = """\
{{- range .Values.configmaps }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ . }}
data:
  greeting: {{ $.Values.greeting | default "hello" | quote }}
{{- end }}
"""


def secret_label(value_path: str) -> str:
    """A ConfigMap whose label is the value at `value_path` plus `!`: an invalid label value,
    so the apiserver's rejection quotes it (how a secret configuration value leaks)."""
    return f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: leaky
  labels:
    leak: {{{{ printf "%s!" .Values.{value_path} | quote }}}}
data: {{}}
"""


LONG_SECRET = "".join(f"{n:04x}-Qz{n * 7919 % 9973:04d}" for n in range(100))[:904]
"""A `secret: true` value longer than the excerpt cap (512): cut before it was scrubbed, its
first 448 characters went out (issue 26)."""


def pieces_in(secret: str, text: str, length: int = 12) -> list[str]:
    """The runs of `length` characters of `secret` that `text` contains (none may leave)."""
    runs = {secret[i : i + length] for i in range(len(secret) - length + 1)}
    return sorted(run for run in runs if run in text)
