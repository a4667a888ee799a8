"""Build the project's OCI image on this machine without a container daemon (`make image`).

One image for every role (the command decides: `mothership serve`, `component serve`,
`operator run`, ...). Three layers, each cached under `~/.cache/reconciler/image` by the digest
of its inputs, so a machine builds each at most once:

1. base: Python and the C libraries it links, extracted from Debian packages by `mmdebstrap
   --variant=extract` (no maintainer scripts run, no shell, no package manager in the result;
   the same Debian suite and Python minor version as this machine, so wheels installed here run
   there), plus `/etc/passwd` naming the non-root user 65532;
2. dependencies: the project's PyPI dependencies as wheels (pinned by constraints.txt),
   byte-compiled ahead of time because the root file system is read-only at run time;
3. the project itself and the entry point `/usr/bin/reconciler` (a Python script: the kernel
   runs its `#!` line, so nothing needs a shell).

buildah and umoci are not needed: each layer is a plain tar assembled here, and the OCI image
layout (`devcluster/ocilayout.py`) is three JSON documents around them.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from reconciler.devcluster.ocilayout import CONFIG, LAYER, MANIFEST, Descriptor, Layout
from reconciler.devcluster.system import apt_install, report_to_stderr, run
from reconciler.errors import DevClusterError
from reconciler.paths import cache_dir
from reconciler.version import __version__

FORMAT = "2"  # bump when the layers' recipe changes: every cached layer is rebuilt
USER = 65532
SITE = "usr/lib/python3/dist-packages"  # on Debian's interpreter's path without any setting
PY = f"python{sys.version_info.major}.{sys.version_info.minor}"
BASE_PACKAGES = (f"{PY}-minimal", f"lib{PY}-stdlib")
DROP = (
    "usr/share/doc/",
    "usr/share/man/",
    "usr/share/info/",
    "usr/share/locale/",
    "usr/share/lintian/",
    "var/cache/",
    "var/lib/apt/",
    "var/lib/dpkg/",
    "var/log/",
)
ENTRY_POINT = f"#!/usr/bin/{PY}\nfrom reconciler.cli.main import main\n\nmain()\n"
ENV = [
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "HOME=/tmp",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
    "RECONCILER_CACHE_DIR=/var/cache/reconciler",
]
EPOCH = 0  # every file of layers 2 and 3 gets this mtime: same inputs, same digests


def image_dir() -> Path:
    return cache_dir() / "image"


class _Hashing(io.RawIOBase):
    """Counts and hashes what passes through to `target` (the uncompressed tar: the diff ID)."""

    def __init__(self, target: IO[bytes]) -> None:
        self.target = target
        self.digest = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.digest.update(data)
        self.target.write(data)
        return len(data)


def write_layer(layout: Layout, fill: Callable[[tarfile.TarFile], None]) -> tuple[Descriptor, str]:
    """A gzip'd tar layer written by `fill`, stored as a blob; its descriptor and diff ID."""
    with tempfile.NamedTemporaryFile(dir=layout.root, delete=False) as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
            hashing = _Hashing(gz)  # type: ignore[arg-type]
            with tarfile.open(fileobj=hashing, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                fill(tar)
        diff_id = "sha256:" + hashing.digest.hexdigest()
    return layout.add_file(Path(raw.name), LAYER), diff_id


def _normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = EPOCH
    return info


def add_tree(tar: tarfile.TarFile, root: Path) -> None:
    """Every file below `root` at its path relative to it, in sorted order, owned by root."""
    for path in sorted(root.rglob("*")):
        tar.add(
            path, arcname=path.relative_to(root).as_posix(), recursive=False, filter=_normalised
        )


def add_text(tar: tarfile.TarFile, name: str, text: str, mode: int = 0o644, uid: int = 0) -> None:
    data = text.encode()
    info = _normalised(tarfile.TarInfo(name))
    info.size, info.mode, info.uid, info.gid = len(data), mode, uid, uid
    tar.addfile(info, io.BytesIO(data))


def add_dir(tar: tarfile.TarFile, name: str, mode: int = 0o755, uid: int = 0) -> None:
    info = _normalised(tarfile.TarInfo(name))
    info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, mode, uid, uid
    tar.addfile(info)


def _suite() -> str:
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip('"')
    raise DevClusterError("cannot tell this machine's Debian suite (/etc/os-release)")


def _apt_sources() -> list[str]:
    """This machine's own package sources (mmdebstrap reads each file as given)."""
    sources = [Path("/etc/apt/sources.list")]
    sources += sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    sources += sorted(Path("/etc/apt/sources.list.d").glob("*.list"))
    return [str(p) for p in sources if p.is_file() and p.stat().st_size > 0]


def fill_base(work: Path) -> Callable[[tarfile.TarFile], None]:
    apt_install(["mmdebstrap"])
    extracted = work / "base.tar"
    run(
        [
            "mmdebstrap",
            "--quiet",
            "--variant=extract",
            f"--include={','.join(BASE_PACKAGES)}",
            _suite(),
            str(extracted),
            *_apt_sources(),
        ]
    )

    def fill(tar: tarfile.TarFile) -> None:
        with tarfile.open(extracted) as source:
            for info in source:
                name = info.name.removeprefix("./")
                if not name or name.startswith(DROP) or info.ischr() or info.isblk():
                    continue
                if name.startswith("dev/") and not info.isdir():
                    continue
                info.name = name
                tar.addfile(info, source.extractfile(info) if info.isfile() else None)
        add_text(
            tar,
            "etc/passwd",
            f"root:x:0:0:root:/root:/nonexistent\n"
            f"nonroot:x:{USER}:{USER}:nonroot:/tmp:/nonexistent\n",
        )
        add_text(tar, "etc/group", f"root:x:0:\nnonroot:x:{USER}:\n")
        add_dir(tar, "var/cache/reconciler", 0o755, USER)

    return fill


def _pip(*args: str) -> None:
    run([sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args])


def _compile(root: Path) -> None:
    """Byte-code beside the sources (naming them by their path in the image), valid without
    checking them: the image's file system is read-only, so Python cannot write it at run time."""
    run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            "-j0",
            "--invalidation-mode",
            "unchecked-hash",
            "-s",
            str(root),
            "-p",
            "/",
            str(root / SITE),
        ]
    )


