"""scripts/fetch-upstream-fixtures against a local HTTP server (issue 16, "Upstream fixtures for a newcomer").

This machine reaches no GitHub, so the upstream layout (<owner>/<repo>/<commit>/<path>) is served
by python's http.server on 127.0.0.1 from copies of the shared fixtures. What is checked: every
listed file lands where the tests look, bytes that do not match the committed SHA-256 are never
written, a rerun fetches only what is missing, and a missing fixture's message names the script.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.upstream_fixtures import FIXTURES, PROJECT, missing

SCRIPT = PROJECT / "scripts" / "fetch-upstream-fixtures"
LIST = PROJECT / "scripts" / "upstream-fixtures.sha256"


def _entries() -> list[list[str]]:
    return [line.split() for line in LIST.read_text().splitlines() if line.strip() and not line.startswith("#")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def upstream_server(tmp_path):
    """(served root, base URL): the listed files, laid out as raw.githubusercontent.com serves them."""
    served = tmp_path / "served"
    for sha, local, repo, commit, path in _entries():
        source = FIXTURES / local
        assert source.is_file(), missing(source)
        target = served / repo / commit / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(served)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while True:
        try:
            urllib.request.urlopen(base + "/", timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline and server.poll() is None, "http.server did not start"
            time.sleep(0.05)
    try:
        yield served, base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)


def _run(base: str, out: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DR_UPSTREAM_FIXTURES": str(out), "DR_UPSTREAM_BASE_URL": base}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120)


def test_the_list_matches_the_shared_fixtures_and_keeps_them_out_of_the_repository():
    entries = _entries()
    assert len(entries) == 37 and len({e[1] for e in entries}) == 37
    for sha, local, *_ in entries:
        assert (FIXTURES / local).is_file(), missing(FIXTURES / local)
        assert hashlib.sha256((FIXTURES / local).read_bytes()).hexdigest() == sha, local
    tracked = subprocess.run(["git", "ls-files"], cwd=PROJECT, capture_output=True, text=True,
                             check=True).stdout.splitlines()
    assert not [t for t in tracked for _, local, *_ in entries if t.endswith(Path(local).name)]


def test_fetches_checks_and_places_every_file(upstream_server, tmp_path):
    served, base = upstream_server
    sha, local, repo, commit, path = _entries()[0]
    tampered = served / repo / commit / path
    original = tampered.read_bytes()
    tampered.write_bytes(original[:-2] + b"X\n")  # one changed byte upstream (or on the way)
    out = tmp_path / "fixtures"

    first = _run(base, out)
    assert first.returncode == 1
    assert f"refused: {base}/{repo}/{commit}/{path}: SHA-256" in first.stderr and f"expected {sha}" in first.stderr
    assert not (out / local).exists() and not list(out.rglob("*.part"))
    for sha_, local_, *_ in _entries()[1:]:
        assert hashlib.sha256((out / local_).read_bytes()).hexdigest() == sha_
    assert "36 of 37 upstream fixtures in place (36 fetched); 1 failed" in first.stdout

    check = _run(base, out, "--check")
    assert check.returncode == 1 and f"missing: {out / local}" in check.stderr

    tampered.write_bytes(original)
    second = _run(base, out)
    assert second.returncode == 0, second.stderr
    assert "37 of 37 upstream fixtures in place (1 fetched)" in second.stdout
    assert (out / local).read_bytes() == original
    assert _run(base, out, "--check").returncode == 0


def test_a_missing_fixture_names_the_script(tmp_path):
    code = ("from tests.kubernetes.upstream import upstream\n"
            "upstream('kueue/crds/kueue.x-k8s.io_clusterqueues.yaml')\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True,
                         env={**os.environ, "DR_UPSTREAM_FIXTURES": str(tmp_path / "none")}, timeout=60)
    assert run.returncode != 0
    assert "upstream fixture missing" in run.stderr and "run scripts/fetch-upstream-fixtures" in run.stderr
    assert str(tmp_path / "none") in run.stderr
