"""A copier killed with SIGKILL half-way, then run again: the copy completes, is identical to
the source, and no file that was complete before the kill is uploaded again; the file that was
being uploaded continues from the parts already stored.

The DR target is a moto server of this module's own, so its request log (one line per HTTP
request, both runs) is the evidence of what was uploaded and when.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from dr.exporters.checkpoints.copies.layout import MANIFEST, MARKER
from tests.checkpoints.test_exporter_helpers import (Repo, bucket_files, env_for_child, make_exporter, upload_tree)
from tests.checkpoints.writers import Trainer, save_dcp
from tests.fixtures_s3 import s3_client
from tests.servers import moto_server

CHILD = """
import json, sys, time
from dr.kits.{module} import {writer} as _cls
from tests.checkpoints.test_exporter_helpers import NullSink, make_exporter

write = _cls.write
def slow(self, number, *args, **kwargs):  # a slow link or disk, so the parent can kill us mid-file
    time.sleep(0.2 if number == 1 else 2.0)
    return write(self, number, *args, **kwargs)
_cls.write = slow
make_exporter(json.load(open(sys.argv[1]))).export(NullSink())
"""


@pytest.fixture(scope="module")
def logged_moto():
    with moto_server() as server:
        yield server


def _request_lines(server, bucket: str) -> list[str]:
    return [line for line in server.log_path.read_text(errors="replace").splitlines() if f" /{bucket}" in line]


def _requests(lines: list[str], key: str) -> list[tuple[str, str]]:
    """(method, query) of every request for exactly `key`."""
    pattern = re.compile(rf'"(GET|PUT|POST|DELETE|HEAD) /[^/ ]+/{re.escape(key)}(?:\?([^ ]*))? HTTP')
    return [(m.group(1), m.group(2) or "") for m in map(pattern.search, lines) if m]


def _uploads_of(lines: list[str], key: str) -> list[tuple[str, str]]:
    """PutObject, UploadPart and CompleteMultipartUpload requests for `key`."""
    return [(m, q) for m, q in _requests(lines, key)
            if (m == "PUT" and (not q or "partNumber=" in q)) or (m == "POST" and q.startswith("uploadId="))]


def _checkpoint(tmp: Path) -> Path:
    """A real DCP save, one file per item: two large tensors (multipart) and ~20 small files."""
    trainer = Trainer()
    trainer.step(2)
    state = trainer.state() | {"big": {"a": torch.randn(5 << 20), "b": torch.randn(4 << 20)}}
    save_dcp(tmp / "runs" / "r1" / "step-7", state, single_file_per_rank=False)
    return tmp / "runs"


def _wait_until_half_done(client, bucket: str, deadline: float) -> set[str]:
    """Poll the target until one file is journaled and ANOTHER has stored parts."""
    while time.monotonic() < deadline:
        keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])]
        journaled = {k.split("/dr-journal/")[1][:-5] for k in keys if "/dr-journal/" in k}
        uploads = client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
        partial = [u for u in uploads if u["Key"].rsplit("/", 1)[-1] not in journaled
                   and client.list_parts(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"]).get("Parts")]
        if journaled and partial:
            return journaled
        time.sleep(0.05)
    raise AssertionError("the copier never got half-way")


def test_sigkill_mid_copy_then_rerun(tmp_path, aws_env, moto_endpoint, logged_moto, s3_bucket):
    runs = _checkpoint(tmp_path)
    src = s3_bucket()
    upload_tree(moto_endpoint, src, "ckpt", runs)
    b_endpoint = f"http://127.0.0.1:{logged_moto.port}"
    dr = f"dr-resume-{os.getpid()}-{int(time.time())}"
    client = s3_client(b_endpoint)
    client.create_bucket(Bucket=dr)
    options = {"roots": [{"url": f"s3://{src}/ckpt", "endpoint_url": moto_endpoint}],
               "dr_copy": {"url": f"s3://{dr}/copies", "endpoint_url": b_endpoint},
               "settle_seconds": 0, "part_size_mib": 5, "max_buffer_mib": 16, "parallel_files": 1}
    (tmp_path / "options.json").write_text(json.dumps(options))
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(module="places.s3writing", writer="S3Writer"),
                              str(tmp_path / "options.json")], env=env_for_child(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        done_before = _wait_until_half_done(client, dr, time.monotonic() + 120)
    finally:
        os.kill(child.pid, signal.SIGKILL)  # our own child, by its pid
        output = child.communicate()[0].decode(errors="replace")
    assert child.returncode == -signal.SIGKILL, output
    prefix = "copies/ckpts/r1/step-7"
    assert client.list_objects_v2(Bucket=dr, Prefix=f"{prefix}/{MARKER}").get("KeyCount") == 0
    mark = len(_request_lines(logged_moto, dr))

    backup = Repo(tmp_path / "repo").backup(make_exporter(options))
    assert backup.findings == [] and list(backup.by_identity()) == ["near/r1/step-7"]
    (line,) = [ln for ln in backup.log if "already done" in ln]
    skipped = int(re.search(r"(\d+) already done", line).group(1))
    reused = int(re.search(r"(\d+) reused", line).group(1))
    assert skipped == len(done_before) and reused >= 5 << 20, line

    source = bucket_files(moto_endpoint, src, "ckpt/r1/step-7")
    copy = bucket_files(b_endpoint, dr, prefix)
    assert {k: v for k, v in copy.items() if k not in (MANIFEST, MARKER)} == source
    assert make_exporter(options).verify(read_data=True)[0].ok
    lines = _request_lines(logged_moto, dr)
    for rel in done_before:  # finished before the kill: not one upload request since
        assert _uploads_of(lines[mark:], f"{prefix}/{rel}") == [], rel
    for rel in source:  # every file was made visible exactly once, over both runs
        published = [r for r in _uploads_of(lines, f"{prefix}/{rel}") if "partNumber=" not in r[1]]
        assert len(published) == 1, (rel, published)
    assert client.list_multipart_uploads(Bucket=dr).get("Uploads", []) == []




def _wait_until_part_written(copy_dir: Path, source_dir: Path, deadline: float) -> set[str]:
    """Poll the copy until one file is journaled and ANOTHER one's partial holds its first part."""
    while time.monotonic() < deadline:
        journal = copy_dir / "dr-journal"
        journaled = {p.name[:-5] for p in journal.glob("*.json")} if journal.is_dir() else set()
        for partial in copy_dir.glob(".*.dr-partial-*"):
            name = partial.name[1:partial.name.index(".dr-partial-")]
            head = (source_dir / name).read_bytes()[:1 << 20]
            if journaled and name not in journaled and partial.read_bytes()[:len(head)] == head:
                return journaled
        time.sleep(0.05)
    raise AssertionError("the copier never got half-way")


