"""Executors: run N indexed shards of dr's own code, and say which indexes succeeded.

Like s3transfer's executors, the work (a ShardJob: dr's module and arguments, N indexes)
does not know where it runs. Every shard process gets its index in JOB_COMPLETION_INDEX,
exactly as a pod of a Kubernetes Indexed Job does, so the same shard code runs:
- LocalExecutor: N child processes of this interpreter (`python -m ...`), at most
  `parallelism` at once, each index retried up to `retries_per_index` times;
- KubernetesExecutor (kubernetes.py): one batch/v1 Job with completionMode Indexed.

Files a job needs (`files`: small text, e.g. a pointer to the shard plan) are written to a
folder whose path replaces `{files}` in the arguments: a temporary folder here, a mounted
ConfigMap in a pod. Nothing here knows checkpoints: image copies could shard through it too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable

INDEX_ENV = "JOB_COMPLETION_INDEX"  # what Kubernetes sets in each pod of an Indexed Job
FILES = "{files}"
TAIL = 2000  # characters of a failed shard's output kept for its reason
CANNOT_START = 2  # a shard's exit code when retrying will not help (no task, no index)


class ExecutorError(Exception):
    """The shards could not be run at all (no image, an API that refuses the Job ...)."""


@dataclass(frozen=True)
class ShardJob:
    name: str  # a DNS-1123 label: the Job's name on a cluster
    count: int  # indexes 0 .. count-1
    args: list[str]  # after the interpreter: ["-m", "dr....", ...]; "{files}" is replaced
    parallelism: int | None = None  # none: every index at once
    retries_per_index: int = 2  # backoffLimitPerIndex
    env: dict[str, str] = field(default_factory=dict)  # plain settings, never a secret
    files: dict[str, str] = field(default_factory=dict)  # name -> text, under {files}

    @property
    def at_once(self) -> int:
        return max(1, min(self.parallelism or self.count, self.count))

    def argv(self, files_dir: str) -> list[str]:
        return [a.replace(FILES, files_dir) for a in self.args]


@dataclass
class ShardOutcome:
    """How every index ended. `failed`: index -> why (the last attempt's)."""

    count: int
    succeeded: set[int] = field(default_factory=set)
    failed: dict[int, str] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return len(self.succeeded) == self.count and not self.failed

    def describe_failures(self) -> str:
        return "; ".join(f"shard {i} of {self.count}: {why}" for i, why in sorted(self.failed.items()))


class Executor(ABC):
    @abstractmethod
    def run(self, job: ShardJob) -> ShardOutcome:
        """Run every index of `job` to its end (success, or its retries spent)."""


class LocalExecutor(Executor):
    """Shards as child processes of this interpreter. on_start(index, attempt, pid) is told of
    every process started (progress, and tests that kill one)."""

    def __init__(self, python: str = sys.executable, poll: float = 0.05,
                 on_start: Callable[[int, int, int], None] | None = None) -> None:
        self.python, self.poll, self.on_start = python, poll, on_start

    def run(self, job: ShardJob) -> ShardOutcome:
        outcome = ShardOutcome(job.count)
        with tempfile.TemporaryDirectory(prefix=f"{job.name}-") as folder:
            _write_files(folder, job.files)
            queue = list(range(job.count))
            running: dict[int, tuple[subprocess.Popen, object]] = {}
            try:
                while queue or running:
                    while queue and len(running) < job.at_once:
                        index = queue.pop(0)
                        running[index] = self._start(job, folder, index, outcome)
                    time.sleep(self.poll)
                    for index, (proc, log) in list(running.items()):
                        if proc.poll() is None:
                            continue
                        del running[index]
                        if proc.returncode == 0:
                            outcome.succeeded.add(index)
                            outcome.failed.pop(index, None)
                        else:
                            outcome.failed[index] = _why(proc.returncode, log)
                            if proc.returncode != CANNOT_START and outcome.attempts[index] <= job.retries_per_index:
                                queue.append(index)  # like backoffLimitPerIndex: this index again
                        log.close()
            finally:  # interrupted: stop the processes started here, by their own handle
                for proc, log in running.values():
                    proc.kill()
                    proc.wait()
                    log.close()
        return outcome

    def _start(self, job: ShardJob, folder: str, index: int, outcome: ShardOutcome):
        outcome.attempts[index] = outcome.attempts.get(index, 0) + 1
        env = {**os.environ, **job.env, INDEX_ENV: str(index)}
        log = tempfile.TemporaryFile(prefix=f"{job.name}-{index}-")
        proc = subprocess.Popen([self.python, *job.argv(folder)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        if self.on_start is not None:
            self.on_start(index, outcome.attempts[index], proc.pid)
        return proc, log


def _write_files(folder: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
            out.write(text)


def _why(code: int, log) -> str:
    log.seek(0)
    lines = log.read()[-TAIL:].decode(errors="replace").strip().splitlines()
    if code < 0:
        head = f"killed by {signal.Signals(-code).name}"
    else:
        head = f"exit code {code}"
    return f"{head}: {lines[-1]}" if lines else head
