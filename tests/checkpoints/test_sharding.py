"""Sharded checkpoint copies with the local executor: N real shard processes of dr itself
(`python -m dr.exporters.checkpoints.sharding`, JOB_COMPLETION_INDEX set as an Indexed Job
sets it), from a bucket on one moto server to a DR bucket on ANOTHER.

The DR server is this module's own, so its request log (one line per HTTP request, every
shard and the coordinator) is the evidence of how often the marker and each file were written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import threading
import time

import pytest

from dr.exporters.checkpoints.copies.layout import MANIFEST, MARKER
from dr.exporters.checkpoints.sharding import LocalExecutor
from dr.exporters.checkpoints.sharding.tasks import ShardFile, split
from dr.contract import OutcomeStatus
from tests.checkpoints.test_exporter_helpers import Repo, bucket_files, files_of, make_exporter
from tests.fixtures_s3 import s3_client
from tests.servers import moto_server

CK = "run-a/step-100"
PREFIX = f"copies/ckpts/{CK}"
# ten data files of unequal sizes (KiB), so the split by size is not a split by count
SIZES = [2048, 1536, 1280, 1024, 900, 700, 512, 384, 256, 128]

# The shards here are synthetic bytes, not a training state: the readiness check rightly says
# so (checkpoint-not-resumable, -unversioned); these tests are about the copy's findings.
READINESS = {"checkpoint-not-resumable", "checkpoint-unversioned"}


def copy_findings(backup) -> list[dict]:
    return [f for f in backup.findings if f["code"] not in READINESS]


@pytest.fixture(scope="module")
def logged_moto():
    with moto_server() as server:
        yield server


@pytest.fixture
def sharded(tmp_path, aws_env, moto_endpoint, logged_moto, s3_bucket):
    """A checkpoint of ten data files and its COMPLETE marker on server A; a DR bucket on B."""
    src = s3_bucket()
    b = f"http://127.0.0.1:{logged_moto.port}"
    dr = s3_bucket(endpoint=b)
    client = s3_client(moto_endpoint)
    source = {f"data/shard-{i:02d}.bin": os.urandom(kib << 10) for i, kib in enumerate(SIZES)}
    for rel, data in source.items():
        client.put_object(Bucket=src, Key=f"ckpt/{CK}/{rel}", Body=data)
    client.put_object(Bucket=src, Key=f"ckpt/{CK}/COMPLETE", Body=b"")
    source["COMPLETE"] = b""
    options = {"roots": [{"url": f"s3://{src}/ckpt", "endpoint_url": moto_endpoint}],
               "dr_copy": {"url": f"s3://{dr}/copies", "endpoint_url": b}, "settle_seconds": 0,
               "parallel_files": 1, "shards": {"count": 4, "min_bytes": 0}}
    return {"src": src, "dr": dr, "b": b, "a": moto_endpoint, "source": source, "options": options,
            "repo": Repo(tmp_path / "repo"), "tmp": tmp_path, "log": logged_moto}


def _lines(env) -> list[str]:
    return [ln for ln in env["log"].log_path.read_text(errors="replace").splitlines() if f" /{env['dr']}/" in ln]


def _puts(lines: list[str], key: str) -> int:
    """Requests that make `key` visible: a PUT without partNumber, or CompleteMultipartUpload."""
    pattern = re.compile(rf'"(PUT|POST) /[^/ ]+/{re.escape(key)}(\?[^ ]*)? HTTP')
    found = [m for m in map(pattern.search, lines) if m]
    return sum(1 for m in found if (m.group(1) == "PUT" and "partNumber=" not in (m.group(2) or ""))
               or (m.group(1) == "POST" and "uploadId=" in (m.group(2) or "")))


def _copy_is_the_source(env) -> None:
    copy = bucket_files(env["b"], env["dr"], PREFIX)
    assert set(copy) == set(env["source"]) | {MANIFEST, MARKER}  # no journal, no shard objects left
    assert {k: v for k, v in copy.items() if k in env["source"]} == env["source"]
    manifest = json.loads(copy[MANIFEST])
    assert {f["path"]: f["sha256"] for f in manifest["files"]} == \
        {k: hashlib.sha256(v).hexdigest() for k, v in env["source"].items()}


def test_split_is_balanced_by_size_and_deterministic():
    files = [ShardFile(f"f{i}", f"f{i}", kib << 10, "") for i, kib in enumerate(SIZES)]
    shares = split(files, 4)
    assert shares == split(list(reversed(files)), 4)  # the order listed does not matter
    assert sorted(f.rel for s in shares for f in s) == sorted(f.rel for f in files)
    loads = [sum(f.size for f in s) for s in shares]
    assert max(loads) <= sum(loads) / 4 * 4 / 3  # the LPT bound
    assert min(loads) > 0


def test_four_local_shards_copy_verify_and_restore(sharded, tmp_path):
    env = sharded
    started: list[tuple[int, int]] = []
    x = make_exporter(env["options"])
    x.executor = LocalExecutor(on_start=lambda i, attempt, pid: started.append((i, attempt)))
    backup = env["repo"].backup(x)
    assert copy_findings(backup) == [], backup.findings
    assert sorted(started) == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert any("10 files in 4 shards" in ln for ln in backup.log), backup.log
    _copy_is_the_source(env)
    lines = _lines(env)
    assert _puts(lines, f"{PREFIX}/{MARKER}") == 1
    for rel in env["source"]:
        assert _puts(lines, f"{PREFIX}/{rel}") == 1, rel
    (check,) = make_exporter(env["options"]).verify(read_data=True)
    assert check.ok and check.files == len(env["source"]), check.problems

    outcomes = env["repo"].restore(make_exporter(env["options"]), backup.artifacts, to=str(tmp_path / "back"))
    assert [o.status for o in outcomes] == [OutcomeStatus.RESTORED], outcomes
    assert files_of(tmp_path / "back" / CK) == env["source"]


def test_shard_2_of_4_sigkilled_completes_after_the_retry_marker_written_once(sharded):
    """The kill lands after shard 2 journaled a file and before it finished its share; the
    executor runs index 2 again (backoffLimitPerIndex), which skips what its journal shows."""
    env = sharded
    client = s3_client(env["b"])
    killed: dict[str, object] = {}

    def kill_after_first_file(pid: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            task = client.list_objects_v2(Bucket=env["dr"], Prefix=f"{PREFIX}/dr-shards/task.json")
            if task.get("KeyCount"):
                break
            time.sleep(0.01)
        raw = client.get_object(Bucket=env["dr"], Key=f"{PREFIX}/dr-shards/task.json")["Body"].read()
        mine = {f["rel"] for f in json.loads(raw)["shards"][2]}
        while time.monotonic() < deadline:
            keys = [o["Key"] for o in client.list_objects_v2(Bucket=env["dr"], Prefix=f"{PREFIX}/dr-journal/")
                    .get("Contents", [])]
            done = {k.split("/dr-journal/")[1][:-5] for k in keys} & mine
            if done:
                os.kill(pid, signal.SIGKILL)  # our own child, by its pid
                killed.update(done=done, share=mine)
                return
            time.sleep(0.005)

    watchers: list[threading.Thread] = []
    attempts: list[tuple[int, int]] = []

    def on_start(index: int, attempt: int, pid: int) -> None:
        attempts.append((index, attempt))
        if index == 2 and attempt == 1:
            watchers.append(threading.Thread(target=kill_after_first_file, args=(pid,), daemon=True))
            watchers[-1].start()

    x = make_exporter(env["options"])
    x.executor = LocalExecutor(on_start=on_start)
    backup = env["repo"].backup(x)
    for w in watchers:
        w.join(5)
    assert killed, "shard 2 was never caught half-way"
    assert len(killed["done"]) < len(killed["share"]), killed  # it still had work when it died
    assert (2, 2) in attempts and (0, 2) not in attempts
    assert copy_findings(backup) == [], backup.findings
    _copy_is_the_source(env)
    lines = _lines(env)
    assert _puts(lines, f"{PREFIX}/{MARKER}") == 1
    assert _puts(lines, f"{PREFIX}/{MANIFEST}") == 1
    for rel in killed["done"]:  # stored before the kill: not uploaded again by the retry
        assert _puts(lines, f"{PREFIX}/{rel}") == 1, rel
    assert make_exporter(env["options"]).verify(read_data=True)[0].ok


def test_a_result_that_does_not_match_the_journal_leaves_no_manifest_and_no_marker(sharded):
    env = sharded
    env["options"]["shards"]["count"] = 2  # two processes per run are enough here
    client = s3_client(env["b"])
    seen: dict = {}

    class Tamper(LocalExecutor):
        def run(self, job):
            outcome = super().run(job)
            key = f"{PREFIX}/dr-shards/result-1.json"
            result = json.loads(client.get_object(Bucket=env["dr"], Key=key)["Body"].read())
            result["files"][0]["sha256"] = "0" * 64
            seen["file"] = result["files"][0]["path"]
            client.put_object(Bucket=env["dr"], Key=key, Body=json.dumps(result).encode())
            return outcome

    x = make_exporter(env["options"])
    x.executor = Tamper()
    backup = env["repo"].backup(x)
    (finding,) = copy_findings(backup)
    assert finding["code"] == "checkpoint-copy-failed"
    assert "do not verify" in finding["message"] and seen["file"] in finding["message"]
    keys = {o["Key"][len(PREFIX) + 1:] for o in client.list_objects_v2(Bucket=env["dr"], Prefix=PREFIX)
            .get("Contents", [])}
    assert MARKER not in keys and MANIFEST not in keys

    # the next backup runs the shards again: every file is journaled, so nothing is uploaded
    mark = len(_lines(env))
    x = make_exporter(env["options"])
    x.executor = LocalExecutor()
    assert copy_findings(env["repo"].backup(x)) == []
    _copy_is_the_source(env)
    again = _lines(env)[mark:]
    assert all(_puts(again, f"{PREFIX}/{rel}") == 0 for rel in env["source"] if rel != "COMPLETE")