def test_sigkill_mid_copy_to_a_directory_then_rerun_resumes_the_file(tmp_path):
    """The same on a local (or shared) filesystem target: the killed file's partial is kept,
    compared with the source part by part on the rerun, and only the differing parts written."""
    runs = _checkpoint(tmp_path)
    target = tmp_path / "dr"
    options = {"roots": [str(runs)], "dr_copy": str(target), "settle_seconds": 0, "part_size_mib": 5,
               "max_buffer_mib": 16, "parallel_files": 1}
    (tmp_path / "options.json").write_text(json.dumps(options))
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(module="places.local", writer="LocalWriter"),
                              str(tmp_path / "options.json")],
                             env=env_for_child(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    copy_dir = target / "ckpts" / "r1" / "step-7"
    try:
        done_before = _wait_until_part_written(copy_dir, runs / "r1" / "step-7", time.monotonic() + 120)
    finally:
        os.kill(child.pid, signal.SIGKILL)  # our own child, by its pid
        output = child.communicate()[0].decode(errors="replace")
    assert child.returncode == -signal.SIGKILL, output
    assert not (copy_dir / MARKER).exists()
    finished = {rel: (copy_dir / rel).stat() for rel in done_before}

    backup = Repo(tmp_path / "repo").backup(make_exporter(options))
    assert backup.findings == [] and list(backup.by_identity()) == ["near/r1/step-7"]
    (line,) = [ln for ln in backup.log if "already done" in ln]
    assert int(re.search(r"(\d+) already done", line).group(1)) == len(done_before), line
    assert int(re.search(r"(\d+) reused", line).group(1)) >= 5 << 20, line  # the killed file's first part

    source = {p.name: p.read_bytes() for p in (runs / "r1" / "step-7").iterdir()}
    copy = {p.name: p.read_bytes() for p in copy_dir.iterdir() if p.is_file()}
    assert {k: v for k, v in copy.items() if k not in (MANIFEST, MARKER)} == source  # no partial left
    assert make_exporter(options).verify(read_data=True)[0].ok
    for rel, before in finished.items():  # complete before the kill: not written again
        after = (copy_dir / rel).stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), rel