def _dedupe_links(site: Path) -> None:
    """Wheels cannot hold symlinks, so a library shipped as `x.so`, `x.so.0`, `x.so.0.2` comes
    three times (the helm library: 85 MB each); keep one file, link the others."""
    by_digest: dict[tuple[int, str], Path] = {}
    for path in sorted(site.rglob("*.so*"), key=lambda p: (-len(p.name), str(p))):
        if not path.is_file() or path.is_symlink() or path.stat().st_size < 1 << 20:
            continue
        key = (path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest())
        if key in by_digest:
            path.unlink()
            path.symlink_to(by_digest[key].name)
        else:
            by_digest[key] = path


def fill_dependencies(repo: Path, work: Path) -> Callable[[tarfile.TarFile], None]:
    root = work / "deps"
    site = root / SITE
    dependencies = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["dependencies"]
    _pip(
        "install",
        "--target",
        str(site),
        "--only-binary=:all:",
        "--no-compile",
        "-c",
        str(repo / "constraints.txt"),
        *dependencies,
    )
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts naming this machine's Python
    _dedupe_links(site)
    _compile(root)
    return lambda tar: add_tree(tar, root)


def fill_project(repo: Path, work: Path) -> Callable[[tarfile.TarFile], None]:
    root = work / "app"
    site = root / SITE
    _pip("install", "--target", str(site), "--no-deps", "--no-compile", str(repo))
    shutil.rmtree(site / "bin", ignore_errors=True)
    _compile(root)

    def fill(tar: tarfile.TarFile) -> None:
        add_tree(tar, root)
        add_text(tar, "usr/bin/reconciler", ENTRY_POINT, 0o755)

    return fill


