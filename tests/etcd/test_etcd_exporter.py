"""The etcd exporter against a real etcd (Debian etcd-server 3.4): snapshot, verify, restore with
etcd's own tools into a new data directory, start etcd on it and read the keys back."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import subprocess
import threading

import pytest

from dr.exporters.contract import OutcomeStatus
from dr.exporters.etcd import EtcdExporter
from dr.exporters.etcd.exporter import SAME_VERSION_ONLY
from dr.model.artifacts import Sensitivity
from dr.repository.reading import ArtifactReader
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
    recipient, _ = age_keys
    return harness.backup(EtcdExporter, opts, base_dir=str(tmp_path), recipients=[recipient])


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


def test_unreachable_cluster_is_an_error_finding_and_the_others_still_land(harness, tmp_path, etcd, age_keys):
    done = backup(harness, tmp_path, age_keys, options(("gone", ["http://127.0.0.1:9"]), ("cp", [etcd])))
    assert [a.identity for a in done.artifacts] == ["cp"]
    errors = [f for f in done.findings if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["etcd-snapshot-failed"] and "no etcd endpoint answered" in errors[0]["message"]


class _CorruptingGateway(http.server.BaseHTTPRequestHandler):
    """Answers like etcd's gateway, from a real snapshot with one byte of its database flipped."""

    snapshot = b""

    def do_POST(self):  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v3/maintenance/snapshot":
            data = bytearray(self.snapshot)
            data[len(data) // 2] ^= 0xFF
            body = b"".join(json.dumps({"result": {"blob": base64.b64encode(bytes(data[i:i + 4096])).decode()}}).encode()
                            + b"\n" for i in range(0, len(data), 4096))
        elif self.path == "/v3/cluster/member/list":
            body = json.dumps({"members": [{"ID": "1", "name": "cp1"}]}).encode()
        else:
            body = json.dumps({"header": {"revision": "4", "cluster_id": "1", "member_id": "1"}, "version": "3.4.23",
                               "raftIndex": "9", "dbSize": str(len(self.snapshot))}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_corrupted_snapshot_is_refused_and_nothing_of_it_is_stored(harness, tmp_path, etcd, age_keys):
    etcdctl("--endpoints", etcd, "snapshot", "save", str(tmp_path / "real.db"))
    _CorruptingGateway.snapshot = (tmp_path / "real.db").read_bytes()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CorruptingGateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = backup(harness, tmp_path, age_keys, options(("cp", [f"http://127.0.0.1:{server.server_port}"])))
    finally:
        server.shutdown()
    assert done.artifacts == []
    (error,) = [f for f in done.findings if f["severity"] == "error"]
    assert "integrity hash mismatch" in error["message"]


def test_restore_refuses_a_snapshot_whose_hash_does_not_match(tmp_path, etcd):
    """Content that passed the repository's checks but is not an intact snapshot (an exporter bug,
    or a file imported by hand) is refused before it is placed."""
    from dr.exporters.contract import ExportContext, RestoreRequest
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
    from dr.exporters.contract import ExportContext, NoDestination

    done = backup(harness, tmp_path, age_keys, options(("cp", [etcd])))
    outcomes = harness.restore(EtcdExporter, options(("cp", [etcd])), done.artifacts, identities=[age_keys[1]],
                               to=str(tmp_path / "dry"), dry_run=True)
    assert statuses(outcomes) == {"cp": OutcomeStatus.PLANNED} and not (tmp_path / "dry").exists()
    exporter = EtcdExporter(ExportContext("etcd-main", EtcdExporter.Options(**options(("cp", [etcd]))), "."))
    with pytest.raises(NoDestination, match="--to etcd-main=DIRECTORY"):
        exporter.destinations(done.artifacts, lambda kind, ref: None)
