"""The documentation shows commands that exist and links that lead somewhere.

Read: README.md, every page under docs/ and every examples/*/README.md.

Commands: every `reconciler ...` invocation in a fenced shell block (```sh, ```bash, ```console
prompts, or a block without a language) is resolved through the CLI itself: the command path
through `LAZY_COMMANDS` / `load_command` of `reconciler.cli.main` and the typer groups below
them (`reconciler cluster status` -> group `cluster`, command `status`), then every `--option`
and `-o` it uses is looked up in that command's parameters (`opts` and `secondary_opts`; an
option's value is skipped, `--option=value` and `-oVALUE` are understood). Lines ending in `\\`
continue the command; comments, heredoc bodies and other programs' command lines are not
commands. Synopsis brackets (`[--print]`, `[-c NAME]...`, `[--dry-run|--print]`) are read as
the options they name. The command objects are inspected, not run, and nothing imports `click`:
typer vendors its own.

Links: every relative markdown link (inline or reference-style, outside code) names a file of
this repository, and a `#fragment` into a markdown page names one of its headings (GitHub's
anchors). Nothing points outside the repository, `../shared` included.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main

from reconciler.cli.main import LAZY_COMMANDS, app, load_command

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [
        REPO / "README.md",
        *(REPO / "docs").rglob("*.md"),
        *REPO.glob("examples/*/README.md"),
    ]
)
SHELL_BLOCKS = {"", "sh", "bash", "shell", "zsh", "console", "shell-session"}
PROMPTED_BLOCKS = {"console", "shell-session"}
"""Blocks that show output too: only `$ `-prompted lines are commands there."""
SEPARATORS = {"|", "||", "&&", ";", "&", "(", ")", "{", "}", "!"}
PREFIX_WORDS = {"sudo", "exec", "time", "nohup", "env", "command", "then", "do", "else"}
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
REDIRECT = re.compile(r"\d*(>>?|<<?)(&\d*)?")
PLACEHOLDER = re.compile(r"<[^<>]+>")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([^\s`]*)")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
CODE_SPAN = re.compile(r"(`+).*?\1")
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Shown:
    """One command line as a page shows it (continuations joined)."""

    page: Path
    line: int
    text: str

    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}: `{self.text}`"


def _pages() -> list[Any]:
    return [pytest.param(page, id=str(page.relative_to(REPO))) for page in DOCS]


# --- reading the pages ---------------------------------------------------------------------


def _prose_and_code(page: Path) -> tuple[list[tuple[int, str]], list[tuple[str, int, list[str]]]]:
    """The page's lines outside fenced blocks, and each fenced block (language, first line,
    lines)."""
    prose: list[tuple[int, str]] = []
    blocks: list[tuple[str, int, list[str]]] = []
    fence: str | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        opened = FENCE.match(line)
        if fence is None:
            if opened:
                fence = opened.group(1)
                blocks.append((opened.group(2).lower(), number + 1, []))
            else:
                prose.append((number, line))
        elif opened and opened.group(1).startswith(fence) and not opened.group(2):
            fence = None
        else:
            blocks[-1][2].append(line)
    return prose, blocks


def _logical_lines(first: int, lines: list[str], prompted: bool) -> Iterator[tuple[int, str]]:
    """Lines of a shell block with `\\` continuations joined, heredoc bodies left out."""
    heredoc_end: str | None = None
    pending: list[str] = []
    start = first
    for number, line in enumerate(lines, first):
        if heredoc_end is not None:
            if line.strip() == heredoc_end:
                heredoc_end = None
            continue
        if not pending:
            start = number
            if prompted:
                stripped = line.lstrip()
                if not stripped.startswith("$ "):
                    continue
                line = stripped[2:]
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        text = " ".join(part.strip() for part in pending)
        pending = []
        heredoc = HEREDOC.search(text)
        if heredoc:
            heredoc_end = heredoc.group(2)
        yield start, text
    if pending:
        yield start, " ".join(part.strip() for part in pending)


def _words(text: str) -> list[str]:
    # `|` between synopsis brackets separates alternatives, not a pipeline: `[--dry-run|--print]`
    text = re.sub(r"\[[^\]]*\]", lambda match: match.group(0).replace("|", " "), text)
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        return list(lexer)
    except ValueError:  # an unbalanced quote: a prose-like line; read it word by word
        return text.split("#", 1)[0].split()


def _invocations(text: str) -> Iterator[list[str]]:
    """The arguments of each `reconciler` invocation of a shell line."""
    words = _words(text)
    at_start = True
    current: list[str] | None = None
    for word in words:
        if word in SEPARATORS:
            if current is not None:
                yield current
            current, at_start = None, True
            continue
        if current is not None:
            current.append(word)
            continue
        if at_start and (word in PREFIX_WORDS or ASSIGNMENT.match(word)):
            continue
        if at_start and word.rsplit("/", 1)[-1] == "reconciler":
            current = []
        at_start = False
    if current is not None:
        yield current


def shown_commands(page: Path) -> Iterator[tuple[Shown, list[str]]]:
    """Every `reconciler` invocation in the page's shell blocks, with its arguments."""
    _, blocks = _prose_and_code(page)
    for language, first, lines in blocks:
        if language not in SHELL_BLOCKS:
            continue
        for number, text in _logical_lines(first, lines, language in PROMPTED_BLOCKS):
            for arguments in _invocations(text):
                yield Shown(page, number, text), arguments


