"""The settings root: every process's settings, one group per role (kopf's `OperatorSettings`
shape), read from one YAML file and the environment.

Each group stays the pydantic-settings class of its role, in its role's package, with its own
environment prefix: `ApiSettings` (`RECONCILER_API_*`), `ComponentSettings`
(`RECONCILER_COMPONENT_*`), `OperatorSettings` (`RECONCILER_OPERATOR_*`), `ShardSettings`
(`RECONCILER_OPERATOR_SHARD_*`), `WatcherSettings` (`RECONCILER_OPERATOR_WATCHER_*`),
`InfraSettings` (`RECONCILER_INFRA_*`) and the mothership's `Settings` (`RECONCILER_*`). The root
only composes them: the file's top level holds the mothership's keys (the `--config` format
from before) and one section per other group, named as the group's environment prefix after
`RECONCILER_` (`api:`, `operator_shard:`), so a key `k` of section `s` is the variable
`RECONCILER_<S>_<K>`.

Precedence, per key: a command-line option, then the file, then the environment, then the
default. Keys are checked when the file is read (an unknown one is refused naming it); values
when a process first asks for its group, so a process validates only the groups it uses (a
mothership does not need a component reconciler's token, and the other way round).
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError
from pydantic_settings import BaseSettings

from reconciler.mothership.settings import Settings, SettingsError, read_mapping

if TYPE_CHECKING:  # a group's module is imported when a process reads the group: `reconciler
    # operator run` need not load the REST API's package (FastAPI, the console) for nothing
    from reconciler.api.settings import ApiSettings
    from reconciler.infra.settings import InfraSettings
    from reconciler.operator.settings import OperatorSettings, ShardSettings
    from reconciler.operator.watcher.settings import WatcherSettings
    from reconciler.remote.settings import ComponentSettings

MOTHERSHIP = "mothership"
"""The group whose keys stand at the file's top level (environment prefix `RECONCILER_`)."""
GROUPS: dict[str, str] = {
    MOTHERSHIP: "reconciler.mothership.settings:Settings",
    "api": "reconciler.api.settings:ApiSettings",
    "component": "reconciler.remote.settings:ComponentSettings",
    "operator": "reconciler.operator.settings:OperatorSettings",
    "operator_shard": "reconciler.operator.settings:ShardSettings",
    "operator_watcher": "reconciler.operator.watcher.settings:WatcherSettings",
    "infra": "reconciler.infra.settings:InfraSettings",
}
"""Group name (its file section, its environment prefix after `RECONCILER_`) -> its class."""


def group_class(name: str) -> type[BaseSettings]:
    """The settings class of group `name` (its module imported now)."""
    module, _, attribute = GROUPS[name].partition(":")
    return cast("type[BaseSettings]", getattr(importlib.import_module(module), attribute))


def env_name(group: str, key: str) -> str:
    """The environment variable of `key` in `group` (`api`, `auth` -> `RECONCILER_API_AUTH`)."""
    prefix = "RECONCILER_" if group == MOTHERSHIP else f"RECONCILER_{group.upper()}_"
    return prefix + key.upper()


def config_key(group: str, key: str) -> str:
    """The key's path in the settings file (`api.auth`; the mothership's at the top level)."""
    return key if group == MOTHERSHIP else f"{group}.{key}"


