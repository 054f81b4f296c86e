"""The resumed training process: started in its own process group, watched through its
progress file, and stopped once it trained the steps asked for.

A failure drill (`kill`: rank R at step K) SIGKILLs the worker of rank R once step K is logged:
the worker is found among the group's processes by its environment (RANK=R, set by torchrun in
every worker; /proc/PID/environ, readable for dr's own processes), and counting starts again at
the load that follows (the restarted workers').

Stopping: SIGTERM to the whole group (torchrun and its ranks), then SIGKILL after a grace
period. The process is stopped when it has logged `steps` steps after its load, when the time
limit is reached, or when dr itself is interrupted (the group is killed before dr exits, so no
trainer outlives the drill). Its output goes to a file in the scratch folder (`resume.log`),
never to dr's output: a trainer may print anything.
"""

from __future__ import annotations

import os
import re
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
    killed_at: float | None = None  # wall time of the SIGKILL (a failure drill)
    killed: str = ""  # what was killed, or why nothing was

    def output_tail(self, limit: int = 1200) -> str:
        try:
            with open(self.output, "rb") as handle:
                handle.seek(max(0, os.path.getsize(self.output) - limit))
                return handle.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""


@dataclass
class Kill:
    rank: int
    at_step: int
    at: float | None = None
    what: str = ""


def run_resumed(argv: list[str], *, cwd: str, env: dict[str, str], progress: str, output: str,
                steps: int, time_limit: float, kill: Kill | None = None) -> Resumed:
    """Run `argv` until it trained `steps` steps after its (last) load, exited, or ran out of
    time; with `kill`, SIGKILL that rank's worker at that step first."""
    tail = Tail(progress)
    with open(output, "ab") as sink:
        started = time.time()
        try:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise ResumeCommandError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        try:
            stopped, counted = _watch(process, tail, steps, started + time_limit, kill)
        except BaseException:  # interrupted: no trainer outlives the drill
            _stop(process)
            _kill_group(process)
            raise
        code = _stop(process) if process.returncode is None else process.returncode
        _kill_group(process)  # ranks the launcher left behind
    tail.poll()
    return Resumed(started, time.time(), stopped, code, tail.log, output, counted,
                   killed_at=kill.at if kill else None, killed=kill.what if kill else "")


class ResumeCommandError(Exception):
    """The resume command could not be started; the message names it."""


def _watch(process: subprocess.Popen, tail: Tail, steps: int, deadline: float,
           kill: Kill | None) -> tuple[str, int]:
    loaded_at: int | None = None
    counted = 0
    while True:
        for event in tail.poll():
            if event["event"] == "loaded" and (loaded_at is None or (kill and kill.at)):
                loaded_at, counted = event["step"], 0  # a restart's load: count from there
            elif event["event"] == "step" and (loaded_at is None or event["step"] > loaded_at):
                counted += 1
                if kill and kill.at is None and event["step"] >= kill.at_step:
                    _kill_rank(process, kill)
        if counted >= steps and (kill is None or kill.at is not None):
            return "steps reached", counted
        if process.poll() is not None:
            return "exited", counted
        if time.time() >= deadline:
            return "time limit", counted
        time.sleep(POLL_SECONDS)


def _kill_rank(process: subprocess.Popen, kill: Kill) -> None:
    found = rank_pids(process.pid, kill.rank)
    kill.at = time.time()
    if not found:
        kill.what = f"no worker of rank {kill.rank} among the command's processes (RANK is set by torchrun)"
        return
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    kill.what = f"rank {kill.rank} (pid {', '.join(map(str, found))}) killed with SIGKILL at step {kill.at_step}"


# torchrun's agent logs a worker's failure as glog does: "E1203 06:55:17.854000 <pid> <file>:<line>]
# failed (exitcode: -9) local_rank: 1 ...", in local time, without the year
_FAILED_LINE = re.compile(rb"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(\.\d+)? .*\] failed \(exitcode", re.M)


def failure_noticed(output: str, since: float) -> float | None:
    """When the launcher logged a worker's failure, at or after `since` (epoch seconds); None
    when its output says nothing of the kind (another launcher, or its log level)."""
    try:
        with open(output, "rb") as handle:
            text = handle.read(16 << 20)
    except OSError:
        return None
    year = time.localtime(since).tm_year
    for match in _FAILED_LINE.finditer(text):
        month, day, hour, minute, second = (int(g) for g in match.groups()[:5])
        try:
            at = time.mktime((year, month, day, hour, minute, second, 0, 0, -1)) + float(match.group(6) or 0)
        except (OverflowError, ValueError):
            continue
        if at >= since - 1.0:  # the log's clock has microseconds; allow the kill's own second
            return max(at, since)
    return None


def descendants(root: int) -> set[int]:
    """Every process under `root` (a launcher may start workers in sessions of their own, so
    the tree is walked by parent, not by process group)."""
    parents = _parents()
    tree, grew = {root}, True
    while grew:
        new = {pid for pid, parent in parents.items() if parent in tree and pid not in tree}
        tree |= new
        grew = bool(new)
    return tree - {root}


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    parents[int(name)] = int(handle.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return parents


def rank_pids(root: int, rank: int) -> list[int]:
    """The command's descendants whose environment says RANK=rank, without their own children."""
    found = set()
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if f"RANK={rank}".encode() in handle.read().split(b"\0"):
                    found.add(pid)
        except OSError:
            continue
    parents = _parents()
    return sorted(pid for pid in found if parents.get(pid) not in found)


def _stop(process: subprocess.Popen) -> int | None:
    """SIGTERM the group, SIGKILL what is left after the grace period; the exit code."""
    family = descendants(process.pid)  # before the launcher dies and its workers are orphaned
    code = None
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            code = process.wait(GRACE_SECONDS)
            break
        except subprocess.TimeoutExpired:
            continue
    _kill_all(family)
    return code if code is not None else process.poll()


def _kill_group(process: subprocess.Popen) -> None:
    """Ranks the launcher left behind, in its group or in sessions of their own."""
    family = descendants(process.pid)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _kill_all(family)


def _kill_all(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