# --- resolving commands --------------------------------------------------------------------


def _synopsis(arguments: list[str]) -> Iterator[str]:
    """Arguments with synopsis notation undone: `[-c NAME]...` -> `-c`, `NAME`;
    `[--dry-run|--print]` -> `--dry-run`, `--print`; redirections and what follows dropped."""
    for argument in arguments:
        if REDIRECT.fullmatch(argument) or (
            REDIRECT.match(argument) and not PLACEHOLDER.fullmatch(argument)
        ):
            return
        word = argument.strip("[]")
        if word.endswith("..."):
            word = word[:-3].rstrip("]")
        if not word:
            continue
        if word.startswith("-") and "|" in word:
            yield from (part for part in word.split("|") if part)
        else:
            yield word


def _options(command: Any) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option":
            continue
        for name in (*param.opts, *param.secondary_opts):
            table[name] = param
    return table


def _takes_value(param: Any) -> bool:
    return not (getattr(param, "is_flag", False) or getattr(param, "count", False))


def _help_names(command: Any) -> list[str]:
    settings = getattr(command, "context_settings", None) or {}
    names = settings.get("help_option_names", ["--help"])
    return list(names) if getattr(command, "add_help_option", True) else []


def _subcommand(group: Any, name: str, top: bool) -> Any:
    if top and name in LAZY_COMMANDS:
        return _load(name)
    commands = getattr(group, "commands", {})
    return commands.get(name) if name in commands else None


@functools.cache
def _top() -> Any:
    return typer.main.get_command(app)


@functools.cache
def _load(name: str) -> Any:
    return load_command(name)


def check_invocation(arguments: list[str]) -> list[str]:
    """What is wrong with `reconciler <arguments>`: unknown commands and options."""
    command: Any = _top()
    path = ["reconciler"]
    problems: list[str] = []
    words = list(_synopsis(arguments))
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            break
        if word.startswith("-") and len(word) > 1 and not re.fullmatch(r"-\d[\d.]*", word):
            options = _options(command)
            if word in _help_names(command):
                continue
            name, has_value = (word.split("=", 1)[0], True) if "=" in word else (word, False)
            param = options.get(name)
            if param is None and not word.startswith("--") and len(word) > 2:
                head = options.get(word[:2])  # `-oVALUE`, or flags together: `-vq`
                if head is not None and _takes_value(head):
                    continue
                if all(options.get(f"-{flag}") is not None for flag in word[1:]):
                    continue
            if param is None:
                known = ", ".join(sorted(options)) or "none"
                problems.append(f"`{' '.join(path)}` has no option {name} (it has: {known})")
                continue
            if _takes_value(param) and not has_value:
                index += max(int(getattr(param, "nargs", 1)), 1)
            continue
        if getattr(command, "commands", None) is not None:
            sub = _subcommand(command, word, top=len(path) == 1)
            if sub is None:
                names = ", ".join(sorted(command.commands))
                problems.append(f"`{' '.join(path)}` has no command {word!r} (it has: {names})")
                break
            command = sub
            path.append(word)
        # else: an argument of a command; its values are the command's business
    return problems


# --- links ---------------------------------------------------------------------------------


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, code and emphasis marks and punctuation gone,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    prose, _ = _prose_and_code(page)
    seen: dict[str, int] = {}
    result: set[str] = set()
    for _, line in prose:
        heading = HEADING.match(line)
        if not heading:
            continue
        anchor = _anchor(heading.group(1))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        result.add(anchor if count == 0 else f"{anchor}-{count}")
    return result


