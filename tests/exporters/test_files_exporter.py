"""The files exporter against real trees: modes, ns mtimes, symlinks, big files, secrets, traversal."""

from __future__ import annotations

import gzip
import os
import stat

import pyrage
import pytest
from pydantic import ValidationError

from dr.contract import ExportContext, OutcomeStatus
from dr.exporters.files import FilesExporter
from dr.contract.registry import Registry
from dr.model.artifacts import Sensitivity
from dr.repository import encryption, names
from dr.repository.catalogs import read_catalog
from dr.repository.writing import CHUNK_SIZE, SnapshotWriter
from tests.exporters.conftest import statuses

CANARY = b"CANARY-d41d8cd98f00b204-plaintext-must-not-be-stored"
T0 = 1_600_000_000_123_456_789  # an mtime whose nanoseconds matter


def put(path, data: bytes = b"", mode: int = 0o644, mtime: int = T0) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)
    os.utime(path, ns=(mtime, mtime))


@pytest.fixture
def tree(tmp_path) -> str:
    """cfg/: nested dirs, an empty dir, 0600 and 0755 files, symlinks, a 20 MiB file."""
    root = tmp_path / "src" / "cfg"
    put(root / "a" / "b" / "deep.yaml", b"deep: true\n", 0o644, T0 + 1)
    put(root / "secret.key", CANARY, 0o600, T0 + 2)
    put(root / "run.sh", b"#!/bin/sh\necho hi\n", 0o755, T0 + 3)
    big = bytes(range(256)) * (20 * 4096) + b"tail"  # 20 MiB + 4 bytes: three 8 MiB chunks
    put(root / "big.bin", big, 0o640, T0 + 4)
    os.makedirs(root / "empty")
    os.symlink("a/b/deep.yaml", root / "link")
    os.symlink("/etc/hostname", root / "outside-link")
    os.utime(root / "link", ns=(T0 + 5, T0 + 5), follow_symlinks=False)
    for directory, mode, mtime in [("empty", 0o750, T0 + 6), ("a/b", 0o700, T0 + 7), ("a", 0o755, T0 + 8),
                                   ("", 0o755, T0 + 9)]:
        path = root / directory if directory else root
        os.chmod(path, mode)
        os.utime(path, ns=(mtime, mtime))
    return str(root)


