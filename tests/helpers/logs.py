"""The one log schema every process writes: a JSON object per line with `timestamp`, `level`
and `event` (audit lines too, marked by a field)."""

from __future__ import annotations

import json
from typing import Any


def log_lines(output: str) -> list[dict[str, Any]]:
    """Every line of a process's output as a log line; fails naming the first that is not one."""
    lines = []
    for text in output.splitlines():
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON log line: {text[:300]}") from None
        assert isinstance(line, dict), text
        missing = {"timestamp", "level", "event"} - set(line)
        assert not missing, f"log line without {sorted(missing)}: {text[:300]}"
        lines.append(line)
    return lines
