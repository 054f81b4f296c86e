"""Shared benchmark plumbing: run a command, measure wall time and its own peak RSS."""

from __future__ import annotations

import resource
import statistics
import threading
import subprocess
import time
from dataclasses import dataclass


@dataclass
class Run:
    seconds: float
    peak_rss_mb: float
    stdout: str
    cpu_seconds: float = 0.0  # user + system time of the process and what it waited for
    timed_out: bool = False  # stopped after measure()'s timeout: `seconds` is a lower bound
    returncode: int = 0
    stderr: str = ""


def measure(argv: list[str], env: dict | None = None, cwd: str | None = None,
            timeout: float | None = None, check: bool = True) -> Run:
    """Run argv; wall time and its peak RSS (VmHWM of the process, polled until it exits).

    wait4's ru_maxrss is not used: on Linux a child's maxrss starts at the parent's RSS at
    fork, so a large benchmark process would set a floor under every tool it measures.
    VmHWM belongs to the exec'd program's own address space. With `timeout`, a command still
    running then is killed and reported with timed_out (its time is a lower bound of the whole).
    With check=False a non-zero exit is returned (returncode, stderr) instead of raised.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = [0]
    sampler = threading.Thread(target=_sample_hwm, args=(proc, peak), daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        sampler.join()
        return Run(time.perf_counter() - started, peak[0] / 1024, out.decode(), 0.0, timed_out=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # only this child was reaped meanwhile
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    sampler.join()
    if check and proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {err.decode()[-2000:]}")
    return Run(seconds, peak[0] / 1024, out.decode(), cpu, returncode=proc.returncode, stderr=err.decode())


def _sample_hwm(proc: subprocess.Popen, peak: list[int]) -> None:
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
        except OSError:
            return
        time.sleep(0.01)


def median(values: list[float]) -> float:
    return statistics.median(values)


def two_site_plan(name: str, repo: str, sources: str, extra: str = "", target: str = "") -> str:
    """A plan with the benchmarks' two failure domains (site-a lost, the repository in site-b);
    `sources` is the YAML of its `sources:` list, `extra` any top-level keys (encryption ...),
    `target` more keys of the target (`, endpoint_url: ...`)."""
    return (f"version: 1\nname: {name}\nfailure_domains:\n  - {{name: site-a, kind: region}}\n"
            f"  - {{name: site-b, kind: region}}\nprotects_against: [site-a]\n{extra}"
            f"targets:\n  - {{name: repo, url: \"{repo}\", domain: site-b{target}}}\nsources:\n{sources}")
