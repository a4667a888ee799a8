"""Publishing to the test bed's OCI registry the way module authors do: `helm push` for charts,
the `oras` client for raw-manifest layers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import oras.client

from reconciler.paths import find_binary


def push_chart(registry: str, chart: Path, repository: str, work: Path) -> str:
    """`helm package` + `helm push --plain-http` to `oci://<registry>/<repository>`; the digest."""
    helm = find_binary("helm")
    assert helm is not None, "helm is part of the test bed"
    work.mkdir(parents=True, exist_ok=True)
    packaged = subprocess.run(
        [str(helm), "package", str(chart), "-d", str(work)],
        check=True,
        capture_output=True,
        text=True,
    )
    archive = packaged.stdout.strip().rpartition(": ")[2]
    pushed = subprocess.run(
        [str(helm), "push", archive, f"oci://{registry}/{repository}", "--plain-http"],
        check=True,
        capture_output=True,
        text=True,
    )
    return pushed.stderr.partition("Digest: ")[2].split()[0]


def push_layer(
    registry: str,
    target: str,
    file: Path,
    media_type: str = "application/x-yaml",
) -> str:
    """`oras push <registry>/<target> file:<media_type>` over plain HTTP; the manifest digest."""
    client = oras.client.OrasClient(hostname=registry, insecure=True)
    response = client.push(
        target=f"{registry}/{target}",
        files=[f"{file}:{media_type}"],
        disable_path_validation=True,
        quiet=True,
    )
    response.raise_for_status()
    return str(response.headers["Docker-Content-Digest"])
