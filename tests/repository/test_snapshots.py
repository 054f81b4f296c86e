"""Repository behaviour on a real local store: dedup, reuse, verification, prune."""

from __future__ import annotations

import json
import os

import pyrage
import pytest

from dr.model.artifacts import Sensitivity
from dr.repository import checking, layout, pruning
from dr.repository.catalogs import CatalogBuilder, read_catalog, read_catalog_records
from dr.repository.encryption import generate_identity
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import IntegrityError, Repository, RepositoryError
from dr.repository.stores.counting import CountingStore
from dr.repository.stores.local import LocalStore
from dr.repository.writing import SnapshotWriter


def _backup(repo: Repository, files: dict[str, bytes], parent=(), chunk_size=1 << 20):
    writer = SnapshotWriter(repo, [], chunk_size=chunk_size)
    sink = writer.source("src", "files", parent)
    for name, data in files.items():
        sink.write("file", name, data, change_token=layout.sha256(data)[:16])
    snapshot = writer.finish("plan", [sink.commit()])
    writer.close()
    return snapshot, writer.stats


@pytest.fixture
def repo(tmp_path):
    repository = Repository(CountingStore(LocalStore(str(tmp_path / "repo"))))
    repository.init()
    return repository


def test_unchanged_second_backup_uploads_only_the_manifest(repo):
    files = {f"f{i}": os.urandom(3000) for i in range(20)}
    first, stats1 = _backup(repo, files)
    assert stats1["bytes_uploaded"] >= 60000
    store = repo.store
    puts_before, bytes_before = store.puts, store.bytes_put
    parent = list(read_catalog(repo, first.catalog))
    second, stats2 = _backup(repo, files, parent)
    assert stats2["artifacts_reused"] == 20
    assert stats2["bytes_read"] == 0
    # The catalog is identical, so it deduplicates too: only the new manifest is written.
    new_keys = store.puts - puts_before
    assert new_keys == 1, f"expected only the manifest, got {new_keys} puts"
    assert store.bytes_put - bytes_before < 2000
    assert second.id != first.id
    assert second.catalog == first.catalog


def test_same_content_twice_is_stored_once(repo):
    data = os.urandom(5000)
    snapshot, stats = _backup(repo, {"a": data, "b": data})
    assert stats["blobs_uploaded"] == 2  # one chunk + the catalog
    arts = list(read_catalog(repo, snapshot.catalog))
    assert arts[0].chunks == arts[1].chunks


def test_multi_chunk_content_round_trips(repo):
    data = os.urandom(2_500_000)
    snapshot, _ = _backup(repo, {"big": data}, chunk_size=1 << 20)
    [art] = list(read_catalog(repo, snapshot.catalog))
    assert len(art.chunks) == 3
    assert ArtifactReader(repo).read(art) == data


def test_a_flipped_byte_is_refused_on_read_and_found_by_verify(repo, tmp_path):
    snapshot, _ = _backup(repo, {"a": b"hello world" * 100})
    [art] = list(read_catalog(repo, snapshot.catalog))
    path = tmp_path / "repo" / layout.blob_key(art.chunks[0])
    raw = bytearray(path.read_bytes())
    raw[5] ^= 0x01
    os.chmod(path, 0o644)
    path.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError):
        ArtifactReader(repo).read(art)
    assert checking.check(repo).ok  # presence only: the blob is there
    report = checking.check(repo, read_data=True)
    assert not report.ok and art.chunks[0] in report.problems[0]


def test_verify_reports_a_missing_blob(repo, tmp_path):
    snapshot, _ = _backup(repo, {"a": b"x" * 10})
    [art] = list(read_catalog(repo, snapshot.catalog))
    os.unlink(tmp_path / "repo" / layout.blob_key(art.chunks[0]))
    report = checking.check(repo)
    assert not report.ok and "missing" in report.problems[0]


def test_a_tampered_manifest_is_refused(repo, tmp_path):
    snapshot, _ = _backup(repo, {"a": b"x"})
    path = tmp_path / "repo" / layout.snapshot_key(snapshot.id)
    path.write_bytes(path.read_bytes().replace(b'"plan"', b'"plam"'))
    with pytest.raises(IntegrityError):
        repo.load_snapshot(snapshot.id)


def test_prune_keeps_what_snapshots_reference_and_reclaims_the_rest(repo):
    first, _ = _backup(repo, {"old": b"old content", "shared": b"shared content"})
    second, _ = _backup(repo, {"new": b"new content", "shared": b"shared content"})
    orphan = repo.put_blob(b"left by a crashed backup")
    report = pruning.prune(repo, [first.id])
    assert report.forgotten == [first.id]
    remaining = {d for d, _ in repo.list_blobs()}
    assert orphan not in remaining
    for art in read_catalog(repo, second.catalog):
        assert set(art.chunks) <= remaining
        assert ArtifactReader(repo).read(art)
    assert layout.sha256(b"old content") not in remaining
    assert checking.check(repo, read_data=True).ok


