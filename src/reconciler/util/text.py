"""Words for people: counts with the right noun form, so no output says "1 objects"."""

from __future__ import annotations


def count(number: int, noun: str, plural: str | None = None) -> str:
    """`count(1, "object")` is "1 object", `count(3, "object")` "3 objects"."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
