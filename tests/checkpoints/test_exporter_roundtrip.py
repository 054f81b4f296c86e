"""Round trips of real DCP checkpoints: source on one moto server, DR copy on ANOTHER (another
failure domain), back through a real repository, loaded by torch and compared tensor by tensor.
Also: a byte changed in a DR copy, a tampered manifest, a missing marker: each detected,
naming the file, and never restored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint._fsspec_filesystem import FsspecReader

from dr.exporters.checkpoints.copies.layout import MANIFEST, MARKER
from dr.contract import OutcomeStatus, RestoreRequest
from dr.drills.comparing import difference
from dr.repository.reading import ArtifactReader
from tests.checkpoints.test_exporter_helpers import (Repo, assert_same_state, bucket_files, load_state,
                                                     make_exporter, s3_fsspec, save_steps, upload_tree)
from tests.fixtures_s3 import s3_client


@pytest.fixture
def two_domains(s3_bucket, moto_endpoint, moto_endpoint_b, tmp_path):
    """Three real DCP saves of run `llama` in a bucket on server A; a DR bucket on server B."""
    saved = save_steps(tmp_path / "local", "llama", [100, 200, 300], thread_count=2)
    src, dr = s3_bucket(), s3_bucket(endpoint=moto_endpoint_b)
    upload_tree(moto_endpoint, src, "runs", tmp_path / "local")
    options = {"roots": [{"url": f"s3://{src}/runs", "endpoint_url": moto_endpoint}],
               "dr_copy": {"url": f"s3://{dr}/dr", "endpoint_url": moto_endpoint_b},
               "settle_seconds": 0, "part_size_mib": 5}
    return {"saved": saved, "src": src, "dr": dr, "options": options, "repo": Repo(tmp_path / "repo"),
            "a": moto_endpoint, "b": moto_endpoint_b}


def test_copies_are_plain_checkpoints_with_manifest_and_marker(two_domains):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    assert backup.findings == []
    assert sorted(backup.by_identity()) == ["near/llama/step-100", "near/llama/step-200", "near/llama/step-300"]
    source = bucket_files(env["a"], env["src"], "runs/llama/step-300")
    copy = bucket_files(env["b"], env["dr"], "dr/ckpts/llama/step-300")
    assert {k: v for k, v in copy.items() if k not in (MANIFEST, MARKER)} == source
    manifest = json.loads(copy[MANIFEST])
    assert {f["path"]: (f["size"], f["sha256"]) for f in manifest["files"]} == \
        {k: (len(v), hashlib.sha256(v).hexdigest()) for k, v in source.items()}
    assert json.loads(copy[MARKER])["manifest_sha256"] == hashlib.sha256(copy[MANIFEST]).hexdigest()
    every_step = bucket_files(env["a"], env["src"], "runs/llama")
    assert backup.stats["bytes_transferred"] == sum(len(v) for v in every_step.values()) > 0


def test_snapshot_record_is_small_and_names_source_and_copy(two_domains):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    artifact = backup.by_identity()["near/llama/step-300"]
    assert artifact.kind == "checkpoint-copy" and artifact.size < 4096
    source_url = f"s3://{env['src']}/runs/llama/step-300"
    copy_url = f"s3://{env['dr']}/dr/ckpts/llama/step-300"
    assert {(d.kind, d.reference) for d in artifact.dependencies} == {("bucket", source_url),
                                                                      ("checkpoint-copy", copy_url)}
    assert artifact.meta["provides"] == [source_url]
    assert (artifact.meta["run"], artifact.meta["step"], artifact.meta["copy"]) == ("llama", 300, copy_url)


def test_unchanged_copies_reuse_their_records(two_domains):
    env = two_domains
    env["repo"].backup(make_exporter(env["options"]))
    second = env["repo"].backup(make_exporter(env["options"]))
    assert second.log == [] and len(second.artifacts) == 3  # nothing copied, nothing pruned
    assert second.stats["artifacts_reused"] == 3 and second.stats["bytes_transferred"] == 0


def test_load_in_place_from_the_dr_bucket(two_domains):
    """DCP's own FsspecReader reads the DR copy straight from the bucket on server B."""
    env = two_domains
    env["repo"].backup(make_exporter(env["options"]))
    with s3_fsspec():
        reader = FsspecReader(f"s3://{env['dr']}/dr/ckpts/llama/step-200", endpoint_url=env["b"])
        assert_same_state(load_state(reader), env["saved"][200])


