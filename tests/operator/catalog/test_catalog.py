"""Catalog resolution: channel -> version -> template, and what each failure says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.model.lifecycle import Module
from reconciler.operator.catalog.resolve import (
    CatalogError,
    mandatory_modules,
    resolve,
    version_key,
)
from reconciler.operator.controllers.remote_catalog import offered, offered_catalog
from tests.operator.modules import kyma as modules_kyma
from tests.operator.modules import release_meta, template

NS = "kcp-system"
CHART = Path("/charts/alpha")


def test_release_meta_maps_the_modules_own_channel_before_the_kymas() -> None:
    metas = [release_meta(NS, "alpha", {"regular": "1.0.0", "fast": "1.1.0"})]
    templates = [template(NS, "alpha", "1.0.0", CHART), template(NS, "alpha", "1.1.0", CHART)]
    assert resolve(Module(name="alpha"), "regular", metas, templates).version == "1.0.0"
    fast = resolve(Module(name="alpha", channel="fast"), "regular", metas, templates)
    assert (fast.version, fast.template, fast.link) == ("1.1.0", "alpha-1.1.0", str(CHART))
    assert fast.resource is not None
    assert fast.resource["kind"] == "Alpha"


def test_without_release_meta_the_template_on_the_channel_is_used() -> None:
    legacy = template(NS, "alpha", "2.0.0", CHART)
    legacy["spec"]["channel"] = "regular"
    assert resolve(Module(name="alpha"), "regular", [], [legacy]).version == "2.0.0"


@pytest.mark.parametrize(
    ("metas", "templates", "message"),
    [
        ([], [], "module alpha: no ModuleReleaseMeta and no ModuleTemplate on channel regular"),
        (
            [release_meta(NS, "alpha", {"fast": "1.1.0"})],
            [],
            "module alpha has no version on channel regular (ModuleReleaseMeta alpha lists: fast)",
        ),
        (
            [release_meta(NS, "alpha", {"regular": "1.0.0"})],
            [],
            "no ModuleTemplate for module alpha version 1.0.0",
        ),
    ],
)
def test_missing_catalog_entries_are_named(
    metas: list[dict[str, object]], templates: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(CatalogError, match=re.escape(message)):
        resolve(Module(name="alpha"), "regular", metas, templates)  # type: ignore[arg-type]


def test_a_raw_manifest_template_resolves_and_one_without_a_link_is_refused() -> None:
    raw = template(NS, "alpha", "1.0.0", CHART)
    raw["spec"]["resources"] = [{"name": "rawManifest", "link": "https://x/m.yaml"}]
    metas = [release_meta(NS, "alpha", {"regular": "1.0.0"})]
    resolved = resolve(Module(name="alpha"), "regular", metas, [raw])
    assert (resolved.install, resolved.source_type) == ("rawManifest", "raw-manifest")
    raw["spec"]["resources"] = []
    with pytest.raises(
        CatalogError, match=re.escape("alpha-1.0.0: spec.resources has no `chart` or `rawManifest`")
    ):
        resolve(Module(name="alpha"), "regular", metas, [raw])


def test_versions_order_numerically_and_releases_after_prereleases() -> None:
    assert version_key("1.10.0") > version_key("1.9.0")
    assert version_key("v2.0.0") > version_key("2.0.0-rc.1")
    assert version_key("1.0.0") == version_key("v1.0.0")


@pytest.mark.parametrize("flag", ["beta", "internal"])
def test_a_beta_or_internal_module_is_offered_only_to_a_kyma_labelled_for_it(flag: str) -> None:
    """As the lifecycle manager: the ModuleReleaseMeta's flag against the Kyma's label."""
    meta = release_meta(NS, "alpha", {"regular": "1.0.0"})
    meta["spec"][flag] = True
    templates = [template(NS, "alpha", "1.0.0", CHART)]
    label = f"operator.kyma-project.io/{flag}"
    for labels in (None, {}, {label: "false"}, {f"operator.kyma-project.io/x{flag}": "true"}):
        with pytest.raises(
            CatalogError,
            match=re.escape(f"module alpha is {flag}: offered only to Kymas labelled {label}=true"),
        ):
            resolve(Module(name="alpha"), "regular", [meta], templates, kyma_labels=labels)
    for value in ("true", "True"):
        resolved = resolve(
            Module(name="alpha"), "regular", [meta], templates, kyma_labels={label: value}
        )
        assert resolved.version == "1.0.0"


def test_an_internal_beta_module_needs_both_labels_and_old_catalogs_label_the_template() -> None:
    meta = release_meta(NS, "alpha", {"regular": "1.0.0"})
    meta["spec"].update(beta=True, internal=True)
    templates = [template(NS, "alpha", "1.0.0", CHART)]
    beta_only = {"operator.kyma-project.io/beta": "true"}
    with pytest.raises(CatalogError, match="is internal"):
        resolve(Module(name="alpha"), "regular", [meta], templates, kyma_labels=beta_only)
    both = {**beta_only, "operator.kyma-project.io/internal": "true"}
    resolve(Module(name="alpha"), "regular", [meta], templates, kyma_labels=both)

    legacy = template(NS, "alpha", "2.0.0", CHART)
    legacy["spec"]["channel"] = "regular"
    legacy["metadata"]["labels"] = {"operator.kyma-project.io/beta": "true"}
    with pytest.raises(CatalogError, match="is beta"):
        resolve(Module(name="alpha"), "regular", [], [legacy])
    assert resolve(Module(name="alpha"), "regular", [], [legacy], kyma_labels=beta_only)


def test_the_remote_catalog_offers_beta_and_internal_modules_only_to_labelled_kymas() -> None:
    metas = [
        release_meta(NS, "alpha", {"regular": "1.0.0"}),
        release_meta(NS, "beta", {"regular": "1.0.0"}),
        release_meta(NS, "gamma", {"regular": "1.0.0"}),
    ]
    metas[1]["spec"]["beta"] = True
    metas[2]["spec"]["internal"] = True
    templates = [template(NS, name, "1.0.0", CHART) for name in ("alpha", "beta", "gamma")]
    kyma = modules_kyma(NS, "k", "regular", [])
    assert set(offered(kyma, metas, templates)) == {"alpha-1.0.0"}
    kyma["metadata"]["labels"] = {"operator.kyma-project.io/beta": "true"}
    assert set(offered(kyma, metas, templates)) == {"alpha-1.0.0", "beta-1.0.0"}
    kyma["metadata"]["labels"]["operator.kyma-project.io/internal"] = "true"
    assert set(offered(kyma, metas, templates)) == {"alpha-1.0.0", "beta-1.0.0", "gamma-1.0.0"}


def test_a_restricted_module_is_resolved_and_offered_only_to_the_kymas_it_selects() -> None:
    meta = release_meta(NS, "alpha", {"regular": "1.0.0"})
    meta["spec"]["kymaSelector"] = {
        "matchLabels": {"kyma-project.io/region": "eu"},
        "matchExpressions": [
            {"key": "kyma-project.io/plan", "operator": "In", "values": ["trial", "aws"]},
            {"key": "kyma-project.io/frozen", "operator": "DoesNotExist"},
        ],
    }
    templates = [template(NS, "alpha", "1.0.0", CHART)]
    chosen = {"kyma-project.io/region": "eu", "kyma-project.io/plan": "aws"}
    assert resolve(Module(name="alpha"), "regular", [meta], templates, kyma_labels=chosen)
    for labels in (
        {},
        {**chosen, "kyma-project.io/region": "us"},
        {**chosen, "kyma-project.io/plan": "azure"},
        {**chosen, "kyma-project.io/frozen": "yes"},
    ):
        with pytest.raises(CatalogError, match="is restricted"):
            resolve(Module(name="alpha"), "regular", [meta], templates, kyma_labels=labels)
    kyma = modules_kyma(NS, "k", "regular", [])
    assert offered(kyma, [meta], templates) == {}
    kyma["metadata"]["labels"] = chosen
    assert set(offered(kyma, [meta], templates)) == {"alpha-1.0.0"}


def test_the_remote_catalog_is_every_channel_a_kyma_may_use_without_mandatory_modules() -> None:
    """As the lifecycle manager's catalog sync: ModuleReleaseMetas with only the channels whose
    template the Kyma may use, their templates, and nothing mandatory (every Kyma has those)."""
    alpha = release_meta(NS, "alpha", {"regular": "1.0.0", "fast": "1.1.0", "exp": "9.9.9"})
    shield = release_meta(NS, "shield", {})
    shield["spec"]["mandatory"] = {"version": "1.0.0"}
    legacy = template(NS, "old", "0.1.0", CHART)
    legacy["spec"]["channel"] = "regular"
    beta_template = template(NS, "alpha", "1.1.0", CHART)
    beta_template["metadata"]["labels"] = {"operator.kyma-project.io/beta": "true"}
    templates = [
        template(NS, "alpha", "1.0.0", CHART),
        beta_template,
        template(NS, "shield", "1.0.0", CHART),
        legacy,
    ]
    kyma = modules_kyma(NS, "k", "regular", [])
    metas, offered_templates = offered_catalog(kyma, [alpha, shield], templates)
    assert set(offered_templates) == {"alpha-1.0.0", "old-0.1.0"}
    assert metas["alpha"]["spec"]["channels"] == [{"channel": "regular", "version": "1.0.0"}]
    assert set(metas) == {"alpha"}
    kyma["metadata"]["labels"] = {"operator.kyma-project.io/beta": "true"}
    metas, offered_templates = offered_catalog(kyma, [alpha, shield], templates)
    assert set(offered_templates) == {"alpha-1.0.0", "alpha-1.1.0", "old-0.1.0"}
    assert [c["channel"] for c in metas["alpha"]["spec"]["channels"]] == ["regular", "fast"]


def test_mandatory_modules_from_release_metas_and_older_mandatory_templates() -> None:
    shield = release_meta(NS, "shield", {"regular": "2.0.0"})
    shield["spec"]["mandatory"] = {"version": "1.0.0"}
    missing = release_meta(NS, "ghost", {})
    missing["spec"]["mandatory"] = {"version": "3.0.0"}
    old1, old2 = template(NS, "guard", "1.0.0", CHART), template(NS, "guard", "1.2.0", CHART)
    for old in (old1, old2):
        old["spec"].update(mandatory=True, channel="regular")
    templates = [
        template(NS, "shield", "1.0.0", CHART),
        template(NS, "shield", "2.0.0", CHART),
        old1,
        old2,
    ]
    found, problems = mandatory_modules([shield, missing], templates)
    assert [(r.module, r.version) for r in found] == [("guard", "1.2.0"), ("shield", "1.0.0")]
    assert problems == ["no ModuleTemplate for mandatory module ghost version 3.0.0"]
    # listed by a Kyma: the mandatory version, whatever the channel says
    listed = resolve(Module(name="shield"), "regular", [shield], templates)
    assert listed.version == "1.0.0"
    # an older mandatory template is never what a listed module resolves to
    with pytest.raises(CatalogError, match="no ModuleReleaseMeta and no ModuleTemplate"):
        resolve(Module(name="guard"), "regular", [], templates)
    deleting = {**shield, "metadata": {**shield["metadata"], "deletionTimestamp": "x"}}
    assert [r.module for r in mandatory_modules([deleting], templates[:2])[0]] == []
