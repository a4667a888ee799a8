"""What the benchmark scripts share: a throw-away dev cluster, process accounting, results files.

Each benchmark starts its own test-bed cluster in a temporary directory and stops it on every way
out (exceptions and Ctrl-C included). Peak memory comes from the kernel (`wait4` rusage of
commands, taken by a small launcher; `ru_maxrss` of this process; `/proc/<pid>/status` of the
cluster's servers) and CPU time from `/proc/<pid>/stat`, so no extra dependency is needed.
Results land as JSON in `benchmarks/results/` (git-ignored); each run prints its ratio against
the previous one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from reconciler.devcluster import DevCluster, DevClusterInfo
from reconciler.devcluster.build import build_all
from reconciler.paths import find_binary

BENCH_DIR = Path(__file__).resolve().parent
CHARTS_DIR = BENCH_DIR / "charts"
RESULTS_DIR = BENCH_DIR / "results"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
T = TypeVar("T")


@contextlib.asynccontextmanager
async def dev_cluster(
    directory: Path, *, controller_manager: bool, kubelet: bool = False
) -> AsyncIterator[DevClusterInfo]:
    """A fresh test-bed cluster in `directory`, stopped on every way out of the block
    (`kubelet`: with the kubelet stand-in, so that workloads become ready)."""
    await asyncio.to_thread(build_all)  # idempotent; reports progress on a fresh machine
    cluster = DevCluster(
        directory, controller_manager=controller_manager, kubelet=kubelet, die_with_parent=True
    )
    try:
        yield await cluster.start()
    finally:
        # shielded: a Ctrl-C that cancelled the benchmark must not also cancel the clean-up
        await asyncio.shield(cluster.stop())


async def _cancel_on_sigterm(main: Coroutine[Any, Any, T]) -> T:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is not None:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await main
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def run_async(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, with SIGTERM handled like Ctrl-C: the benchmark is cancelled, its
    `finally` blocks stop the cluster, and the process exits with 128 + the signal number."""
    try:
        return asyncio.run(_cancel_on_sigterm(main))
    except KeyboardInterrupt:
        print("interrupted: cluster stopped", file=sys.stderr)
        raise SystemExit(128 + signal.SIGINT) from None
    except asyncio.CancelledError:
        print("terminated: cluster stopped", file=sys.stderr)
        raise SystemExit(128 + signal.SIGTERM) from None


@dataclass(frozen=True)
class Clis:
    """The `reconciler` and `helm` commands a benchmark compares, with environments that keep the
    reconciler's chart cache and Helm's state in the benchmark's scratch directory, not in $HOME."""

    reconciler: str
    helm: str
    reconciler_env: dict[str, str]
    helm_env: dict[str, str]


def clis(root: Path) -> Clis:
    helm = find_binary("helm")
    if helm is None:
        raise SystemExit("helm not found: run 'reconciler dev-cluster build'")
    base = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return Clis(
        reconciler=str(Path(sys.executable).with_name("reconciler")),
        helm=str(helm),
        reconciler_env={
            **base,
            "RECONCILER_CACHE_DIR": str(root / "cli-cache"),
            "TEST_ASSET_HELM": str(helm),
        },
        helm_env={
            **base,
            "HELM_CACHE_HOME": str(root / "helm" / "cache"),
            "HELM_CONFIG_HOME": str(root / "helm" / "config"),
            "HELM_DATA_HOME": str(root / "helm" / "data"),
        },
    )


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A temporary directory for clusters, workspaces and caches, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


@dataclass(frozen=True)
class ProcessRun:
    """One finished child process: wall time from spawn to exit, its peak RSS and output."""

    seconds: float
    peak_rss_mib: float
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float = float("nan")
    """User + system CPU of the command: unlike wall time, barely moved by other load."""


