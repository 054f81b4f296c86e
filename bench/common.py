"""Shared benchmark plumbing: run a command, measure wall time and its own peak RSS."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from dataclasses import dataclass


@dataclass
class Run:
    seconds: float
    peak_rss_mb: float
    stdout: str


def measure(argv: list[str], env: dict | None = None, cwd: str | None = None) -> Run:
    """Run argv; wall time and the child's peak RSS from wait4 (no sampling gaps)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = b"", b""
    # communicate() would reap the child before wait4 could; read pipes, then reap ourselves.
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {err.decode()[-2000:]}")
    return Run(seconds, usage.ru_maxrss / 1024, out.decode())


def median(values: list[float]) -> float:
    return statistics.median(values)