def snapshot_of(root: str) -> dict[str, tuple]:
    """Everything a restore must reproduce, per relative path."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames + ([""] if dirpath == root else []):
            path = os.path.join(dirpath, name) if name else dirpath
            st = os.lstat(path)
            content = None
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as handle:
                    content = handle.read()
            elif stat.S_ISLNK(st.st_mode):
                content = os.readlink(path)
            out[os.path.relpath(path, root)] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                                                st.st_mtime_ns, content)
    return out


def opts(*paths, **extra) -> dict:
    return {"paths": list(paths), **extra}


def test_registered_by_entry_point():
    assert issubclass(Registry().get("files"), FilesExporter)  # completed with the defaults of capabilities it lacks


def test_round_trip_preserves_everything(harness, tree, tmp_path):
    backup = harness.backup(FilesExporter, opts("src/cfg"), base_dir=str(tmp_path))
    found = backup.by_identity()
    assert found["cfg"].kind == "directory" and found["cfg/empty"].kind == "directory"
    assert found["cfg/link"].kind == "symlink" and found["cfg/link"].meta["target"] == "a/b/deep.yaml"
    assert found["cfg/secret.key"].meta["mode"] == "0600" and found["cfg/run.sh"].meta["mode"] == "0755"
    assert found["cfg/big.bin"].size > 2 * CHUNK_SIZE and len(found["cfg/big.bin"].chunks) == 3
    assert not backup.findings

    dest = tmp_path / "out"
    outcomes = harness.restore(FilesExporter, opts("src/cfg"), backup.artifacts, to=str(dest))
    assert set(statuses(outcomes).values()) == {OutcomeStatus.RESTORED}, outcomes
    assert len(outcomes) == len(backup.artifacts) and all(o.reason for o in outcomes)
    assert snapshot_of(str(dest / "cfg")) == snapshot_of(tree)

    again = harness.restore(FilesExporter, opts("src/cfg"), backup.artifacts, to=str(dest))
    assert set(statuses(again).values()) == {OutcomeStatus.UNCHANGED}, again
    assert snapshot_of(str(dest / "cfg")) == snapshot_of(tree)


def test_unchanged_second_backup_reads_and_uploads_nothing(harness, tree, tmp_path):
    first = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path))
    second = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path), parent=first.artifacts)
    assert second.stats["artifacts_reused"] == len(first.artifacts)
    assert second.stats["bytes_uploaded"] == 0 and second.stats["bytes_read"] == 0
    assert second.snapshot.catalog == first.snapshot.catalog

    put(os.path.join(tree, "run.sh"), b"#!/bin/sh\necho changed\n", 0o755, T0 + 3)
    third = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path), parent=second.artifacts)
    assert third.stats["artifacts_reused"] == len(first.artifacts) - 1
    assert third.stats["bytes_read"] == len(b"#!/bin/sh\necho changed\n")


def test_secret_content_is_encrypted_and_needs_the_identity(harness, tree, tmp_path):
    identity, recipient = encryption.generate_identity()
    keys = [pyrage.x25519.Identity.from_str(identity)]
    backup = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path), recipients=[recipient],
                            sensitivity=Sensitivity.SECRET, identities=keys)
    assert all(a.encrypted and a.sensitivity == Sensitivity.SECRET and not a.digest for a in backup.artifacts)
    stored = harness.stored_bytes()
    assert CANARY not in stored and b"echo hi" not in stored

    secret = [a for a in backup.artifacts if a.identity == "cfg/secret.key"]
    dest = tmp_path / "out"
    [denied] = harness.restore(FilesExporter, opts(tree), secret, to=str(dest))
    assert denied.status == OutcomeStatus.FAILED and "identity" in denied.reason
    assert not dest.exists()  # no file, no temporary, not the directories made for it (all or nothing)

    outcomes = harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(dest), identities=keys)
    assert set(statuses(outcomes).values()) == {OutcomeStatus.RESTORED}, outcomes
    assert snapshot_of(str(dest / "cfg")) == snapshot_of(tree)
    again = harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(dest), identities=keys)
    assert set(statuses(again).values()) == {OutcomeStatus.UNCHANGED}


def crafted(harness, tmp_path, identities: dict[str, str]):
    """Catalog artifacts with hostile identities, written through a real sink."""
    writer = SnapshotWriter(harness.repo, [])
    sink = writer.source("src", "files", [])
    for identity, kind in identities.items():
        meta = {"mode": "0644", "mtime_ns": T0}
        if kind == "symlink":
            meta["target"] = "/etc/passwd"
        sink.write(kind, identity, b"pwned" if kind == "file" else b"", meta=meta)
    snapshot = writer.finish("plan", [sink.commit()])
    writer.close()
    return list(read_catalog(harness.repo, snapshot.catalog))


def test_traversal_is_refused_and_nothing_leaves_the_destination(harness, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    os.symlink(str(outside), dest / "escape")
    artifacts = crafted(harness, tmp_path, {
        "../evil": "file", "/etc/x": "file", "a/../../b": "file", "escape/payload": "file",
        "escape/sub/deeper": "file", "escape/link": "symlink", "escape/dir": "directory", "./x": "file"})

    for overwrite in (False, True):
        outcomes = harness.restore(FilesExporter, opts("x"), artifacts, to=str(dest), overwrite=overwrite)
        assert len(outcomes) == len(artifacts)
        for outcome in outcomes:
            assert outcome.status == OutcomeStatus.FAILED and outcome.reason.startswith("refused"), outcome
    assert os.listdir(outside) == []
    assert sorted(os.listdir(dest)) == ["escape"] and os.path.islink(dest / "escape")
    assert not (tmp_path / "evil").exists() and not (tmp_path / "b").exists()
    assert not os.path.exists("/etc/x")


def test_a_symlink_in_the_way_is_replaced_never_written_through(harness, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    os.symlink(str(outside / "target"), dest / "name")
    artifacts = crafted(harness, tmp_path, {"name": "file"})
    [conflict] = harness.restore(FilesExporter, opts("x"), artifacts, to=str(dest))
    assert conflict.status == OutcomeStatus.CONFLICT and conflict.reason
    [done] = harness.restore(FilesExporter, opts("x"), artifacts, to=str(dest), overwrite=True)
    assert done.status == OutcomeStatus.RESTORED
    assert os.listdir(outside) == [] and not os.path.islink(dest / "name")
    assert (dest / "name").read_bytes() == b"pwned"


def test_conflict_overwrite_and_dry_run(harness, tree, tmp_path):
    backup = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path))
    dest = tmp_path / "out"
    planned = harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(dest), dry_run=True)
    assert set(statuses(planned).values()) == {OutcomeStatus.PLANNED} and not dest.exists()

    harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(dest))
    (dest / "cfg" / "run.sh").write_bytes(b"edited locally\n")
    result = statuses(harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(dest)))
    assert result.pop("cfg/run.sh") == OutcomeStatus.CONFLICT
    assert (dest / "cfg" / "run.sh").read_bytes() == b"edited locally\n"
    assert set(result.values()) == {OutcomeStatus.UNCHANGED}

    dry = statuses(harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(dest),
                                   dry_run=True, overwrite=True))
    assert dry["cfg/run.sh"] == OutcomeStatus.PLANNED
    assert (dest / "cfg" / "run.sh").read_bytes() == b"edited locally\n"
    fixed = statuses(harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(dest), overwrite=True))
    assert fixed["cfg/run.sh"] == OutcomeStatus.RESTORED
    assert snapshot_of(str(dest / "cfg")) == snapshot_of(tree)


def test_restore_needs_a_destination(harness, tree, tmp_path):
    backup = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path))
    outcomes = harness.restore(FilesExporter, opts(tree), backup.artifacts)
    assert len(outcomes) == len(backup.artifacts)
    assert all(o.status == OutcomeStatus.FAILED and "--to" in o.reason for o in outcomes)


def test_vanished_file_is_a_finding_and_the_walk_goes_on(harness, tree, tmp_path):
    victim = os.path.join(tree, "run.sh")

    class DeletingSink:
        """Deletes a file after the walk saw it, before the sink opens it."""

        def __init__(self, sink):
            self.sink, self.source = sink, sink.source

        def write(self, kind, identity, content, **kwargs):
            if identity == "cfg/run.sh":
                os.unlink(victim)
            if identity == "cfg/a/b/deep.yaml":  # swapped for a FIFO: must not block the backup
                os.unlink(os.path.join(tree, "a", "b", "deep.yaml"))
                os.mkfifo(os.path.join(tree, "a", "b", "deep.yaml"))
            return self.sink.write(kind, identity, content, **kwargs)

    backup = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path), wrap_sink=DeletingSink)
    found = backup.by_identity()
    assert "cfg/run.sh" not in found and "cfg/a/b/deep.yaml" not in found and "cfg/secret.key" in found
    assert sorted((f["code"], f["identity"]) for f in backup.findings) == [
        ("files-vanished", "cfg/a/b/deep.yaml"), ("files-vanished", "cfg/run.sh")]


def test_damaged_blob_fails_and_leaves_nothing_half_written(harness, tree, tmp_path):
    backup = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path))
    big = backup.by_identity()["cfg/big.bin"]
    with open(harness.blob_path(big.chunks[1]), "r+b") as handle:
        handle.write(b"X")
    dest = tmp_path / "out"
    result = {o.item: o for o in harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(dest))}
    assert result["cfg/big.bin"].status == OutcomeStatus.FAILED
    assert "IntegrityError" in result["cfg/big.bin"].reason
    # all or nothing: the intact files were written under staging names, never renamed into place
    assert result["cfg/run.sh"].status == OutcomeStatus.FAILED and "cfg/big.bin" in result["cfg/run.sh"].reason
    assert not dest.exists()  # nor the destination the restore created


def test_destination_that_is_a_file_fails_every_item(harness, tree, tmp_path):
    backup = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path))
    (tmp_path / "plain").write_bytes(b"")
    outcomes = harness.restore(FilesExporter, opts(tree), backup.artifacts, to=str(tmp_path / "plain"))
    assert all(o.status == OutcomeStatus.FAILED and "not a directory" in o.reason for o in outcomes)


def test_unreadable_file_is_a_finding(harness, tree, tmp_path, monkeypatch):
    os.chmod(os.path.join(tree, "secret.key"), 0)
    if os.geteuid() == 0:  # root reads any mode: make the open fail as it would for anyone else
        real_open = os.open

        def refusing_open(path, *args, **kwargs):
            if str(path).endswith("secret.key"):
                raise PermissionError(13, "Permission denied")
            return real_open(path, *args, **kwargs)
        monkeypatch.setattr(os, "open", refusing_open)
    backup = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path))
    assert "cfg/secret.key" not in backup.by_identity()
    assert [f["code"] for f in backup.findings] == ["files-unreadable"]


def test_missing_path_is_an_error_finding(harness, tree, tmp_path):
    backup = harness.backup(FilesExporter, opts(tree, "src/nope"), base_dir=str(tmp_path))
    assert [f["code"] for f in backup.findings] == ["files-path-missing"]
    assert "cfg/run.sh" in backup.by_identity()


def test_exclude_and_single_file_paths(harness, tree, tmp_path):
    put(tmp_path / "src" / "settings.env", b"A=1\n")
    backup = harness.backup(FilesExporter, opts("src/cfg", "src/settings.env", exclude=["*.bin", "a/b"]),
                            base_dir=str(tmp_path))
    found = backup.by_identity()
    assert "cfg/big.bin" not in found and "cfg/a/b" not in found and "cfg/a/b/deep.yaml" not in found
    assert "cfg/a" in found and found["settings.env"].kind == "file"


def test_discover_lists_without_reading(tree, tmp_path):
    context = ExportContext("src", FilesExporter.Options(**opts(tree)), str(tmp_path))
    found = {d.identity: d for d in FilesExporter(context).discover()}
    assert found["cfg/big.bin"].kind == "file" and found["cfg/link"].kind == "symlink"
    assert found["cfg/empty"].kind == "directory"


@pytest.mark.parametrize("bad", [
    {"paths": []},
    {"paths": ["/data/config", "/etc/config"]},
    {"paths": ["/"]},
    {"paths": ["a/.."]},
    {"paths": ["x"], "follow_symlinks": True},
])
def test_options_rejected(bad):
    with pytest.raises(ValidationError):
        FilesExporter.Options(**bad)


def test_setuid_setgid_and_sticky_bits_are_stripped_unless_kept(harness, tmp_path):
    """A catalog can be forged by anyone who can write to the store: mode 6755 must not come back
    as a setuid root binary unless the operator asks (issue 16, item 7)."""
    root = tmp_path / "src" / "bin"
    put(root / "tool", b"#!/bin/sh\n", 0o6755)
    os.chmod(root, 0o1777)
    backup = harness.backup(FilesExporter, opts("src/bin"), base_dir=str(tmp_path))
    assert backup.by_identity()["bin/tool"].meta["mode"] == "6755"

    dest = tmp_path / "out"
    outcomes = {o.item: o for o in harness.restore(FilesExporter, opts("src/bin"), backup.artifacts, to=str(dest))}
    assert stat.S_IMODE(os.stat(dest / "bin" / "tool").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(dest / "bin").st_mode) == 0o777
    assert "setuid/setgid bits of mode 6755 stripped (mode 0755; --keep-special-bits" in outcomes["bin/tool"].reason
    assert "sticky bits of mode 1777 stripped" in outcomes["bin"].reason
    again = harness.restore(FilesExporter, opts("src/bin"), backup.artifacts, to=str(dest))
    assert set(statuses(again).values()) == {OutcomeStatus.UNCHANGED}, again

    kept = tmp_path / "kept"
    outcomes = harness.restore(FilesExporter, opts("src/bin"), backup.artifacts, to=str(kept),
                               remap={"keep-special-bits": "true"})
    assert set(statuses(outcomes).values()) == {OutcomeStatus.RESTORED}
    assert not any("stripped" in o.reason for o in outcomes)
    assert stat.S_IMODE(os.stat(kept / "bin" / "tool").st_mode) == 0o6755
    assert stat.S_IMODE(os.stat(kept / "bin").st_mode) == 0o1777


def test_names_of_a_secret_source_are_sealed_and_restored_exactly(harness, tree, tmp_path):
    """Secret-class sources encrypt names and symlink targets too (format.md 8.1): the catalog
    holds keyed digests; the identity gives back every path and link target as they were."""
    identity, recipient = encryption.generate_identity()
    backup = harness.backup(FilesExporter, opts(tree), base_dir=str(tmp_path), recipients=[recipient],
                            sensitivity=Sensitivity.SECRET)
    text = gzip.decompress(harness.repo.read_blob(backup.snapshot.catalog))
    assert b"secret.key" not in text and b"deep.yaml" not in text and CANARY not in text
    assert all(a.identity.startswith("hmac-sha256:") for a in backup.artifacts)
    opened = names.require_open(backup.artifacts, [pyrage.x25519.Identity.from_str(identity)])
    assert {"cfg/secret.key", "cfg/a/b/deep.yaml"} <= {a.identity for a in opened}
    assert sorted(a.meta["target"] for a in opened if a.kind == "symlink") == ["/etc/hostname", "a/b/deep.yaml"]