def test_prune_dry_run_deletes_nothing(repo):
    first, _ = _backup(repo, {"old": b"old"})
    _backup(repo, {"new": b"new"})
    before = set(repo.list_blobs())
    report = pruning.prune(repo, [first.id], dry_run=True)
    assert report.blobs_deleted == 2  # the old chunk and the old catalog
    assert set(repo.list_blobs()) == before
    assert first.id in repo.snapshot_ids()


def test_find_snapshot_by_prefix_and_latest(repo):
    first, _ = _backup(repo, {"a": b"1"})
    second, _ = _backup(repo, {"a": b"2"})
    assert repo.find_snapshot("latest").id == second.id
    assert repo.find_snapshot(first.id[:10]).id == first.id
    with pytest.raises(RepositoryError):
        repo.find_snapshot("zzzz")


def test_secret_chunks_without_recipients_are_refused(repo):
    writer = SnapshotWriter(repo, [])
    sink = writer.source("src", "files")
    with pytest.raises(Exception, match="refusing to store it unencrypted"):
        sink.write("file", "secret", b"password", sensitivity=Sensitivity.SECRET)
    writer.close()


def test_an_unknown_format_version_is_refused(tmp_path):
    store = LocalStore(str(tmp_path / "r"))
    store.put("config", b'{"format": "dr-repository", "version": 99, "id": "x"}')
    with pytest.raises(RepositoryError, match="version 99"):
        Repository(store).open()


class _Trickle:
    """A stream that returns at most 7 bytes per read, as a pipe or socket may."""

    def __init__(self, data: bytes):
        self._data = data

    def read(self, n: int = -1) -> bytes:
        piece, self._data = self._data[:min(n, 7)], self._data[min(n, 7):]
        return piece

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_short_reads_are_not_mistaken_for_the_end(repo):
    data = os.urandom(5000)
    writer = SnapshotWriter(repo, [], chunk_size=1024)
    sink = writer.source("src", "files")
    art = sink.write("file", "trickle", lambda: _Trickle(data))
    writer.finish("plan", [sink.commit()])
    writer.close()
    assert art.size == 5000 and len(art.chunks) == 5
    assert ArtifactReader(repo).read(art) == data


def test_secret_content_is_encrypted_again_after_the_recipients_change(repo):
    """Reuse keeps unchanged secret chunks only while they are encrypted to today's recipients:
    after a rotation, the next backup reads the content again, so no new snapshot depends on
    the old key (docs/format.md section 11)."""
    (old_id, old_r), (new_id, new_r) = generate_identity(), generate_identity()

    def backup(recipients, parent=()):
        writer = SnapshotWriter(repo, recipients)
        sink = writer.source("vault", "files", parent)
        sink.write("file", "unseal-keys", b"k1 k2 k3", sensitivity=Sensitivity.SECRET, change_token="t1")
        snapshot = writer.finish("plan", [sink.commit()])
        writer.close()
        return list(read_catalog(repo, snapshot.catalog)), writer.stats

    first, _ = backup([old_r])
    same, stats = backup([old_r], first)
    assert stats["artifacts_reused"] == 1 and stats["bytes_read"] == 0 and same[0].chunks == first[0].chunks
    rotated, stats = backup([new_r], same)
    assert stats["artifacts_reused"] == 0 and stats["bytes_read"] == len(b"k1 k2 k3")
    assert rotated[0].meta["recipients"] != first[0].meta["recipients"]
    assert ArtifactReader(repo, [pyrage.x25519.Identity.from_str(new_id)]).read(rotated[0]) == b"k1 k2 k3"
    with pytest.raises(Exception, match="recipient"):
        ArtifactReader(repo, [pyrage.x25519.Identity.from_str(old_id)]).read(rotated[0])
    again, stats = backup([new_r], rotated)
    assert stats["artifacts_reused"] == 1 and again[0].chunks == rotated[0].chunks


def test_prune_clears_what_a_crashed_writer_staged_even_through_a_wrapped_store(repo, tmp_path):
    """A put killed between writing its staging file and linking it leaves a file under tmp/,
    never an object. Prune removes it, also when the local store is wrapped (the fixture
    counts requests), and a dry run removes nothing."""
    snapshot, _ = _backup(repo, {"kept": b"kept content"})
    staging = tmp_path / "repo" / "tmp"
    (staging / "blobs-ab-crashed.part").write_bytes(b"half of a blob")
    assert pruning.prune(repo, [], dry_run=True).staging_removed == 0 and len(list(staging.iterdir())) == 1
    assert pruning.prune(repo, []).staging_removed == 1
    assert list(staging.iterdir()) == []
    assert [a.identity for a in read_catalog(repo, repo.load_snapshot(snapshot.id).catalog)] == ["kept"]


