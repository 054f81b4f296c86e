"""Repository locks (docs/format.md, "Locks").

A lock is an object under locks/ that its holder writes and deletes; it is never rewritten.
A live holder refreshes by writing a new lock object and deleting its old one. Exclusive locks
(prune: it deletes) conflict with every other lock; shared locks (backup, verify, restore)
only with exclusive ones. A lock is stale when its holder is gone: same host and the process
no longer exists, or it was not refreshed for STALE_AFTER. Stale locks are ignored (with a
warning) and removed by `dr unlock`.

The same locks also guard places outside a repository that a backup writes into (a
checkpoint DR copy target, section 19): a LockSpace names the store-like object, the key
prefix and what to tell a waiting operator; Lock(repo, ...) is the repository's space.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from dr.repository import layout
from dr.repository.repositories import Repository, RepositoryError
from dr.repository.stores.base import ObjectMissing

STALE_AFTER = 30 * 60
REFRESH_EVERY = 5 * 60
MAX_COLLISIONS = 5  # simultaneous acquisitions that saw each other: retries before giving up


class RepositoryLocked(RepositoryError):
    pass


# Locks this process wrote and has not released. An interrupt (Ctrl-C, SIGTERM) can land after
# acquire() returned and before the caller's `with` owns the lock (in `__enter__` itself), where
# no `__exit__` runs: the CLI releases what is left here on its way out (release_unreleased).
_UNRELEASED: set["Lock"] = set()


def release_unreleased() -> None:
    for lock in list(_UNRELEASED):
        try:
            lock.release()
        except Exception:  # noqa: BLE001  (exiting after an interrupt: the rest still get their turn)
            pass


@dataclass(frozen=True)
class LockSpace:
    """Where locks live: `store` answers list(prefix) -> (key, size), get (ObjectMissing if
    absent), put and delete, like a repository's store (dr.repository.stores.base)."""

    store: Any
    prefix: str
    description: str
    # how to get past a holder that is gone (the repository's: `dr unlock`)
    unlock_hint: str = "if that process is gone run 'dr unlock --plan FILE'"

    @classmethod
    def of(cls, where: "Repository | LockSpace") -> "LockSpace":
        """The space itself, or a repository's: its store, under locks/."""
        return where if isinstance(where, LockSpace) else cls(where.store, layout.LOCKS, where.description)


