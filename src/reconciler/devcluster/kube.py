"""One local Kubernetes control plane: etcd + kube-apiserver (+ kube-controller-manager).

`start` always begins with an empty etcd and fresh certificates, picks free loopback ports, writes
`<dir>/kubeconfig` (cluster-admin via a client certificate) and returns once `/readyz` answers
and, with the controller-manager, the `default` ServiceAccount exists (so Pods can be created).
There is no scheduler and no kubelet: Pods stay Pending, and tests write the status a kubelet or
controller would write. `stop` ends exactly the processes `start` recorded in `<dir>/state.json`.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
import yaml

from reconciler.devcluster.pki import Pki, generate_pki
from reconciler.devcluster.ports import free_ports
from reconciler.devcluster.processes import is_running, spawn, terminate
from reconciler.errors import DevClusterError, WaitTimeout
from reconciler.paths import find_binary
from reconciler.util.polling import poll_until

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kubelet")


@dataclass(frozen=True)
class DevClusterInfo:
    """How to reach a running test-bed cluster."""

    directory: Path
    kubeconfig: Path
    api_url: str
    etcd_url: str
    pids: dict[str, int]
    ready_seconds: float


class DevCluster:
    """A throw-away control plane living in `directory` (logs, certificates, etcd data)."""

    def __init__(
        self,
        directory: Path,
        *,
        controller_manager: bool = True,
        kubelet: bool = False,
        ready_timeout: float = 120.0,
        die_with_parent: bool = False,
    ) -> None:
        """`die_with_parent`: the processes die with this one (test runs; see `processes`)."""
        self.directory = directory.resolve()
        self.die_with_parent = die_with_parent
        self.controller_manager = controller_manager
        self.kubelet = kubelet
        self.ready_timeout = ready_timeout

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def _state_file(self) -> Path:
        return self.directory / "state.json"

    def _marker(self) -> str:
        return str(self.directory) + "/"

    def _binary(self, name: str) -> str:
        path = find_binary(name)
        if path is None:
            raise DevClusterError(
                f"{name} not found: run 'reconciler dev-cluster build' or set KUBEBUILDER_ASSETS"
            )
        return str(path)

    def info(self) -> DevClusterInfo | None:
        """The recorded state of a started cluster, or None."""
        if not self._state_file.is_file():
            return None
        raw = json.loads(self._state_file.read_text())
        raw["directory"] = Path(raw["directory"])
        raw["kubeconfig"] = Path(raw["kubeconfig"])
        return DevClusterInfo(**raw)

    def status(self) -> dict[str, int | None]:
        """Pid of each component that is running, None for those that are not."""
        info = self.info()
        pids = info.pids if info else {}
        return {
            name: pid if (pid := pids.get(name)) and is_running(pid, self._marker()) else None
            for name in COMPONENTS
            if name != "kubelet" or name in pids
        }

    async def start(self) -> DevClusterInfo:
        """Start a fresh control plane; on any failure stop what was started and raise."""
        running = [name for name, pid in self.status().items() if pid]
        if running:
            raise DevClusterError(f"{', '.join(running)} already running for {self.directory}")
        self.directory.mkdir(parents=True, exist_ok=True)
        for stale in ("etcd-data", "pki"):
            shutil.rmtree(self.directory / stale, ignore_errors=True)
        started = time.monotonic()
        pki = generate_pki(self.directory / "pki")
        etcd_port, peer_port, api_port = free_ports(3)
        api_url = f"https://127.0.0.1:{api_port}"
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        pids: dict[str, int] = {}
        try:
            pids["etcd"] = self._start_etcd(etcd_port, peer_port)
            self._record(
                DevClusterInfo(self.directory, self.kubeconfig, api_url, etcd_url, pids, 0)
            )
            await self._wait_http(f"{etcd_url}/health", "etcd", pids["etcd"], None, '"true"')
            pids["kube-apiserver"] = self._start_apiserver(pki, etcd_url, api_port)
            self._record(
                DevClusterInfo(self.directory, self.kubeconfig, api_url, etcd_url, pids, 0)
            )
            self._write_kubeconfig(pki, api_url)
            ssl_ctx = _client_ssl(pki)
            await self._wait_http(
                f"{api_url}/readyz", "kube-apiserver", pids["kube-apiserver"], ssl_ctx, "ok"
            )
            if self.controller_manager:
                pids["kube-controller-manager"] = self._start_controller_manager(pki)
                await self._wait_http(
                    f"{api_url}/api/v1/namespaces/default/serviceaccounts/default",
                    "the default ServiceAccount (kube-controller-manager)",
                    pids["kube-controller-manager"],
                    ssl_ctx,
                    '"default"',
                )
            if self.kubelet:
                # the kubelet stand-in (see devcluster/kubelet.py): Pods get a kubelet's status
                pids["kubelet"] = self._spawn(
                    [
                        sys.executable,
                        "-m",
                        "reconciler.devcluster.kubelet",
                        "--kubeconfig",
                        str(self.kubeconfig),
                    ],
                    self._log("kubelet"),
                )
        except BaseException:
            await terminate(list(pids.values()), self._marker())
            raise
        info = DevClusterInfo(
            self.directory,
            self.kubeconfig,
            api_url,
            etcd_url,
            pids,
            round(time.monotonic() - started, 2),
        )
        self._record(info)
        return info

    async def stop(self) -> None:
        """Stop the processes this directory's cluster started (no-op when none run)."""
        info = self.info()
        if info is None:
            return
        await terminate(list(info.pids.values()), self._marker())
        shutil.rmtree(self.directory / "etcd-data", ignore_errors=True)

    def _record(self, info: DevClusterInfo) -> None:
        data = asdict(info)
        data["directory"] = str(info.directory)
        data["kubeconfig"] = str(info.kubeconfig)
        self._state_file.write_text(json.dumps(data, indent=2))

    def _spawn(self, cmd: Sequence[str], log_file: Path) -> int:
        return spawn(cmd, log_file, die_with_parent=self.die_with_parent)

    def _log(self, name: str) -> Path:
        return self.directory / f"{name}.log"

    def _start_etcd(self, port: int, peer_port: int) -> int:
        peer = f"http://127.0.0.1:{peer_port}"
        client = f"http://127.0.0.1:{port}"
        return self._spawn(
            [
                self._binary("etcd"),
                "--name",
                "dev",
                "--data-dir",
                str(self.directory / "etcd-data"),
                "--listen-client-urls",
                client,
                "--advertise-client-urls",
                client,
                "--listen-peer-urls",
                peer,
                "--initial-advertise-peer-urls",
                peer,
                "--initial-cluster",
                f"dev={peer}",
                "--logger",
                "zap",
                "--log-level",
                "warn",
            ],
            self._log("etcd"),
        )

    def _start_apiserver(self, pki: Pki, etcd_url: str, port: int) -> int:
        cmd = [
            self._binary("kube-apiserver"),
            "--etcd-servers",
            etcd_url,
            "--bind-address",
            "127.0.0.1",
            "--advertise-address",
            "127.0.0.1",
            "--secure-port",
            str(port),
            "--insecure-port",
            "0",
            "--cert-dir",
            str(pki.directory),
            "--tls-cert-file",
            str(pki.path("server.crt")),
            "--tls-private-key-file",
            str(pki.path("server.key")),
            "--client-ca-file",
            str(pki.ca_cert),
            "--service-account-issuer",
            "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file",
            str(pki.path("sa.pub")),
            "--service-account-signing-key-file",
            str(pki.path("sa.key")),
            "--service-cluster-ip-range",
            "10.0.0.0/16",  # room for thousands of ClusterIP Services (benchmarks)
            "--authorization-mode",
            "RBAC",
            "--endpoint-reconciler-type",
            "none",
            "--allow-privileged=true",
        ]
        if not self.controller_manager:
            # Nobody creates the default ServiceAccount without the controller-manager, so the
            # ServiceAccount admission plugin would reject every Pod.
            cmd.append("--disable-admission-plugins=ServiceAccount")
        return self._spawn(cmd, self._log("kube-apiserver"))

    def _start_controller_manager(self, pki: Pki) -> int:
        return self._spawn(
            [
                self._binary("kube-controller-manager"),
                "--kubeconfig",
                str(self.kubeconfig),
                "--controllers",
                "*",
                "--leader-elect=false",
                "--port",
                "0",
                "--secure-port",
                "0",
                "--service-account-private-key-file",
                str(pki.path("sa.key")),
                "--root-ca-file",
                str(pki.ca_cert),
                "--cluster-signing-cert-file",
                str(pki.ca_cert),
                "--cluster-signing-key-file",
                str(pki.ca_key),
                "--use-service-account-credentials=false",
            ],
            self._log("kube-controller-manager"),
        )

    def _write_kubeconfig(self, pki: Pki, api_url: str) -> None:
        def b64(path: Path) -> str:
            return base64.b64encode(path.read_bytes()).decode()

        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "dev",
                    "cluster": {"server": api_url, "certificate-authority-data": b64(pki.ca_cert)},
                }
            ],
            "users": [
                {
                    "name": "dev-admin",
                    "user": {
                        "client-certificate-data": b64(pki.admin_cert),
                        "client-key-data": b64(pki.admin_key),
                    },
                }
            ],
            "contexts": [
                {
                    "name": "dev",
                    "context": {"cluster": "dev", "user": "dev-admin", "namespace": "default"},
                }
            ],
            "current-context": "dev",
        }
        self.kubeconfig.touch(mode=0o600)
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))

    async def _wait_http(
        self, url: str, what: str, pid: int, ssl_ctx: ssl.SSLContext | None, expect: str
    ) -> None:
        """Poll `url` until its body contains `expect`; fail early when the process died."""
        name = what.split()[0]
        async with httpx.AsyncClient(verify=ssl_ctx or False, timeout=2.0) as client:

            async def ready() -> bool:
                if not is_running(pid, self._marker()):
                    log_tail = _tail(
                        self._log(name if name in COMPONENTS else "kube-controller-manager")
                    )
                    raise DevClusterError(f"{what} exited during start-up:\n{log_tail}")
                try:
                    response = await client.get(url)
                except httpx.HTTPError:
                    return False
                return response.status_code == 200 and expect in response.text

            try:
                await poll_until(ready, timeout=self.ready_timeout, what=f"{what} at {url}")
            except WaitTimeout as exc:
                raise DevClusterError(f"{exc}; logs in {self.directory}") from exc


def _client_ssl(pki: Pki) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    return context


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"