def _digest_of(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def layer_keys(repo: Path) -> dict[str, str]:
    """The input digest of each layer: what it is built from, and nothing else."""
    common = [FORMAT.encode(), PY.encode(), Path(__file__).read_bytes()]
    base = [*common, _suite().encode(), *(Path(s).read_bytes() for s in _apt_sources())]
    deps = [
        *common,
        (repo / "pyproject.toml").read_bytes(),
        (repo / "constraints.txt").read_bytes(),
    ]
    sources = sorted(
        p
        for tree in (repo / "src", repo / "deploy" / "chart")
        for p in tree.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    app = [*common, (repo / "pyproject.toml").read_bytes(), (repo / "README.md").read_bytes()]
    app += [str(p.relative_to(repo)).encode() + b"\0" + p.read_bytes() for p in sources]
    return {"base": _digest_of(base), "dependencies": _digest_of(deps), "project": _digest_of(app)}


def build(repo: Path, report: Callable[[str], None] = report_to_stderr) -> tuple[Layout, str]:
    """Build (or find cached) layers and the image; return the layout and the image's name."""
    layout = Layout(image_dir() / "oci")
    index_file = image_dir() / "layers.json"
    cached: dict[str, dict[str, Any]] = (
        json.loads(index_file.read_text()) if index_file.exists() else {}
    )
    descriptors: list[Descriptor] = []
    diff_ids: list[str] = []
    with tempfile.TemporaryDirectory(dir=image_dir()) as scratch:
        work = Path(scratch)
        builders = {
            "base": lambda: fill_base(work),
            "dependencies": lambda: fill_dependencies(repo, work),
            "project": lambda: fill_project(repo, work),
        }
        for layer, key in layer_keys(repo).items():
            entry = cached.get(key)
            if entry is None or not layout.blob(entry["digest"]).exists():
                started = time.monotonic()
                report(f"image: building layer {layer}")
                descriptor, diff_id = write_layer(layout, builders[layer]())
                entry = {"digest": descriptor.digest, "size": descriptor.size, "diff_id": diff_id}
                cached[key] = entry
                index_file.write_text(json.dumps(cached, indent=1))
                report(
                    f"image: layer {layer} {descriptor.size / 1e6:.1f} MB compressed"
                    f" in {time.monotonic() - started:.0f} s"
                )
            descriptors.append(Descriptor(LAYER, entry["digest"], entry["size"]))
            diff_ids.append(entry["diff_id"])
    config = layout.add_json(image_config(diff_ids), CONFIG)
    manifest = layout.add_json(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": config.as_json(),
            "layers": [d.as_json() for d in descriptors],
        },
        MANIFEST,
    )
    name = f"reconciler:{__version__}"
    layout.tag(manifest, name)
    return layout, name


def image_config(diff_ids: list[str]) -> dict[str, Any]:
    return {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "User": f"{USER}:{USER}",
            "Env": ENV,
            "Entrypoint": ["/usr/bin/reconciler"],
            "Cmd": ["--help"],
            "WorkingDir": "/tmp",
            "Labels": {
                "org.opencontainers.image.title": "reconciler",
                "org.opencontainers.image.version": __version__,
            },
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    }


def compressed_size(layout: Layout, name: str) -> int:
    manifest = layout.read_json(layout.manifest(name).digest)
    return sum(int(layer["size"]) for layer in manifest["layers"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build the reconciler OCI image (no daemon).")
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="project checkout")
    parser.add_argument("--push", metavar="REGISTRY/REPOSITORY:TAG", help="push it there too")
    args = parser.parse_args(argv)
    started = time.monotonic()
    layout, name = build(args.repo.resolve())
    size = compressed_size(layout, name)
    print(
        f"{name} in {layout.root} ({size / 1e6:.0f} MB compressed,"
        f" {time.monotonic() - started:.0f} s)"
    )
    if args.push:
        from reconciler.devcluster.ocilayout import push

        where, _, tag = args.push.rpartition(":")
        registry, _, repository = where.partition("/")
        print(f"pushed {args.push}@{push(layout, name, registry, repository, tag)}")


if __name__ == "__main__":
    os.umask(0o022)
    main()