class ReconcilerSettings:
    """The settings of every role: `root.api`, `root.operator`, `root.infra`, ... (each group
    built, from the file's section, the environment and the given overrides, when first read)."""

    def __init__(
        self,
        sections: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        source: str = "settings",
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        given = {name: dict(values) for name, values in (sections or {}).items()}
        for name, values in (overrides or {}).items():
            given.setdefault(name, {}).update({k: v for k, v in values.items() if v is not None})
        for name, values in given.items():
            _check_keys(source, name, values)
        self._given = given
        self.source = source

    @classmethod
    def load(
        cls, path: Path | None = None, **overrides: Mapping[str, Any] | None
    ) -> ReconcilerSettings:
        """The settings of `path` (a YAML file; None: none), per group `overrides` (command-line
        options; None values are not given) winning over it. SettingsError names what is wrong."""
        sections: dict[str, dict[str, Any]] = {}
        if path is not None:
            sections = read_file(path)
        given = {name: values for name, values in overrides.items() if values is not None}
        source = f"settings file {path}" if path else "settings"
        return cls(sections, source=source, overrides=given)

    @property
    def given(self) -> list[str]:
        """The groups the file (or the overrides) gives keys of, in `GROUPS`' order."""
        return [name for name in GROUPS if name in self._given]

    def group(self, name: str) -> BaseSettings:
        """The group `name`: its file section and overrides, then its environment variables,
        then its defaults."""
        try:
            return group_class(name)(**self._given.get(name, {}))
        except ValidationError as exc:
            raise SettingsError(f"invalid {name} settings: {problems(name, exc)}") from None

    @functools.cached_property
    def mothership(self) -> Settings:
        return cast("Settings", self.group(MOTHERSHIP))

    @functools.cached_property
    def api(self) -> ApiSettings:
        return cast("ApiSettings", self.group("api"))

    @functools.cached_property
    def component(self) -> ComponentSettings:
        return cast("ComponentSettings", self.group("component"))

    @functools.cached_property
    def operator(self) -> OperatorSettings:
        return cast("OperatorSettings", self.group("operator"))

    @functools.cached_property
    def operator_shard(self) -> ShardSettings:
        return cast("ShardSettings", self.group("operator_shard"))

    @functools.cached_property
    def operator_watcher(self) -> WatcherSettings:
        return cast("WatcherSettings", self.group("operator_watcher"))

    @functools.cached_property
    def infra(self) -> InfraSettings:
        return cast("InfraSettings", self.group("infra"))


def read_file(path: Path) -> dict[str, dict[str, Any]]:
    """The file's keys by group (top-level keys that name no group are the mothership's)."""
    sections: dict[str, dict[str, Any]] = {}
    for key, value in read_mapping(path).items():
        name = str(key)
        if name in GROUPS and name != MOTHERSHIP:
            if not isinstance(value, dict):
                raise SettingsError(
                    f"settings file {path}: {name} must be a mapping of the {name} settings"
                )
            sections[name] = {str(k): v for k, v in value.items()}
        else:
            sections.setdefault(MOTHERSHIP, {})[name] = value
    return sections


def _check_keys(source: str, group: str, values: Mapping[str, Any]) -> None:
    if group not in GROUPS:
        raise SettingsError(f"{source}: unknown settings group {group}")
    known = list(group_class(group).model_fields)
    for key in values:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {config_key(group, close[0])}?)" if close else ""
            raise SettingsError(
                f"{source}: unknown key {config_key(group, key)}{hint}; every setting is listed"
                " in docs/settings.md"
            )


def problems(group: str, exc: ValidationError) -> str:
    """One line naming each invalid setting by its config key and environment variable (never
    echoing values: some are secrets)."""
    parts = []
    for err in exc.errors(include_input=False):
        message = str(err["msg"]).removeprefix("Value error, ")
        if not err["loc"]:  # a check across settings
            parts.append(message)
            continue
        key = str(err["loc"][0])
        where = ".".join([config_key(group, key), *(str(p) for p in err["loc"][1:])])
        parts.append(f"{where} ({env_name(group, key)}): {message}")
    return "; ".join(parts)


# --- the reference (docs/settings.md is its output; tests/test_settings_root.py compares) ------

REFERENCE_HEADER = """\
# Settings reference

<!-- Generated by `reconciler settings reference > docs/settings.md` from the settings classes;
     tests/test_settings_root.py fails when this page and the classes differ. -->

Every process reads its settings from one YAML file (`--config FILE`, or the variable
`RECONCILER_CONFIG`) and from environment variables. The file's top level holds the
mothership's keys; every other role has a section named after its variables' prefix:

```yaml
database_url: postgresql+asyncpg://reconciler@db/reconciler   # RECONCILER_DATABASE_URL
workers: 32                                                   # RECONCILER_WORKERS
api:
  auth: oidc                                                  # RECONCILER_API_AUTH
  oidc_issuer: https://issuer.example.com                     # RECONCILER_API_OIDC_ISSUER
operator_shard:
  count: 3                                                    # RECONCILER_OPERATOR_SHARD_COUNT
```

Precedence, for each key on its own: a command-line option (`--workers`), then the file, then
the environment variable, then the default. An unknown key in the file is refused at start-up
with one line naming it; a value is checked by the process that uses its group (a mothership
does not check the component reconcilers' section), and an invalid one is named by its key and
variable. Lists and mappings are given in the environment as JSON
(`RECONCILER_API_TRUSTED_PROXIES='["10.0.0.0/8"]'`); `component.components` also takes a
comma-separated list.

| group (file section) | variables | read by | about | class |
|---|---|---|---|---|
"""

