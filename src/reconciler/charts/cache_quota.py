"""Bounding the chart cache: a size limit with least-recently-used eviction.

The cache is content-addressed (`root/<sha256>/`, immutable once extracted) and used to grow
without bound: a 204 KB archive may unpack to 200 MiB, and every new digest stays. Each use of
an entry touches its directory's modification time; after a new entry is extracted, the least
recently used entries are removed until the cache fits its limit again. The new entry and any
entry used within the last `grace` seconds (a chart being rendered right now, perhaps by another
process sharing the cache) are kept, even if the cache then stays over its limit for a while.
An entry is renamed away before it is deleted, so no reader ever sees half a chart. Blocking;
callers run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from pathlib import Path


def touch(entry: Path) -> None:
    """Mark a cache entry as used now."""
    with contextlib.suppress(FileNotFoundError):
        os.utime(entry)


def tree_size(path: Path) -> int:
    """Bytes of the regular files under `path` (links are not followed)."""
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total


def evict(
    root: Path, max_bytes: int, *, keep: str, grace: float, sizes: dict[str, int]
) -> list[str]:
    """Remove least recently used entries of `root` until it holds at most `max_bytes`; return
    the names removed. `sizes` caches entry sizes between calls (entries never change)."""
    entries = []
    for path in root.iterdir():
        if path.name.startswith(".") or not path.is_dir():
            continue  # bookkeeping: the index, staging and entries being removed
        with contextlib.suppress(FileNotFoundError):
            entries.append((path.stat().st_mtime, path))
            if path.name not in sizes:
                sizes[path.name] = tree_size(path)
    total = sum(sizes.get(path.name, 0) for _, path in entries)
    now = time.time()
    removed: list[str] = []
    for used, path in sorted(entries):
        if total <= max_bytes:
            break
        if path.name == keep or now - used < grace:
            continue
        trash = root / f".evict-{path.name}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(path, trash)
        except OSError:
            continue  # removed by another process meanwhile
        shutil.rmtree(trash, ignore_errors=True)
        total -= sizes.pop(path.name, 0)
        removed.append(path.name)
    return removed
