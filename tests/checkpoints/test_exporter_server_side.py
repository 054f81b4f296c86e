"""Source and DR copy on the same endpoint with the same credentials: the copy is made inside
the object store (CopyObject, UploadPartCopy for large files), no checkpoint byte passes
through dr, and the manifest's digests are still right. Multipart leftovers are listed and
aborted by age: on the source only when the plan allows it, on dr's own target always.

moto reports every multipart upload as initiated at 2010-11-10T20:48:33Z, whatever the time;
the tests set the exporter's clock relative to that instant to make uploads young or old.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
from collections import Counter

import pytest

from dr.kits.places import s3writing
from dr.exporters.checkpoints.copies.layout import MANIFEST
from tests.checkpoints.test_exporter_helpers import (Repo, bucket_files, make_exporter, save_steps, upload_tree)
from tests.checkpoints.writers import VERSIONS, Trainer, save_dcp
from tests.fixtures_s3 import s3_client

MOTO_INITIATED = calendar.timegm((2010, 11, 10, 20, 48, 33, 0, 0, 0))


def _count_calls(client) -> Counter:
    """(operation, file name) -> count, for every call this client makes from now on."""
    calls: Counter = Counter()

    def hook(params, model, **kwargs):
        calls[(model.name, params.get("Key", "").rsplit("/", 1)[-1])] += 1

    client.meta.events.register("provide-client-params.s3", hook)
    return calls


@pytest.fixture
def same_endpoint(tmp_path, s3_bucket, moto_endpoint):
    trainer = Trainer()
    trainer.step(1)
    import torch

    state = trainer.state() | {"big": torch.randn(3 << 20)}  # a 12 MiB shard among small files
    save_dcp(tmp_path / "local" / "run" / "step-5", state, single_file_per_rank=False)
    src, dr = s3_bucket(), s3_bucket()
    upload_tree(moto_endpoint, src, "ck", tmp_path / "local")
    options = {"roots": [{"url": f"s3://{src}/ck", "endpoint_url": moto_endpoint}],
               "dr_copy": {"url": f"s3://{dr}/copies", "endpoint_url": moto_endpoint},
               "settle_seconds": 0, "part_size_mib": 5}
    return {"src": src, "dr": dr, "options": options, "endpoint": moto_endpoint, "tmp": tmp_path}


def _backup_counting(env):
    x = make_exporter(env["options"])
    (tier,) = x.options.effective_tiers()
    target_calls = _count_calls(x.tier_place(tier).client)
    source_calls = _count_calls(x.roots()[0].client)
    backup = Repo(env["tmp"] / "repo").backup(x)
    return backup, target_calls, source_calls


def _manifest_matches_source(env) -> None:
    source = bucket_files(env["endpoint"], env["src"], "ck/run/step-5")
    copy = bucket_files(env["endpoint"], env["dr"], "copies/ckpts/run/step-5")
    manifest = json.loads(copy[MANIFEST])
    assert {f["path"]: f["sha256"] for f in manifest["files"]} == \
        {k: hashlib.sha256(v).hexdigest() for k, v in source.items()}
    assert all(copy[k] == v for k, v in source.items())


def test_copy_inside_the_store_moves_no_bytes_through_dr(same_endpoint):
    files = len(bucket_files(same_endpoint["endpoint"], same_endpoint["src"], "ck/run/step-5"))
    backup, target_calls, source_calls = _backup_counting(same_endpoint)
    assert backup.findings == [] and f"{files} server-side" in backup.log[0] and "0 bytes sent" in backup.log[0]
    ops = Counter(op for op, _ in target_calls.elements())
    assert ops["CopyObject"] == files and ops["UploadPart"] == 0 and ops["UploadPartCopy"] == 0
    put = {name for (op, name) in target_calls if op == "PutObject"}
    locks = {n for n in put if re.fullmatch(r"\d{15}-[0-9a-f]{16}", n)}  # the copy lock (copies.locking)
    assert len(locks) == 1
    assert {n for n in put - locks if not n.endswith(".json")} == {"DR-COMPLETE"}  # + manifest, journal entries
    read = {name for (op, name) in source_calls if op == "GetObject"}
    # the index, to judge completeness and what the checkpoint holds, and one ranged read per
    # version field (one file per item here), for the copy's resume record
    assert ".metadata" in read and len(read - {".metadata"}) == len(VERSIONS)
    _manifest_matches_source(same_endpoint)


def test_large_files_use_upload_part_copy_and_a_verified_read(same_endpoint, monkeypatch):
    monkeypatch.setattr(s3writing, "COPY_OBJECT_LIMIT", 1 << 20)  # stands for S3's 5 GiB
    monkeypatch.setattr(s3writing, "COPY_PART", 5 << 20)
    backup, target_calls, _ = _backup_counting(same_endpoint)
    assert backup.findings == []
    ops = Counter(op for op, _ in target_calls.elements())
    assert ops["UploadPartCopy"] == 3  # the 12 MiB shard, in 5 MiB ranges
    assert ops["GetObject"] >= 1  # its digest: S3 keeps no whole-object SHA-256 for it
    _manifest_matches_source(same_endpoint)


# -- multipart leftovers ----------------------------------------------------------------------
def _leftover(endpoint: str, bucket: str, key: str) -> None:
    client = s3_client(endpoint)
    upload = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    client.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"0" * 1024)


def _pending(endpoint: str, bucket: str) -> list[str]:
    return sorted(u["Key"] for u in s3_client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", []))


@pytest.mark.parametrize("age_hours,allowed,aborted", [
    (1, True, False),  # young: a writer may still be busy
    (48, False, False),  # old, but the source belongs to the trainers
    (48, True, True),
])
def test_source_leftovers_listed_and_aborted_only_when_old_and_allowed(
        tmp_path, s3_bucket, moto_endpoint, age_hours, allowed, aborted):
    save_steps(tmp_path / "local", "run", [1])
    src, dr = s3_bucket(), s3_bucket()
    upload_tree(moto_endpoint, src, "ck", tmp_path / "local")
    _leftover(moto_endpoint, src, "ck/run/step-2/__0_0.distcp")
    options = {"roots": [{"url": f"s3://{src}/ck", "endpoint_url": moto_endpoint}],
               "dr_copy": {"url": f"s3://{dr}/copies", "endpoint_url": moto_endpoint}, "settle_seconds": 0,
               "abort_multipart_after": "24h", "allow_source_cleanup": allowed}
    x = make_exporter(options, clock=lambda: MOTO_INITIATED + age_hours * 3600)
    backup = Repo(tmp_path / "repo").backup(x)
    (finding,) = [f for f in backup.findings if f["code"].startswith("checkpoint-multipart")]
    assert finding["path"] == "run/step-2/__0_0.distcp" and f"{age_hours:.1f} h" in finding["message"]
    assert finding["code"] == ("checkpoint-multipart-aborted" if aborted else "checkpoint-multipart-pending")
    assert _pending(moto_endpoint, src) == ([] if aborted else ["ck/run/step-2/__0_0.distcp"])


@pytest.mark.parametrize("age_hours,aborted", [(1, False), (48, True)])
def test_dr_target_leftovers_are_aborted_by_age(tmp_path, s3_bucket, moto_endpoint, age_hours, aborted):
    save_steps(tmp_path / "local", "run", [1])
    src, dr = s3_bucket(), s3_bucket()
    upload_tree(moto_endpoint, src, "ck", tmp_path / "local")
    _leftover(moto_endpoint, dr, "copies/ckpts/gone/step-9/__0_0.distcp")  # a killed copier's
    _leftover(moto_endpoint, dr, "elsewhere/not-ours.bin")  # outside this source's prefix
    options = {"roots": [{"url": f"s3://{src}/ck", "endpoint_url": moto_endpoint}],
               "dr_copy": {"url": f"s3://{dr}/copies", "endpoint_url": moto_endpoint}, "settle_seconds": 0,
               "abort_multipart_after": "24h"}
    x = make_exporter(options, clock=lambda: MOTO_INITIATED + age_hours * 3600)
    backup = Repo(tmp_path / "repo").backup(x)
    assert [a for a in backup.by_identity()] == ["near/run/step-1"]
    left = _pending(moto_endpoint, dr)
    assert ("copies/ckpts/gone/step-9/__0_0.distcp" in left) == (not aborted)
    assert "elsewhere/not-ours.bin" in left
    assert any("aborted a stale upload" in line for line in backup.log) == aborted