def relative_links(page: Path) -> Iterator[tuple[int, str]]:
    prose, _ = _prose_and_code(page)
    for number, line in prose:
        text = CODE_SPAN.sub("", line)
        found = [match.group(1) for match in INLINE_LINK.finditer(text)]
        reference = REFERENCE_LINK.match(text)
        if reference:
            found.append(reference.group(1))
        for target in found:
            if not SCHEME.match(target):
                yield number, target


def link_problem(page: Path, target: str) -> str | None:
    path_part, _, fragment = target.partition("#")
    path_part = path_part.split("?", 1)[0]
    destination = (page.parent / path_part).resolve() if path_part else page
    try:
        destination.relative_to(REPO)
    except ValueError:
        return f"{target} points outside the repository"
    if not destination.exists():
        return f"{target}: no such file {destination.relative_to(REPO)}"
    if fragment and destination.suffix == ".md" and fragment not in anchors(destination):
        return f"{target}: {destination.relative_to(REPO)} has no heading #{fragment}"
    return None


# --- the tests -----------------------------------------------------------------------------


@pytest.mark.parametrize("page", _pages())
def test_every_reconciler_command_shown_exists(page: Path) -> None:
    problems = [
        f"{shown.where()}: {problem}"
        for shown, arguments in shown_commands(page)
        for problem in check_invocation(arguments)
    ]
    assert not problems, "\n".join(problems)


def test_the_pages_show_commands_at_all() -> None:
    """The reader found the commands (a parser that finds none would pass every page)."""
    shown = [item for page in DOCS for item in shown_commands(page)]
    assert len(shown) >= 20, [item[0].where() for item in shown]
    assert {arguments[0] for _, arguments in shown if arguments} >= {
        "deploy",
        "mothership",
        "operator",
        "infra",
        "component",
        "dev-cluster",
        "cluster",
    }


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        (["deploy", "--kubeconfig", "K", "--workspce", "W"], "has no option --workspce"),
        (["deploy", "-x"], "has no option -x"),
        (["cluster", "staus"], "has no command 'staus'"),
        (["operator", "run", "--namespce=kcp-system"], "has no option --namespce"),
    ],
)
def test_a_misspelt_command_or_option_is_found(arguments: list[str], problem: str) -> None:
    problems = check_invocation(arguments)
    assert len(problems) == 1, problems
    assert problem in problems[0], problems


@pytest.mark.parametrize(
    "line",
    [
        "reconciler deploy --workspace W --kubeconfig K -f v.yaml --value a=1 -c x -c y",
        "KUBECONFIG=k .venv/bin/reconciler cluster status --url http://x -o json rt-1",
        "reconciler deploy -wexamples/platform --kubeconfig=K  # a comment --nonsense",
        "reconciler operator deploy [--kubeconfig K] [--dry-run|--print]",
        "reconciler --version && reconciler version | cat",
        "reconciler deploy --help",
    ],
)
def test_correct_commands_pass(line: str) -> None:
    invocations = list(_invocations(line))
    assert invocations
    for arguments in invocations:
        assert check_invocation(arguments) == [], line


def test_other_programs_are_not_read_as_reconciler() -> None:
    line = "helm upgrade --install reconciler deploy/chart -n reconciler-system -f values.yaml"
    assert list(_invocations(line)) == []


@pytest.mark.parametrize("page", _pages())
def test_every_relative_link_leads_to_a_file_of_the_repository(page: Path) -> None:
    problems = [
        f"{page.relative_to(REPO)}:{number}: {problem}"
        for number, target in relative_links(page)
        if (problem := link_problem(page, target)) is not None
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", _pages())
def test_no_page_points_outside_the_repository(page: Path) -> None:
    """The project's private reference material (`../shared`) is not the reader's."""
    lines = [
        f"{page.relative_to(REPO)}:{number}: {line.strip()}"
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if "../shared" in line
    ]
    assert not lines, "\n".join(lines)


def test_continuations_join_and_heredoc_bodies_are_data() -> None:
    lines = [
        "cat > values.yaml <<'VALUES'",
        "reconciler deploy --not-an-option   # YAML, not a command",
        "VALUES",
        "reconciler deploy --workspace W \\",
        "  --kubeconfig K \\",
        "  --workspce W 2>&1 | tee log",
    ]
    logical = list(_logical_lines(10, lines, prompted=False))
    assert [number for number, _ in logical] == [10, 13]
    arguments = next(_invocations(logical[1][1]))
    assert check_invocation(arguments) == [
        check_invocation(["deploy", "--workspce"])[0],
    ]
