"""The `kubeVersion` constraint of a Chart.yaml, checked the way Helm checks it.

`helm template --kube-version` refuses a chart whose `kubeVersion` range excludes the target
cluster; helm_python's native render does not check it at all. This module closes that gap with
the semantics of Masterminds/semver v3 (the library Helm uses): `||` groups, `,`/space AND, hyphen
ranges, `x`/`*` wildcards, `~`/`^`, and "a prerelease only matches a range that names one".
Helm 4 checks a cluster as `vMAJOR.MINOR.PATCH`: vendor suffixes (`v1.30.0-gke.100`,
`v1.29.9-eks-abc`, `v1.30.2+k3s1`) do not count (`cluster_satisfies`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_VERSION = re.compile(
    r"^v?(?P<major>0|[1-9]\d*)(?:\.(?P<minor>\d+))?(?:\.(?P<patch>\d+))?"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?$"
)
_SEG = r"[0-9xX*]+"
_CONSTRAINT_VERSION = (
    rf"v?(?:{_SEG})(?:\.{_SEG})?(?:\.{_SEG})?(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)
_RANGE = re.compile(rf"\s*({_CONSTRAINT_VERSION})\s+-\s+({_CONSTRAINT_VERSION})\s*")
_TERM = re.compile(rf"\s*(!=|>=|=>|<=|=<|~>|>|<|=|~|\^)?\s*({_CONSTRAINT_VERSION})\s*(?:,\s*)?")
_WILDCARDS = {"x", "X", "*"}


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: str = ""

    def compare(self, other: Version) -> int:
        """Semantic-version precedence: -1, 0 or 1."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        return _compare_pre(self.pre, other.pre)


def parse_version(text: str) -> Version:
    """Parse a version the lenient way Helm does (`v1.20.2`, `1.20`, `v1.27.3-gke.100`)."""
    match = _VERSION.match(text.strip())
    if not match:
        raise ValueError(f"invalid version {text!r}")
    return Version(
        int(match["major"]), int(match["minor"] or 0), int(match["patch"] or 0), match["pre"] or ""
    )


def _compare_pre(a: str, b: str) -> int:
    if a == b:
        return 0
    if not a or not b:
        return 1 if not a else -1  # a release ranks above any prerelease
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return -1 if x < y else 1
    return (len(a.split(".")) > len(b.split("."))) - (len(a.split(".")) < len(b.split(".")))


@dataclass(frozen=True)
class _Term:
    op: str
    con: Version
    dirty: bool
    minor_dirty: bool
    patch_dirty: bool

    def allows(self, v: Version, include_pre: bool) -> bool:
        if v.pre and not include_pre:
            return False
        return _CHECKS[self.op](self, v)


def _tilde(t: _Term, v: Version) -> bool:
    con = t.con
    if v.compare(con) < 0:
        return False
    if (con.major, con.minor, con.patch) == (0, 0, 0) and not (t.minor_dirty or t.patch_dirty):
        return True
    return v.major == con.major and (t.minor_dirty or v.minor == con.minor)


def _equal(t: _Term, v: Version) -> bool:
    return _tilde(t, v) if t.dirty else v.compare(t.con) == 0


def _caret(t: _Term, v: Version) -> bool:
    con = t.con
    if v.compare(con) < 0:
        return False
    if con.major > 0 or t.minor_dirty:
        return v.major == con.major
    if v.major > 0:
        return False
    if con.minor > 0 or t.patch_dirty:
        return v.minor == con.minor
    return v.minor == 0 and v.patch == con.patch


def _not_equal(t: _Term, v: Version) -> bool:
    con = t.con
    if t.dirty:
        if con.major != v.major or (con.minor != v.minor and not t.minor_dirty):
            return True
        if t.minor_dirty:
            return False
        if con.patch != v.patch and not t.patch_dirty:
            return True
        if t.patch_dirty:
            return _compare_pre(v.pre, con.pre) != 0
    return v.compare(con) != 0


def _greater(t: _Term, v: Version) -> bool:
    con = t.con
    if not t.dirty:
        return v.compare(con) > 0
    if v.major != con.major:
        return v.major > con.major
    if t.minor_dirty:
        return False
    if t.patch_dirty:
        return v.minor > con.minor
    return v.compare(con) > 0


def _less_equal(t: _Term, v: Version) -> bool:
    con = t.con
    if not t.dirty:
        return v.compare(con) <= 0
    if v.major != con.major:
        return v.major < con.major
    return t.minor_dirty or v.minor <= con.minor


_CHECKS: dict[str, Callable[[_Term, Version], bool]] = {
    "": _equal,
    "=": _equal,
    "!=": _not_equal,
    ">": _greater,
    "<": lambda t, v: v.compare(t.con) < 0,
    ">=": lambda t, v: v.compare(t.con) >= 0,
    "=>": lambda t, v: v.compare(t.con) >= 0,
    "<=": _less_equal,
    "=<": _less_equal,
    "~": _tilde,
    "~>": _tilde,
    "^": _caret,
}


def _parse_term(op: str, text: str) -> _Term:
    body = text[1:] if text.startswith("v") else text
    body, _, _meta = body.partition("+")
    numbers, _, pre = body.partition("-")
    segments = numbers.split(".")
    dirty = minor_dirty = patch_dirty = False
    if segments[0] in _WILDCARDS:
        dirty, values = True, [0, 0, 0]
    elif len(segments) < 2 or segments[1] in _WILDCARDS:
        dirty = minor_dirty = True
        values = [int(segments[0]), 0, 0]
    elif len(segments) < 3 or segments[2] in _WILDCARDS:
        dirty = patch_dirty = True
        values = [int(segments[0]), int(segments[1]), 0]
    else:
        values = [int(s) for s in segments]
    return _Term(op, Version(values[0], values[1], values[2], pre), dirty, minor_dirty, patch_dirty)


def _parse_group(group: str) -> list[_Term]:
    terms: list[_Term] = []
    position = 0
    text = group.strip()
    if not text:
        raise ValueError(f"improper constraint {group!r}")
    while position < len(text):
        match = _TERM.match(text, position)
        if not match or match.end() == position:
            raise ValueError(f"improper constraint {group!r}")
        try:
            terms.append(_parse_term(match[1] or "", match[2]))
        except ValueError as exc:
            raise ValueError(f"improper constraint {group!r}") from exc
        position = match.end()
    return terms


def satisfies(version: str, constraint: str) -> bool:
    """True when `version` lies in the `constraint` range; an unparsable one never does."""
    try:
        parsed = parse_version(version)
        rewritten = _RANGE.sub(lambda m: f" >= {m[1]}, <= {m[2]} ", constraint)
        groups = [_parse_group(group) for group in rewritten.split("||")]
    except ValueError:
        return False
    for terms in groups:
        include_pre = any(term.con.pre for term in terms)
        if all(term.allows(parsed, include_pre) for term in terms):
            return True
    return False


def cluster_satisfies(kube_version: str, constraint: str) -> bool:
    """Whether a cluster of `kube_version` meets a chart's `kubeVersion`, as Helm 4 decides it:
    on the version without its pre-release or build suffix (`helm template --kube-version
    v1.30.0-gke.100` accepts `>=1.25.0`; Masterminds alone would refuse it as a prerelease, and
    with it every managed cluster, GKE and EKS among them)."""
    try:
        parsed = parse_version(kube_version)
    except ValueError:
        return False
    return satisfies(f"v{parsed.major}.{parsed.minor}.{parsed.patch}", constraint)