# Runs one measured command and reports its wall time and peak RSS. A child's `ru_maxrss` includes
# the RSS of the process it was forked from (Linux records the old address space's high-water
# mark at exec), so forking the command straight from this ~130 MiB process would report at least
# 130 MiB. This launcher is a bare `python -S` (~5 MiB), the floor of what it can report.
_LAUNCHER = """
import os, sys, time
begin = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - begin
with open(sys.argv[1], "w") as report:
    report.write(f"{seconds!r} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime!r}")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def _launch_and_wait(
    cmd: Sequence[str], env: Mapping[str, str], started: list[subprocess.Popen[bytes]]
) -> ProcessRun:
    program = shutil.which(cmd[0]) or cmd[0]
    with (
        tempfile.TemporaryDirectory(prefix="bench-run-") as tmp,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        report = Path(tmp, "report")
        process = subprocess.Popen(
            [sys.executable, "-S", "-c", _LAUNCHER, str(report), program, *cmd[1:]],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=dict(env),
            start_new_session=True,  # its own process group: a cancel can end all of it
        )
        started.append(process)
        returncode = process.wait()
        out.seek(0)
        err.seek(0)
        measured = report.read_text().split() if report.exists() else ["nan", "0", "nan"]
        seconds, maxrss_kib, cpu = measured
        return ProcessRun(
            seconds=float(seconds),
            peak_rss_mib=int(maxrss_kib) / 1024,
            returncode=returncode,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
            cpu_seconds=float(cpu),
        )


async def run_measured(cmd: Sequence[str], *, env: Mapping[str, str]) -> ProcessRun:
    """Run `cmd` to completion; measure its wall time and (through `wait4`) its peak RSS."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        return await asyncio.to_thread(_launch_and_wait, cmd, env, started)
    except BaseException:
        for process in started:
            if process.returncode is None:  # cancelled: never leave the command running
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        raise


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds `pid` has used so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15)


def self_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def memory_mib(pid: int) -> dict[str, float]:
    """Current (VmRSS) and peak (VmHWM) resident memory of `pid` in MiB."""
    result = {"rss_mib": 0.0, "peak_rss_mib": 0.0}
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except (FileNotFoundError, ProcessLookupError):
        return result
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            kib = int(value.split()[0])
            result["rss_mib" if key == "VmRSS" else "peak_rss_mib"] = round(kib / 1024, 1)
    return result


def self_peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])  # without guest time, which is already counted in user
    return total - idle, total


@dataclass
class CpuMeter:
    """CPU used by this process, the cluster's servers and the whole machine over one window."""

    pids: dict[str, int]

    def __post_init__(self) -> None:
        self._start = self._sample()

    def _sample(self) -> dict[str, float]:
        sample = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        sample["benchmark"] = self_cpu_seconds()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        sample["children"] = children.ru_utime + children.ru_stime  # commands run and reaped
        busy, total = machine_ticks()
        sample["_busy"], sample["_total"] = float(busy), float(total)
        return sample

    def cores(self, wall: float) -> dict[str, float]:
        """Average cores used per process over the window (`children`: the commands this
        process ran and waited for), plus `machine_busy` (0..1)."""
        end = self._sample()
        used = {
            name: round((end[name] - self._start[name]) / wall, 2)
            for name in end
            if not name.startswith("_")
        }
        total = end["_total"] - self._start["_total"]
        used["machine_busy"] = (
            round((end["_busy"] - self._start["_busy"]) / total, 2) if total else 0
        )
        return used


def other_cores(cores: Mapping[str, float]) -> float:
    """Cores that processes outside the measurement used (a busy machine skews results)."""
    ours = sum(used for name, used in cores.items() if name != "machine_busy")
    return round(max(0.0, cores["machine_busy"] * (os.cpu_count() or 1) - ours), 2)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers], *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def environment() -> dict[str, Any]:
    """What the numbers depend on: cores, load before the run, interpreter."""
    return {
        "cpus": os.cpu_count(),
        "loadavg_before": [round(v, 2) for v in os.getloadavg()],
        "python": platform.python_version(),
        "machine": platform.machine(),
    }


def previous_results(name: str) -> dict[str, Any] | None:
    """The newest saved result of benchmark `name`, if any."""
    files = sorted(RESULTS_DIR.glob(f"{name}-*.json"))
    if not files:
        return None
    try:
        data: dict[str, Any] = json.loads(files[-1].read_text())
    except (OSError, json.JSONDecodeError):
        return None
    data["_file"] = files[-1].name
    return data


def save_results(name: str, data: Mapping[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def change(now: float, before: float | None) -> str:
    """`now` relative to the previous run, e.g. `x0.93` (lower is faster)."""
    return f"x{now / before:.2f}" if before else "-"
