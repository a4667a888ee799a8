"""The values a chart is rendered with: its values.yaml ⊕ a profile file ⊕ overrides.

Profiles are files in the chart directory (`profile-<p>.yaml`, else `<p>.yaml`); a chart without
the requested profile simply has no profile layer. Files are merged as they are (their keys may
contain dots, e.g. annotation names); only the overrides are read as flat dotted keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from reconciler.charts import yamlio
from reconciler.errors import ChartError
from reconciler.model.values import layer, merge


def chart_values(
    chart_dir: Path, *, profile: str | None, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """Layer the chart's defaults, the profile file and the overrides (later layers win)."""
    values = read_values_file(chart_dir / "values.yaml")
    if profile:
        profile_file = profile_path(chart_dir, profile)
        if profile_file is not None:
            values = merge(values, read_values_file(profile_file))
    return merge(values, layer([overrides]))


def profile_path(chart_dir: Path, profile: str) -> Path | None:
    """The file holding `profile` in this chart, or None when the chart has none."""
    if not profile or "/" in profile or "\\" in profile or profile.startswith("."):
        raise ChartError(f"invalid profile name {profile!r}: it must be a plain file name part")
    for name in (f"profile-{profile}.yaml", f"{profile}.yaml"):
        candidate = chart_dir / name
        if candidate.is_file():
            return candidate
    return None


def check_profile(chart_dirs: list[Path], profile: str) -> None:
    """Refuse a profile that none of `chart_dirs` defines (a typo such as `prod` would else
    render every chart with its defaults, silently). Only local charts can be asked; with any
    other source in the set, pass only the local ones and nothing is refused."""
    if any(profile_path(chart_dir, profile) is not None for chart_dir in chart_dirs):
        return
    defined = sorted(
        {
            path.stem.removeprefix("profile-")
            for chart_dir in chart_dirs
            for path in chart_dir.glob("profile-*.yaml")
        }
    )
    known = f"; the charts define: {', '.join(defined)}" if defined else "; they define none"
    raise ChartError(f"profile {profile!r} is defined by no chart of the set{known}")


def read_values_file(path: Path, *, missing_ok: bool = True) -> dict[str, Any]:
    """A values file as a dict; an empty file (or, with `missing_ok`, a missing one) is `{}`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if not missing_ok:
            raise ChartError(f"values file {path} does not exist") from None
        return {}
    except OSError as exc:
        raise ChartError(f"cannot read values file {path}: {exc.strerror or exc}") from exc
    try:
        data = yamlio.load(text)
    except yaml.YAMLError as exc:
        raise ChartError(f"values file {path} is not valid YAML{yamlio.where(exc)}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ChartError(f"values file {path} holds a {type(data).__name__}, not a map of values")
    return data
