"""Whether a chart may render differently from one render to the next with the same inputs.

Stable generated values (`core/generated.py`) find the paths a chart generates by rendering it a
second time and comparing. For most charts that second render can only find nothing: their
templates call no function whose result changes between calls. This module tells them apart by
reading the chart's files, without rendering, and errs towards "may vary": a chart is only
called deterministic when no template action anywhere in it (templates, subcharts, values files
whose strings may be `tpl`'d, any file `.Files.Get` may read and `tpl`) names a function from
`VARYING` or starting like `rand*`/`genX*`. The answer for a chart is a pure function of its
files, so callers cache it by the chart's file-tree fingerprint.

What is read, and why it is conservative:
- every file of the chart tree, subcharts included, `.tgz` subchart archives opened; a file,
  archive or linked directory that is not read makes the chart "may vary";
- every `{{ ... }}` action, comments removed (delimiters inside an action nest; an unclosed one
  runs to the end of the file); the names are taken from the whole action, string literals
  included, so a template built for `tpl` with `printf "{{ %s }}" "randAlphaNum"` is seen;
- a name counts when it stands alone (not a field `.x` or variable `$x`), so `.Values.now`
  is not a call but a string "now" is counted (harmless: one render more).
Out of reach: a function name assembled from pieces (`cat "rand" "AlphaNum"`) and `tpl`'d.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

VARYING = frozenset(
    {
        "uuidv4",
        "now",  # and so `date`/`dateInZone`/`htmlDate`/`unixEpoch` of now
        "ago",  # time since a date: changes with the clock
        "shuffle",
        "bcrypt",  # random salt
        "htpasswd",  # bcrypt
        "encryptAES",  # random IV
        "keys",  # a dict's keys in Go's random map order (unless sorted: cannot tell)
        "values",  # a dict's values, likewise
        "getHostByName",  # DNS
        "lookup",  # the cluster's objects (empty when rendering offline, but not ours to assume)
    }
)
"""Functions whose result may change between two renders of the same inputs (`derivePassword`,
`sha256sum`, `b64enc`, `toYaml` and the like are deterministic and not listed)."""

_DELIMITER = re.compile(r"\{\{|\}\}")
_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_NAME = re.compile(r"(?<![\w.$])[A-Za-z_]\w*")
_ARCHIVES = (".tgz", ".tar.gz")


def varying_calls(text: str) -> set[str]:
    """The names of `VARYING` functions (and `rand*`/`gen*` ones) in `text`'s template actions."""
    found = set()
    for action in _actions(text):
        for name in _NAME.findall(_COMMENT.sub(" ", action)):
            if name in VARYING or _has_varying_prefix(name):
                found.add(name)
    return found


def _actions(text: str) -> Iterator[str]:
    """The text of each outermost `{{ ... }}`: delimiters inside one (in a string literal meant
    for `tpl`) nest, and an action left open runs to the end of `text`."""
    depth = start = 0
    for match in _DELIMITER.finditer(text):
        if match.group() == "{{":
            if depth == 0:
                start = match.end()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                yield text[start : match.start()]
    if depth:
        yield text[start:]


def _has_varying_prefix(name: str) -> bool:
    """Sprig's random family (`randAlphaNum`, `randAlpha`, `randNumeric`, `randAscii`,
    `randBytes`, `randInt`) and its key and certificate generators (`genCA`, `genPrivateKey`,
    `genSignedCert`, `genSelfSignedCert` and their `WithKey` forms), future ones included; `gen`
    counts only before a capital letter, so an `include "generic.labels"` is not a call."""
    if name.startswith("rand"):
        return True
    return name.startswith("gen") and len(name) > 3 and name[3].isupper()


def chart_varying_calls(chart_dir: Path) -> set[str]:
    """The varying calls anywhere in the chart tree at `chart_dir` (see the module docstring);
    `{"<unread: why>"}` when something is not read, so callers treat the chart as varying."""
    found: set[str] = set()
    try:
        for _, text in _texts(chart_dir):
            calls = varying_calls(text)
            if calls:
                found |= calls
    except (OSError, tarfile.TarError, EOFError) as exc:
        return {f"<unread: {exc}>"}
    return found


def _texts(chart_dir: Path) -> Iterator[tuple[str, str]]:
    """(name, text) of every file under `chart_dir`, the members of archives included; bytes
    that are not UTF-8 are decoded leniently (a template is text; a binary file holds no action
    that a render could run, and lenient decoding still shows any `{{` it has)."""
    for path in sorted(chart_dir.rglob("*")):
        if path.is_symlink() and path.is_dir():
            raise OSError(f"{path}: a linked directory is not read")
        if not path.is_file():
            continue
        if path.name.endswith(_ARCHIVES):
            yield from _archive_texts(path)
        else:
            yield str(path), path.read_bytes().decode("utf-8", errors="replace")


def _archive_texts(path: Path) -> Iterator[tuple[str, str]]:
    with tarfile.open(path, "r:*") as archive:
        for member in archive.getmembers():
            if not member.isfile():
                continue
            handle = archive.extractfile(member)
            if handle is None:
                continue
            with handle:
                data = handle.read()
            name = f"{path}:{member.name}"
            if member.name.endswith(_ARCHIVES):
                raise tarfile.TarError(f"{name}: an archive inside an archive is not read")
            yield name, data.decode("utf-8", errors="replace")