ROLES = {
    MOTHERSHIP: (
        "`mothership migrate`, `run`, `serve`",
        "The control plane: storage, scheduler, workers.",
    ),
    "api": (
        "`mothership serve`",
        "The REST API and the admin console: authentication, limits, audit.",
    ),
    "component": ("`component serve`", "One component reconciler service (remote mode)."),
    "operator": ("`operator run`", "The operator's controllers and module sources."),
    "operator_shard": ("`operator run`", "How operator processes split the Kymas (Leases)."),
    "operator_watcher": ("`operator run`", "The watcher's listener and the remote webhooks."),
    "infra": ("`infra run`", "The infrastructure manager: Gardener, workers, kubeconfigs."),
}
"""Group -> (the commands that read it, what it is about)."""
COMPUTED = {
    (MOTHERSHIP, "data_dir"): "`~/.local/share/reconciler`",
    (MOTHERSHIP, "charts_cache"): "`<cache>/charts`",
    ("component", "charts_cache"): "`<cache>/component-charts`",
    ("operator_shard", "identity"): "`<hostname>-<pid>`",
}
"""Defaults computed at start-up (`<cache>`: `$RECONCILER_CACHE_DIR`, else
`~/.cache/reconciler`)."""


def reference() -> str:
    """The settings reference page (markdown), from the groups' fields and their docstrings."""
    lines = [REFERENCE_HEADER.rstrip("\n")]
    for name in GROUPS:
        kind = group_class(name)
        section = "(top level)" if name == MOTHERSHIP else f"`{name}`"
        variables = f"`{env_name(name, '')}*`"
        used_by, about = ROLES[name]
        where = f"`{kind.__module__}.{kind.__name__}`"
        lines.append(f"| {section} | {variables} | {used_by} | {about} | {where} |")
    for name in GROUPS:
        kind = group_class(name)
        title = "mothership (top level)" if name == MOTHERSHIP else name
        lines += ["", f"## {title}", ""]
        lines += ["| key | variable | type | default | meaning |", "|---|---|---|---|---|"]
        notes = _attribute_docs(kind)
        for key, field in kind.model_fields.items():
            lines.append(
                f"| `{config_key(name, key)}` | `{env_name(name, key)}` |"
                f" {_cell(_type_name(field.annotation))} | {_cell(_default(name, key, field))} |"
                f" {_cell(notes.get(key, ''))} |"
            )
    return "\n".join(lines) + "\n"


def _attribute_docs(kind: type) -> dict[str, str]:
    """Field -> the docstring under it, for the class and its bases (read from the source)."""
    import ast
    import inspect
    import itertools
    import textwrap

    found: dict[str, str] = {}
    for cls in reversed(kind.__mro__):
        if not issubclass(cls, BaseSettings) or cls is BaseSettings:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
        for first, second in itertools.pairwise(body):
            if (
                isinstance(first, ast.AnnAssign)
                and isinstance(first.target, ast.Name)
                and isinstance(second, ast.Expr)
                and isinstance(second.value, ast.Constant)
                and isinstance(second.value.value, str)
            ):
                found[first.target.id] = " ".join(second.value.value.split())
    return found


def _type_name(annotation: Any) -> str:
    """`float`, `Path | None`, `list["https" | "oci"]`: as a person reads it."""
    import json
    import types
    import typing

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if origin is typing.Literal:
        return " | ".join(json.dumps(arg) for arg in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type_name(arg) for arg in args)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def _default(group: str, key: str, field: Any) -> str:
    import json

    if field.default_factory is not None:
        value = field.default_factory()
        if not isinstance(value, list | dict):  # a path under $HOME, the host's name
            return COMPUTED.get((group, key), "(computed at start-up)")
    else:
        value = field.default
    if value is None:
        return "unset"
    if isinstance(value, str | Path):
        return f"`{value}`" if str(value) else '`""`'
    return f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