def test_restore_to_a_directory_then_load(two_domains, tmp_path):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    outcomes = env["repo"].restore(make_exporter(env["options"]), backup.artifacts, to=str(tmp_path / "resume"),
                                   remap={"run": "llama", "step": "latest"})
    assert [o.status for o in outcomes] == [OutcomeStatus.RESTORED], outcomes
    restored = tmp_path / "resume" / "llama" / "step-300"
    assert_same_state(load_state(FileSystemReader(str(restored))), env["saved"][300])
    assert not (restored / MANIFEST).exists()  # the trainer gets a plain checkpoint


def test_restore_a_chosen_step_to_a_bucket(two_domains, s3_bucket):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    target = s3_bucket()
    remap = {"run": "llama", "step": "100", "endpoint_url": env["a"]}
    outcomes = env["repo"].restore(make_exporter(env["options"]), backup.artifacts, to=f"s3://{target}/resume",
                                   remap=remap)
    assert [o.status for o in outcomes] == [OutcomeStatus.RESTORED], outcomes
    assert bucket_files(env["a"], target, "resume/llama/step-100") == \
        bucket_files(env["a"], env["src"], "runs/llama/step-100")
    assert sorted(bucket_files(env["a"], target, "resume/llama")) == \
        sorted(f"step-100/{k}" for k in bucket_files(env["a"], env["src"], "runs/llama/step-100"))  # no staging left
    again = env["repo"].restore(make_exporter(env["options"]), backup.artifacts, to=f"s3://{target}/resume",
                                remap=remap)
    assert [o.status for o in again] == [OutcomeStatus.UNCHANGED]


def test_no_destination_verifies_and_names_the_copy(two_domains):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    (outcome,) = env["repo"].restore(make_exporter(env["options"]), backup.artifacts, remap={"run": "llama"})
    assert outcome.status == OutcomeStatus.SKIPPED
    assert f"s3://{env['dr']}/dr/ckpts/llama/step-300" in outcome.reason and env["b"] in outcome.reason


def test_unknown_run_step_and_remap_keys_are_refused(two_domains, tmp_path):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    restore = lambda **kw: env["repo"].restore(make_exporter(env["options"]), backup.artifacts,  # noqa: E731
                                               to=str(tmp_path / "x"), **kw)
    (missing_run,) = restore(remap={"run": "gpt"})
    assert missing_run.status == OutcomeStatus.FAILED and "llama" in missing_run.reason
    (missing_step,) = restore(remap={"run": "llama", "step": "150"})
    assert missing_step.status == OutcomeStatus.FAILED and "[100, 200, 300]" in missing_step.reason
    (bad_key,) = restore(remap={"namespace": "x"})
    assert bad_key.status == OutcomeStatus.FAILED and "run" in bad_key.reason


