"""The resumed training process: started in its own process group, watched through its
progress file, and stopped once it trained the steps asked for.

Stopping: SIGTERM to the whole group (torchrun and its ranks), then SIGKILL after a grace
period. The process is stopped when it has logged `steps` steps after its load, when the time
limit is reached, or when dr itself is interrupted (the group is killed before dr exits, so no
trainer outlives the drill). Its output goes to a file in the scratch folder (`resume.log`),
never to dr's output: a trainer may print anything.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field

from dr.drills.training.events import ProgressLog, Tail

GRACE_SECONDS = 10.0
POLL_SECONDS = 0.05


@dataclass
class Resumed:
    started: float  # wall clock, seconds since the epoch (the progress events' clock)
    ended: float
    stopped: str  # "steps reached", "exited", "time limit"
    exit_code: int | None
    log: ProgressLog
    output: str  # where the process's stdout and stderr went
    steps_after_load: int = 0
    notes: list[str] = field(default_factory=list)

    def output_tail(self, limit: int = 1200) -> str:
        try:
            with open(self.output, "rb") as handle:
                handle.seek(max(0, os.path.getsize(self.output) - limit))
                return handle.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""


def run_resumed(argv: list[str], *, cwd: str, env: dict[str, str], progress: str, output: str,
                steps: int, time_limit: float) -> Resumed:
    """Run `argv` until it trained `steps` steps after its load, exited, or ran out of time."""
    tail = Tail(progress)
    with open(output, "ab") as sink:
        started = time.time()
        try:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise ResumeCommandError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        try:
            stopped, counted = _watch(process, tail, steps, started + time_limit)
        except BaseException:  # interrupted: no trainer outlives the drill
            _stop(process)
            _kill_group(process)
            raise
        code = _stop(process) if process.returncode is None else process.returncode
        _kill_group(process)  # ranks the launcher left behind
    tail.poll()
    return Resumed(started, time.time(), stopped, code, tail.log, output, counted)


class ResumeCommandError(Exception):
    """The resume command could not be started; the message names it."""


def _watch(process: subprocess.Popen, tail: Tail, steps: int, deadline: float) -> tuple[str, int]:
    loaded_at: int | None = None
    counted = 0
    while True:
        for event in tail.poll():
            if event["event"] == "loaded" and loaded_at is None:
                loaded_at = event["step"]
            elif event["event"] == "step" and (loaded_at is None or event["step"] > loaded_at):
                counted += 1
        if counted >= steps:
            return "steps reached", counted
        if process.poll() is not None:
            return "exited", counted
        if time.time() >= deadline:
            return "time limit", counted
        time.sleep(POLL_SECONDS)


def _stop(process: subprocess.Popen) -> int | None:
    """SIGTERM the group, SIGKILL what is left after the grace period; the exit code."""
    for sig, wait in ((signal.SIGTERM, GRACE_SECONDS), (signal.SIGKILL, GRACE_SECONDS)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            return process.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    return process.poll()


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
