"""The one scrubber: every spelling of a secret goes, short values stay, log lines written inside
`scrubbing` lose the secrets of the work at hand, and upstream text is capped."""

from __future__ import annotations

import json

import pytest

from reconciler.observability.logging import configure_logging, get_logger
from reconciler.util.secrecy import (
    EXCERPT_LIMIT,
    REDACTED,
    Scrubber,
    active,
    excerpt,
    scrubbing,
    secret_strings,
)

SECRET = 'p@ss "word" \\ grün'


def test_scrubber_removes_the_secret_as_written_and_as_json_or_go_quoting_escapes_it() -> None:
    scrub = Scrubber([SECRET])
    for spelling in (SECRET, json.dumps(SECRET)[1:-1], json.dumps(SECRET, ensure_ascii=False)):
        assert SECRET not in scrub(f"Invalid value: {spelling}: bad")
        assert REDACTED in scrub(f"Invalid value: {spelling}: bad")


def test_scrubber_prefers_the_longest_secret_and_leaves_values_too_short_to_matter() -> None:
    scrub = Scrubber(["abcdefgh", "abcdefgh-and-more", "true", ""])
    assert scrub("x abcdefgh-and-more y abcdefgh z true") == f"x {REDACTED} y {REDACTED} z true"
    assert not Scrubber(["true", " "])


def test_secret_strings_are_the_leaves_of_structured_values() -> None:
    assert sorted(secret_strings({"a": ["one", 22], "b": {"c": 3.5}, "d": None, "e": True})) == [
        "22",
        "3.5",
        "one",
    ]


def test_excerpt_caps_upstream_text_and_says_so() -> None:
    page = "<html>" + "x" * 5000
    assert len(excerpt(page)) < EXCERPT_LIMIT + 20
    assert excerpt(page).endswith("[truncated]")
    assert excerpt("short") == "short"


async def test_log_lines_written_inside_scrubbing_lose_the_secrets_even_in_exceptions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json_lines=True, level="DEBUG")
    log = get_logger()
    with scrubbing(Scrubber(["outer-secret-1"])), scrubbing(Scrubber(["inner-secret-2"])):
        log.error("rejected", reason="label inner-secret-2 and outer-secret-1")
        try:
            raise ValueError("quoted inner-secret-2")
        except ValueError:
            log.exception("failed")
    log.info("outside", value="inner-secret-2")
    assert not active()
    lines = capsys.readouterr().err.splitlines()
    inside, outside = lines[:-1], lines[-1]
    assert all("secret-" not in line for line in inside)
    assert REDACTED in inside[0]
    assert "ValueError" in "".join(inside)
    assert "inner-secret-2" in outside  # nothing is scrubbed outside the work


LONG = "".join(f"{n:03d}-Xy" for n in range(150))  # 900 characters, no 12 alike in a row


def test_excerpt_scrubs_before_it_cuts_so_a_long_secret_leaves_nothing_behind() -> None:
    """A secret longer than the cap echoed by an apiserver: cut first, 448 of its characters
    went out (issue 26, item 3)."""
    message = f'ConfigMap "leaky" is invalid: Invalid value: "{LONG}!": must be no more than 63'
    with scrubbing(Scrubber([LONG])):
        bound = excerpt(message)
    given = excerpt(message, scrub=Scrubber([LONG]))
    for text in (bound, given):
        assert LONG[:12] not in text
        assert REDACTED in text
        assert "must be no more than 63" in text
    assert LONG[:12] in excerpt(message)  # nothing bound, nothing scrubbed


def test_what_an_upstream_cut_left_of_a_secret_is_redacted() -> None:
    scrub = Scrubber([LONG])
    assert scrub(f"quoted: {LONG[:448]}") == f"quoted: {REDACTED}"  # its beginning, anywhere
    assert scrub(f"{LONG[-300:]} was refused") == f"{REDACTED} was refused"  # its end
    assert (
        scrub(f"value {LONG[:200]}... (truncated) rest") == f"value {REDACTED}... (truncated) rest"
    )
    assert scrub(f"cut at the end: {LONG[:7]}") == f"cut at the end: {REDACTED}"
    assert scrub(f"{LONG[-7:]} began the text") == f"{REDACTED} began the text"
    middle = LONG[100:120]  # not a beginning or an end: a piece alone proves nothing
    assert scrub(f"x {middle} y") == f"x {middle} y"
    assert scrub("an ordinary message") == "an ordinary message"


def test_a_whole_only_secret_is_not_matched_in_part() -> None:
    kubeconfig = "apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: tok-123456789}}]"
    scrub = Scrubber(["tok-123456789"], whole=[kubeconfig])
    assert scrub("apiVersion: v1\nkind: Config is invalid") == (
        "apiVersion: v1\nkind: Config is invalid"
    )
    assert scrub(f"read {kubeconfig}") == f"read {REDACTED}"
    assert scrub("token tok-123456789") == f"token {REDACTED}"
    combined = scrub + Scrubber(["other-secret"])
    assert combined("apiVersion: v1\nkind: Config") == "apiVersion: v1\nkind: Config"