def _corrupt(endpoint: str, bucket: str, key: str, offset: int = 100) -> None:
    client = s3_client(endpoint)
    data = bytearray(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    data[offset] ^= 0xFF
    client.put_object(Bucket=bucket, Key=key, Body=bytes(data))


def test_one_flipped_byte_is_found_by_verify_and_refused_by_restore(two_domains, tmp_path):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    _corrupt(env["b"], env["dr"], "dr/ckpts/llama/step-300/__0_1.distcp")
    checks = {c.step: c for c in make_exporter(env["options"]).verify(read_data=True)}
    assert checks[200].ok and not checks[300].ok
    assert checks[300].problems == ["__0_1.distcp: SHA-256 does not match the manifest (corrupt or tampered)"]
    outcomes = env["repo"].restore(make_exporter(env["options"]), backup.artifacts, to=str(tmp_path / "resume"),
                                   remap={"run": "llama"})
    assert [o.status for o in outcomes] == [OutcomeStatus.FAILED]
    assert "__0_1.distcp" in outcomes[0].reason
    restored = tmp_path / "resume" / "llama" / "step-300"
    assert not (restored / ".metadata").exists() and not (restored / "__0_1.distcp").exists()
    (in_place,) = env["repo"].restore(make_exporter(env["options"]), backup.artifacts, remap={"run": "llama"})
    assert in_place.status == OutcomeStatus.FAILED and "__0_1.distcp" in in_place.reason


def test_a_refused_restore_to_a_bucket_leaves_no_object_and_no_upload(two_domains, s3_bucket):
    """S3 has no rename: the files are staged under a dot prefix, copied into place only when
    every one verified (staging.py); a refusal deletes the staging prefix."""
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    _corrupt(env["b"], env["dr"], "dr/ckpts/llama/step-300/__0_1.distcp")
    target = s3_bucket()
    remap = {"run": "llama", "endpoint_url": env["a"]}
    (outcome,) = env["repo"].restore(make_exporter(env["options"]), backup.artifacts, to=f"s3://{target}/resume",
                                     remap=remap)
    assert outcome.status == OutcomeStatus.FAILED and "__0_1.distcp" in outcome.reason
    client = s3_client(env["a"])
    assert client.list_objects_v2(Bucket=target).get("KeyCount") == 0
    assert not client.list_multipart_uploads(Bucket=target).get("Uploads")


def test_tampered_manifest_and_missing_marker_are_refused(two_domains, tmp_path):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    client = s3_client(env["b"])
    key = "dr/ckpts/llama/step-300/" + MANIFEST
    manifest = json.loads(client.get_object(Bucket=env["dr"], Key=key)["Body"].read())
    manifest["files"][0]["size"] += 1
    client.put_object(Bucket=env["dr"], Key=key, Body=json.dumps(manifest).encode())
    client.delete_object(Bucket=env["dr"], Key="dr/ckpts/llama/step-200/" + MARKER)
    x = make_exporter(env["options"])
    (latest,) = env["repo"].restore(x, backup.artifacts, to=str(tmp_path / "r"), remap={"run": "llama"})
    assert latest.status == OutcomeStatus.FAILED and "changed after the copy completed" in latest.reason
    (middle,) = env["repo"].restore(x, backup.artifacts, to=str(tmp_path / "r"),
                                    remap={"run": "llama", "step": "200"})
    assert middle.status == OutcomeStatus.FAILED and MARKER in middle.reason
    checks = {c.url.rsplit("/", 1)[-1]: c for c in make_exporter(env["options"]).verify(read_data=False)}
    assert sorted(checks) == ["step-100", "step-300"]  # without its marker, step-200's copy does not exist
    assert checks["step-100"].ok and "changed after the copy completed" in checks["step-300"].problems[0]


def test_rpo_per_run(two_domains, tmp_path):
    env = two_domains
    x = make_exporter(env["options"])
    (before,) = x.rpo()
    assert (before.source_step, before.copy_step, before.rpo_seconds, before.behind) == (300, None, None, 3)
    env["repo"].backup(make_exporter(env["options"]))
    (after,) = make_exporter(env["options"]).rpo()
    assert (after.run, after.tier, after.copy_step) == ("llama", "near", 300)
    assert (after.rpo_seconds, after.behind) == (0.0, 0)
    assert after.copy_url == f"s3://{env['dr']}/dr/ckpts/llama/step-300"


def test_local_source_and_local_dr_copy(tmp_path):
    saved = save_steps(tmp_path / "runs", "r1", [1, 2], single_file_per_rank=False)
    options = {"roots": [str(tmp_path / "runs")], "dr_copy": str(tmp_path / "dr"), "settle_seconds": 0}
    repo = Repo(tmp_path / "repo")
    backup = repo.backup(make_exporter(options))
    assert len(backup.artifacts) == 2 and backup.findings == []
    assert_same_state(load_state(FileSystemReader(str(tmp_path / "dr" / "ckpts" / "r1" / "step-2"))), saved[2])
    (outcome,) = repo.restore(make_exporter(options), backup.artifacts, to=str(tmp_path / "back"),
                              remap={"step": "1"})
    assert outcome.status == OutcomeStatus.RESTORED
    assert_same_state(load_state(FileSystemReader(str(tmp_path / "back" / "r1" / "step-1"))), saved[1])


def _paths(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_shared_filesystem_source_to_a_bucket_and_back(tmp_path, s3_bucket, moto_endpoint_b):
    """A trainer on a shared filesystem; the DR copy in a bucket on the other server."""
    saved = save_steps(tmp_path / "runs", "r1", [10, 20], thread_count=3)
    dr = s3_bucket(endpoint=moto_endpoint_b)
    options = {"roots": [str(tmp_path / "runs")], "settle_seconds": 0, "part_size_mib": 5,
               "dr_copy": {"url": f"s3://{dr}/c", "endpoint_url": moto_endpoint_b}}
    repo = Repo(tmp_path / "repo")
    backup = repo.backup(make_exporter(options))
    assert sorted(backup.by_identity()) == ["near/r1/step-10", "near/r1/step-20"]
    assert backup.by_identity()["near/r1/step-20"].dependencies[0].kind == "path"
    (outcome,) = repo.restore(make_exporter(options), backup.artifacts, to=str(tmp_path / "new"))
    assert outcome.status == OutcomeStatus.RESTORED
    assert_same_state(load_state(FileSystemReader(str(tmp_path / "new" / "r1" / "step-20"))), saved[20])
    assert _paths(tmp_path / "new" / "r1" / "step-20") == _paths(tmp_path / "runs" / "r1" / "step-20")


def _compared(env, artifacts, **request) -> dict:
    """What dr drill finds of each checkpoint restore_copies chose: "" or what differs."""
    reader = ArtifactReader(env["repo"].repo, None)
    by_identity = {a.identity: a for a in artifacts}
    return {c.item: difference(c, by_identity[c.item], reader)
            for c in make_exporter(env["options"]).restored_content(artifacts, reader, RestoreRequest(**request))}


def test_restored_content_hashes_the_restored_files_against_the_manifest(two_domains, tmp_path):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    to, remap = str(tmp_path / "resume"), {"run": "llama"}
    assert _compared(env, backup.artifacts, to=to, remap=remap) == {
        "near/llama/step-300": "nothing of it is at the destination"}
    env["repo"].restore(make_exporter(env["options"]), backup.artifacts, to=to, remap=remap)
    assert _compared(env, backup.artifacts, to=to, remap=remap) == {"near/llama/step-300": ""}
    assert _compared(env, backup.artifacts, to=to, remap={**remap, "step": "200"}) == {
        "near/llama/step-200": "nothing of it is at the destination"}
    assert _compared(env, backup.artifacts, remap=remap) == {}  # verified in place: nothing written to compare

    restored = tmp_path / "resume" / "llama" / "step-300"
    count = len(list(restored.iterdir()))
    shard = restored / "__0_1.distcp"
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))  # the same size, one byte flipped
    assert f"fingerprint {count}/{count} files" in _compared(env, backup.artifacts, to=to, remap=remap)["near/llama/step-300"]
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    assert _compared(env, backup.artifacts, to=to, remap=remap) == {"near/llama/step-300": ""}
    (restored / "stray.pt").write_bytes(b"not the checkpoint's")
    assert _compared(env, backup.artifacts, to=to, remap=remap)["near/llama/step-300"]
    (restored / "stray.pt").unlink()
    (restored / ".metadata").unlink()
    assert f"fingerprint {count - 1}/{count} files" in _compared(env, backup.artifacts, to=to, remap=remap)["near/llama/step-300"]


def test_restored_content_reads_a_checkpoint_restored_to_a_bucket(two_domains, s3_bucket):
    env = two_domains
    backup = env["repo"].backup(make_exporter(env["options"]))
    target = s3_bucket()
    request = {"to": f"s3://{target}/resume", "remap": {"run": "llama", "step": "100", "endpoint_url": env["a"]}}
    env["repo"].restore(make_exporter(env["options"]), backup.artifacts, **request)
    assert _compared(env, backup.artifacts, **request) == {"near/llama/step-100": ""}
    _corrupt(env["a"], target, "resume/llama/step-100/__0_0.distcp")
    assert "fingerprint" in _compared(env, backup.artifacts, **request)["near/llama/step-100"]