@dataclass
class LockInfo:
    key: str
    hostname: str
    pid: int
    process_start: str
    time: float
    exclusive: bool
    command: str

    def describe(self) -> str:
        age = int(time.time() - self.time)
        kind = "exclusive" if self.exclusive else "shared"
        return f"{kind} lock by '{self.command}' (pid {self.pid} on {self.hostname}, {age}s old)"

    def is_stale(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        if now - self.time > STALE_AFTER:
            return True
        if self.hostname == socket.gethostname():
            return _process_start(self.pid) != self.process_start
        return False


def _process_start(pid: int) -> str:
    """The start time of a process, so a reused pid is not mistaken for the holder."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def read_locks(repo: Repository | LockSpace, skip: str = "") -> list[LockInfo]:
    space = LockSpace.of(repo)
    locks = []
    for key, _ in space.store.list(space.prefix):
        if key == skip:
            continue  # our own lock: no need to fetch it
        try:
            data = json.loads(space.store.get(key))
            locks.append(LockInfo(key, data["hostname"], int(data["pid"]), data.get("process_start", ""),
                                  float(data["time"]), bool(data["exclusive"]), data.get("command", "")))
        except (ObjectMissing, ValueError, KeyError):
            continue  # removed while listing, or not ours to judge: unlock --remove-all clears it
    return locks


class Lock:
    def __init__(self, repo: Repository | LockSpace, exclusive: bool, command: str):
        self.space = LockSpace.of(repo)
        self.exclusive = exclusive
        self.command = command
        self.key = ""
        self.warnings: list[str] = []
        self._stale_seen: set[str] = set()
        self._stop = threading.Event()
        self._refresher: threading.Thread | None = None

    def acquire(self, wait_seconds: float = 0.0) -> "Lock":
        try:
            return self._acquire(wait_seconds)
        except BaseException:
            # Ctrl-C or SIGTERM (dr.cli.stopping) after the lock object was written but before
            # the caller's `with` owns it: take it back (and stop its refresher, if started), or
            # it stays until it is stale (30 min)
            try:
                self.release()
            except Exception:  # noqa: BLE001  (already failing: the original error is the one to show)
                pass
            raise

    def _acquire(self, wait_seconds: float) -> "Lock":
        deadline = time.monotonic() + wait_seconds
        collisions = 0
        while True:
            conflicts = self._conflicts()
            if not conflicts:
                self.key = self._new_key()  # known before it is written: an interrupt can delete it
                _UNRELEASED.add(self)
                self._write(self.key)
                conflicts = self._conflicts()
                if not conflicts:
                    self._start_refresher()
                    return self
                self.space.store.delete(self.key)  # lost a race: both back off, one retries first
                self.key = ""
                if collisions < MAX_COLLISIONS:
                    # Nobody held the lock when we looked: a collision, not a holder. Retry after a
                    # random pause even past the deadline, or two simultaneous starts both give up.
                    collisions += 1
                    time.sleep(random.uniform(0.05, 0.5) * collisions)
                    continue
            if time.monotonic() >= deadline:
                raise RepositoryLocked(
                    f"{self.space.description} is locked: {conflicts[0].describe()}. Wait for it to "
                    f"finish, retry with --lock-wait SECONDS, or {self.space.unlock_hint}")
            time.sleep(min(1.0 + random.random(), max(0.0, deadline - time.monotonic())))

    def _conflicts(self) -> list[LockInfo]:
        out = []
        for info in read_locks(self.space, skip=self.key):
            if info.is_stale():
                if info.key not in self._stale_seen:  # conflicts are read twice per attempt
                    self._stale_seen.add(info.key)
                    self.warnings.append(f"ignoring stale {info.describe()}")
                continue
            if self.exclusive or info.exclusive:
                out.append(info)
        return out

    def _new_key(self) -> str:
        return f"{self.space.prefix}{int(time.time() * 1000):015d}-{secrets.token_hex(8)}"

    def _write(self, key: str) -> None:
        body = {"hostname": socket.gethostname(), "pid": os.getpid(),
                "process_start": _process_start(os.getpid()), "time": time.time(),
                "exclusive": self.exclusive, "command": self.command,
                "written": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        self.space.store.put(key, json.dumps(body, sort_keys=True).encode())

    def _start_refresher(self) -> None:
        self._refresher = threading.Thread(target=self._refresh_loop, name="lock-refresh", daemon=True)
        self._refresher.start()

    def _refresh_loop(self) -> None:
        while not self._stop.wait(REFRESH_EVERY):
            try:
                new = self._new_key()
                self._write(new)
                old, self.key = self.key, new
                self.space.store.delete(old)
            except Exception as exc:  # keep trying: a dead refresher lets the lock go stale
                self.warnings.append(f"lock refresh failed, will retry: {exc}")

    def release(self) -> None:
        _UNRELEASED.discard(self)
        self._stop.set()
        # is_alive(): an interrupt inside Thread.start() leaves a thread that join() refuses; one
        # that starts after this sees _stop set and ends at once
        if self._refresher is not None and self._refresher.is_alive():
            self._refresher.join(timeout=5)
        if self.key:
            self.space.store.delete(self.key)
            self.key = ""

    def __enter__(self) -> "Lock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def remove_locks(repo: Repository, all_locks: bool = False) -> list[str]:
    """Delete stale locks (or every lock); return their descriptions."""
    removed = []
    for info in read_locks(repo):
        if all_locks or info.is_stale():
            repo.store.delete(info.key)
            removed.append(info.describe())
    return removed
