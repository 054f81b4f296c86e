"""Locks on a real local store, with real processes for the stale-lock cases."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from dr.repository import layout
from dr.repository.locks import Lock, RepositoryLocked, read_locks, remove_locks
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore


@pytest.fixture
def repo(tmp_path):
    repository = Repository(LocalStore(str(tmp_path / "repo")))
    repository.init()
    return repository


def test_an_exclusive_lock_refuses_a_second_with_a_clear_message(repo):
    with Lock(repo, exclusive=True, command="dr backup --plan a").acquire():
        with pytest.raises(RepositoryLocked) as info:
            Lock(repo, exclusive=True, command="dr backup --plan b").acquire()
    message = str(info.value)
    assert "dr backup --plan a" in message and f"pid {os.getpid()}" in message
    assert "dr unlock" in message
    assert read_locks(repo) == []


def test_shared_locks_coexist_but_block_exclusive(repo):
    with Lock(repo, exclusive=False, command="dr verify").acquire():
        with Lock(repo, exclusive=False, command="dr restore").acquire():
            assert len(read_locks(repo)) == 2
            with pytest.raises(RepositoryLocked):
                Lock(repo, exclusive=True, command="dr prune").acquire()


def test_lock_wait_waits_for_the_holder(repo):
    holder = Lock(repo, exclusive=True, command="first").acquire()
    threading.Timer(1.0, holder.release).start()
    started = time.monotonic()
    with Lock(repo, exclusive=True, command="second").acquire(wait_seconds=20):
        waited = time.monotonic() - started
    assert 0.5 < waited < 15


def _lock_in_child(repo_root: str) -> subprocess.Popen:
    code = (
        "import sys, time\n"
        "from dr.repository.repositories import Repository\n"
        "from dr.repository.stores.local import LocalStore\n"
        "from dr.repository.locks import Lock\n"
        f"Lock(Repository(LocalStore({repo_root!r})), True, 'dr backup (killed)').acquire()\n"
        "print('locked', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "locked"
    return child


def test_a_lock_held_by_a_live_process_blocks_and_a_killed_ones_is_stale(repo, tmp_path):
    child = _lock_in_child(str(tmp_path / "repo"))
    try:
        with pytest.raises(RepositoryLocked):
            Lock(repo, exclusive=True, command="me").acquire()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    [info] = read_locks(repo)
    assert info.is_stale()
    lock = Lock(repo, exclusive=True, command="me").acquire()
    # conflicts are read before and after writing our lock: still one warning (issue 16)
    assert len([w for w in lock.warnings if "stale" in w]) == 1
    lock.release()
    assert remove_locks(repo) and read_locks(repo) == []


def test_a_lock_from_another_host_is_stale_only_when_old(repo):
    body = {"hostname": "other-host", "pid": 1, "process_start": "1", "exclusive": True, "command": "x"}
    repo.store.put(layout.lock_key("recent"), json.dumps({**body, "time": time.time()}).encode())
    with pytest.raises(RepositoryLocked):
        Lock(repo, exclusive=False, command="me").acquire()
    repo.store.delete(layout.lock_key("recent"))
    repo.store.put(layout.lock_key("old"), json.dumps({**body, "time": time.time() - 3600}).encode())
    with Lock(repo, exclusive=True, command="me").acquire() as lock:
        assert lock.warnings


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_while_acquiring_takes_the_written_lock_back(repo, monkeypatch, interrupt):
    """Ctrl-C or SIGTERM (dr.cli.stopping raises a KeyboardInterrupt) right after the lock object
    is written, before acquire() returns it to a `with`: the object must not stay behind."""
    lock = Lock(repo, exclusive=True, command="dr backup --plan a")
    checks = iter([[], interrupt])  # the check before writing passes; the one after it is interrupted

    def conflicts():
        answer = next(checks)
        if isinstance(answer, type):
            assert [i.command for i in read_locks(repo)] == ["dr backup --plan a"]  # written by now
            raise answer()
        return answer

    monkeypatch.setattr(lock, "_conflicts", conflicts)
    with pytest.raises(interrupt):
        lock.acquire()
    assert read_locks(repo) == [] and lock.key == ""
    with Lock(repo, exclusive=True, command="dr backup --plan b").acquire():  # not locked out
        pass


def test_an_interrupt_while_the_refresher_starts_still_takes_the_lock_back(repo, monkeypatch):
    """Seen with SIGTERM under load: the interrupt landed in Thread.start() (waiting for the new
    thread), and release() then asked join() of a thread not yet started, which refuses."""
    lock = Lock(repo, exclusive=True, command="dr backup --plan a")

    def interrupted_start():
        lock._refresher = threading.Thread(target=lambda: None)  # made, not started
        raise KeyboardInterrupt()

    monkeypatch.setattr(lock, "_start_refresher", interrupted_start)
    with pytest.raises(KeyboardInterrupt):
        lock.acquire()
    assert read_locks(repo) == []
