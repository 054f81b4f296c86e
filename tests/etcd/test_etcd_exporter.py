"""The etcd exporter against a real etcd (Debian etcd-server 3.4): snapshot, verify, restore with
etcd's own tools into a new data directory, start etcd on it and read the keys back."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from concurrent import futures

import grpc
import pytest

from dr.drills.comparing import difference
from dr.contract import ExportContext, OutcomeStatus, RestoreRequest
from dr.exporters.etcd import EtcdExporter
from dr.exporters.etcd.exporter import SAME_VERSION_ONLY
from dr.model.artifacts import Sensitivity
from dr.repository.reading import ArtifactReader
from tests.etcd import wire
from tests.etcd.conftest import KEYS, read_all
from tests.exporters.conftest import statuses
from tests.servers import etcd_server, free_port


def options(*clusters: tuple[str, list[str]]) -> dict:
    return {"clusters": [{"name": name, "endpoints": endpoints} for name, endpoints in clusters],
            "timeout_seconds": 5}


def etcdctl(*args: str, cwd=None) -> str:
    return subprocess.run(["etcdctl", *args], check=True, capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "ETCDCTL_API": "3"}).stdout


def backup(harness, tmp_path, age_keys, opts):
    recipient, identity = age_keys
    return harness.backup(EtcdExporter, opts, base_dir=str(tmp_path), recipients=[recipient], identities=[identity])


def test_backup_is_a_secret_verified_snapshot_with_revision_and_members(harness, tmp_path, etcd, age_keys):
    done = backup(harness, tmp_path, age_keys, options(("cp", ["http://127.0.0.1:9", etcd])))  # the first is down
    (artifact,) = done.artifacts
    assert artifact.kind == "etcd-snapshot" and artifact.identity == "cp"
    assert artifact.sensitivity == Sensitivity.SECRET and artifact.encrypted
    assert b"hunter2" not in harness.stored_bytes()
    assert artifact.meta["endpoint"] == etcd and artifact.meta["etcd_version"].startswith("3.")
    assert [m["name"] for m in artifact.meta["members"]] == ["cp1"]
    assert artifact.meta["restore_note"] == SAME_VERSION_ONLY
    assert [f["code"] for f in done.findings] == ["etcd-snapshot-same-version-only"]

    # byte-identical to what `etcdctl snapshot save` writes, and the same revision as its status says
    reader = ArtifactReader(harness.repo, [age_keys[1]])
    ours = reader.read(artifact)
    etcdctl("--endpoints", etcd, "snapshot", "save", str(tmp_path / "theirs.db"))
    assert hashlib.sha256(ours).digest() == hashlib.sha256((tmp_path / "theirs.db").read_bytes()).digest()
    (tmp_path / "ours.db").write_bytes(ours)
    status = json.loads(etcdctl("snapshot", "status", str(tmp_path / "ours.db"), "-w", "json"))
    assert status["revision"] == artifact.meta["revision"]


def test_an_unchanged_cluster_is_not_read_again(harness, tmp_path, etcd, age_keys):
    first = backup(harness, tmp_path, age_keys, options(("cp", [etcd])))
    second = harness.backup(EtcdExporter, options(("cp", [etcd])), base_dir=str(tmp_path),
                            recipients=[age_keys[0]], parent=first.artifacts)
    assert second.stats["artifacts_reused"] == 1
    assert second.artifacts[0].chunks == first.artifacts[0].chunks


def test_restored_with_etcds_own_tools_into_a_new_data_directory(harness, tmp_path, etcd, age_keys):
    done = backup(harness, tmp_path, age_keys, options(("cp", [etcd])))
    to = tmp_path / "restored"
    outcomes = harness.restore(EtcdExporter, options(("cp", [etcd])), done.artifacts, identities=[age_keys[1]],
                               to=str(to))
    assert statuses(outcomes) == {"cp": OutcomeStatus.RESTORED}, outcomes
    assert "etcdutl snapshot restore" in outcomes[0].reason
    assert oct(os.stat(to / "cp.db").st_mode & 0o777) == "0o600"

    # the runbook's steps (etcd 3.4: etcdctl snapshot restore; 3.5+: etcdutl), then a new member on it
    peer = free_port()
    data = tmp_path / "new-data"
    etcdctl("snapshot", "restore", str(to / "cp.db"), "--data-dir", str(data), "--name", "rebuilt",
            "--initial-cluster", f"rebuilt=http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}", cwd=tmp_path)
    server = etcd_server(str(data), name="rebuilt")
    server.fixed_peer_port = peer
    with server:
        assert read_all(f"http://127.0.0.1:{server.port}") == KEYS

    again = harness.restore(EtcdExporter, options(("cp", [etcd])), done.artifacts, identities=[age_keys[1]],
                            to=str(to))
    assert statuses(again) == {"cp": OutcomeStatus.UNCHANGED}
    # what dr drill compares: the file against the snapshot's plaintext (secret: no catalog digest)
    reader = ArtifactReader(harness.repo, [age_keys[1]])
    exporter = EtcdExporter(ExportContext("src", EtcdExporter.Options(**options(("cp", [etcd]))), "/nonexistent"))
    (content,) = exporter.restored_content(done.artifacts, reader, RestoreRequest(to=str(to)))
    assert content.path == str(to / "cp.db") and difference(content, done.artifacts[0], reader) == ""
    (to / "cp.db").write_bytes((to / "cp.db").read_bytes()[:-1] + b"x")
    assert "has sha256" in difference(content, done.artifacts[0], reader)


def test_unreachable_cluster_is_an_error_finding_and_the_others_still_land(harness, tmp_path, etcd, age_keys):
    done = backup(harness, tmp_path, age_keys, options(("gone", ["http://127.0.0.1:9"]), ("cp", [etcd])))
    assert [a.identity for a in done.artifacts] == ["cp"]
    errors = [f for f in done.findings if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["etcd-snapshot-failed"] and "no etcd endpoint answered" in errors[0]["message"]


def _corrupting_etcd(snapshot: bytes) -> grpc.Server:
    """Answers like etcd's gRPC API, from a real snapshot with one byte of its database flipped
    (a stand-in: a real etcd cannot be made to send a corrupted snapshot)."""
    data = bytearray(snapshot)
    data[len(data) // 2] ^= 0xFF
    header = wire.encode((1, 1), (2, 1), (3, 4))

    def status(request, context):
        return wire.encode((1, header), (2, "3.4.23"), (3, len(snapshot)), (5, 9))

    def members(request, context):
        return wire.encode((1, header), (2, wire.encode((1, 1), (2, "cp1"))))

    def pieces(request, context):
        for at in range(0, len(data), 4096):
            yield wire.encode((1, header), (2, max(0, len(data) - at - 4096)), (3, bytes(data[at:at + 4096])))

    server = grpc.server(futures.ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers((
        grpc.method_handlers_generic_handler("etcdserverpb.Maintenance", {
            "Status": grpc.unary_unary_rpc_method_handler(status),
            "Snapshot": grpc.unary_stream_rpc_method_handler(pieces)}),
        grpc.method_handlers_generic_handler("etcdserverpb.Cluster", {
            "MemberList": grpc.unary_unary_rpc_method_handler(members)})))
    return server


def test_a_corrupted_snapshot_is_refused_and_nothing_of_it_is_stored(harness, tmp_path, etcd, age_keys):
    etcdctl("--endpoints", etcd, "snapshot", "save", str(tmp_path / "real.db"))
    server = _corrupting_etcd((tmp_path / "real.db").read_bytes())
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        done = backup(harness, tmp_path, age_keys, options(("cp", [f"http://127.0.0.1:{port}"])))
    finally:
        server.stop(None)
    assert done.artifacts == []
    (error,) = [f for f in done.findings if f["severity"] == "error"]
    assert "integrity hash mismatch" in error["message"]


def test_restore_refuses_a_snapshot_whose_hash_does_not_match(tmp_path, etcd):
    """Content that passed the repository's checks but is not an intact snapshot (an exporter bug,
    or a file imported by hand) is refused before it is placed."""
    from dr.contract import ExportContext, RestoreRequest
    from dr.model.artifacts import Artifact

    class Reader:
        def open(self, artifact):
            import io
            return io.BytesIO(os.urandom(8192) + b"\0" * 32)

    artifact = Artifact("src", "etcd", "etcd-snapshot", "cp", 8224, Sensitivity.SECRET)
    exporter = EtcdExporter(ExportContext("src", EtcdExporter.Options(**options(("cp", [etcd]))), str(tmp_path)))
    (outcome,) = exporter.restore([artifact], Reader(), RestoreRequest(to=str(tmp_path / "out")))
    assert outcome.status == OutcomeStatus.FAILED and "integrity hash mismatch" in outcome.reason
    assert os.listdir(tmp_path / "out") == []


def test_dry_run_changes_nothing_and_no_destination_is_assumed(harness, tmp_path, etcd, age_keys):
    from dr.contract import ExportContext, NoDestination

    done = backup(harness, tmp_path, age_keys, options(("cp", [etcd])))
    outcomes = harness.restore(EtcdExporter, options(("cp", [etcd])), done.artifacts, identities=[age_keys[1]],
                               to=str(tmp_path / "dry"), dry_run=True)
    assert statuses(outcomes) == {"cp": OutcomeStatus.PLANNED} and not (tmp_path / "dry").exists()
    exporter = EtcdExporter(ExportContext("etcd-main", EtcdExporter.Options(**options(("cp", [etcd]))), "."))
    with pytest.raises(NoDestination, match="--to etcd-main=DIRECTORY"):
        exporter.destinations(done.artifacts, lambda kind, ref: None)