GOOD_LINE = {"source": "s", "exporter": "files", "kind": "file", "identity": "a", "size": 1,
             "sensitivity": "internal", "dependencies": [{"kind": "image", "reference": "r:1"}]}


def _catalog(repo: Repository, lines: list[dict]) -> str:
    builder = CatalogBuilder()
    builder.add_lines(json.dumps(line).encode() + b"\n" for line in lines)
    return repo.put_blob(builder.finish())


def test_catalog_records_are_the_lines_read_catalog_builds_artifacts_from(repo):
    snapshot, _ = _backup(repo, {"a": b"x", "b": b"y"})
    records = list(read_catalog_records(repo, snapshot.catalog))
    assert records == [a.to_json() for a in read_catalog(repo, snapshot.catalog)]


@pytest.mark.parametrize("change", [
    {"size": None}, {"size": "many"}, {"sensitivity": "top"}, {"sensitivity": ["secret"]},
    {"identity": None}, {"dependencies": [{"kind": "image"}]},
])
def test_catalog_records_refuse_what_read_catalog_refuses(repo, change):
    line = {k: v for k, v in {**GOOD_LINE, **change}.items() if v is not None}
    digest = _catalog(repo, [GOOD_LINE, line])
    with pytest.raises(IntegrityError) as built:
        list(read_catalog(repo, digest))
    with pytest.raises(IntegrityError) as records:
        list(read_catalog_records(repo, digest))
    assert str(records.value) == str(built.value)


class _PruneBetweenListAndRead(LocalStore):
    """A local store on which a prune forgets `gone` right after a reader listed the snapshots:
    the interleaving a reader without the lock (`dr snapshots`, `dr audit`) can meet."""

    gone: str = ""

    def list(self, prefix: str):
        listed = list(super().list(prefix))
        if prefix == layout.SNAPSHOTS and self.gone:
            self.delete(layout.snapshot_key(self.gone))
        return iter(listed)


def test_a_manifest_forgotten_between_listing_and_reading_is_no_snapshot_and_no_damage(tmp_path):
    store = _PruneBetweenListAndRead(str(tmp_path / "repo"))
    repository = Repository(store)
    repository.init()
    first, _ = _backup(repository, {"a": b"one"})
    second, _ = _backup(repository, {"a": b"two"})
    store.gone = first.id
    intact, damaged = repository.intact_snapshots()
    assert [s.id for s in intact] == [second.id] and damaged == {}
    store.gone = second.id
    assert repository.snapshots() == []  # a reader that must see all or none sees what is there


def test_a_small_file_backup_fsyncs_its_blobs_together_at_the_end_and_an_unfinished_one_leaves_no_blob(
        tmp_path, monkeypatch):
    """Small blobs go into the local store's batch: written without an fsync, then fsynced all
    together (16 at once) and linked into place before the catalog, instead of an fsync, a link
    and a directory fsync one blob after another (~1 ms a blob on ext4). os.fsync is counted,
    not replaced: the writes are real."""
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    repository = Repository(LocalStore(str(tmp_path / "repo")))
    repository.init()
    files = {f"f{i}": os.urandom(500 + i) for i in range(300)}
    writer = SnapshotWriter(repository, [])
    sink = writer.source("src", "files")
    for name, data in files.items():
        sink.write("file", name, data, change_token=layout.sha256(data)[:16])
    result = sink.commit()
    synced.clear()  # the repository's config and this run's lock are written before
    assert writer.stats["blobs_uploaded"] == 300 and not list(repository.list_blobs())  # staged, not visible
    snapshot = writer.finish("plan", [result])
    writer.close()
    folders = {os.path.dirname(layout.blob_key(d)) for d in [layout.sha256(v) for v in files.values()]}
    # each staged file once, each blob folder once, the catalog (staged too) and the manifest
    assert len(synced) <= len(files) + len(folders) + 6, (len(synced), len(files), len(folders))
    assert len(list(repository.list_blobs())) == 301
    reader = ArtifactReader(repository, [])
    assert {a.identity: reader.read(a) for a in read_catalog(repository, snapshot.catalog)} == files
    writer = SnapshotWriter(repository, [])  # a backup that fails before finishing
    sink = writer.source("src", "files")
    sink.write("file", "new", b"never committed")
    sink.commit()
    writer.close()
    blobs = {d for d, _ in repository.list_blobs()}
    assert layout.sha256(b"never committed") not in blobs
    assert os.listdir(tmp_path / "repo" / "tmp") == []
