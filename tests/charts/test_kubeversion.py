"""Chart.yaml `kubeVersion` ranges, with the semantics Helm's semver library gives them."""

from __future__ import annotations

import pytest

from reconciler.charts.kubeversion import cluster_satisfies, parse_version, satisfies


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [
        ("v1.20.2", ">=1.16.0-0", True),
        ("v1.20.2", ">=1.25.0-0", False),
        ("v1.27.3-gke.100", ">=1.16.0", False),  # a prerelease needs a range that names one
        ("v1.27.3-gke.100", ">=1.16.0-0", True),
        ("v1.20.2", ">= 1.18, < 1.22", True),
        ("v1.20.2", ">=1.18 <1.20", False),
        ("v1.20.2", "<1.19 || >=1.20", True),
        ("v1.20.2", "1.19 - 1.21", True),
        ("v1.21.9", "1.19 - 1.21", True),
        ("v1.22.0", "1.19 - 1.21", False),
        ("v1.20.2", "~1.20", True),
        ("v1.21.0", "~1.20", False),
        ("v1.20.2", "^1.2", True),
        ("v2.0.0", "^1.2", False),
        ("v0.2.5", "^0.2.3", True),
        ("v0.3.0", "^0.2.3", False),
        ("v1.20.2", ">1.20", False),
        ("v1.21.0", ">1.20", True),
        ("v1.20.2", "<=1.20", True),
        ("v1.21.0", "<=1.20", False),
        ("v1.20.2", "1.20.x", True),
        ("v1.20.2", "!=1.20.x", False),
        ("v1.20.2", "!=1.21.0", True),
        ("v1.20.2", "*", True),
        ("v1.20.2", "not a range", False),
    ],
)
def test_kube_version_ranges(version: str, constraint: str, expected: bool) -> None:
    assert satisfies(version, constraint) is expected


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [  # each checked with `helm template --kube-version` (Helm 4.1.4)
        ("v1.30.0-gke.100", ">=1.25.0", True),
        ("v1.29.9-eks-abc", ">=1.25.0", True),
        ("v1.30.2+k3s1", ">=1.25.0", True),
        ("v1.30.0-rc.1", ">=1.30.0", True),
        ("v1.30.0-gke.100", "<1.30.0", False),
        ("v1.29.9-eks-abc", ">=1.30.0", False),
        ("v1.30.0-gke.100", "~1.30.0", True),
        ("v1.29.9-eks-abc", "1.30.x", False),
        ("v1.20.0-gke.1", ">=1.25.0", False),
        ("not a version", ">=1.0.0", False),
    ],
)
def test_a_cluster_meets_a_range_by_its_version_without_vendor_suffix(
    version: str, constraint: str, expected: bool
) -> None:
    assert cluster_satisfies(version, constraint) is expected


def test_versions_order_by_semver_precedence() -> None:
    assert parse_version("v1.20.2-alpha.1").compare(parse_version("v1.20.2-alpha.beta")) < 0
    assert parse_version("v1.20.2-rc.2").compare(parse_version("v1.20.2-rc.10")) < 0
    assert parse_version("v1.20.2").compare(parse_version("v1.20.2-rc.1")) > 0
    assert parse_version("1.20").compare(parse_version("v1.20.0+build.5")) == 0
