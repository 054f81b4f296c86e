"""`dr verify` checks artifacts as a restore reads them, not only blobs (issue 16, item 2).

A catalog entry can lie about its content while every blob it names is intact: chunks
reordered, a size or a digest edited. The reader refuses such an entry at restore time, so
verify must refuse it first. Real repository on disk; the forged catalogs are written with
dr's own catalog builder, as an attacker with write access to the store could.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import pytest

from dr.model.artifacts import Sensitivity
from dr.model.snapshots import Snapshot, SourceResult
from dr.repository import checking, names
from dr.repository.catalogs import CatalogBuilder, read_catalog
from dr.repository.encryption import generate_identity, load_identities
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import IntegrityError, Repository
from dr.repository.stores.local import LocalStore
from dr.repository.writing import SnapshotWriter

PLAIN = bytes((i * 7 + i // 256) % 256 for i in range(3072))  # three different 1 KiB chunks
SECRET = b"s3cr3t-" * 300


@pytest.fixture
def repo(tmp_path):
    identity, recipient = generate_identity()
    (tmp_path / "identity.txt").write_text(identity + "\n")
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    repo.init()
    writer = SnapshotWriter(repo, [recipient], chunk_size=1024)
    sink = writer.source("data", "files")
    sink.write("file", "big.bin", PLAIN)
    sink.write("file", "small.txt", b"hello")
    sink.write("file", "key.pem", SECRET, sensitivity=Sensitivity.SECRET)
    writer.finish("plan", [sink.commit()])
    writer.close()
    repo.identities = load_identities(str(tmp_path / "identity.txt"))
    return repo


def _forge(repo: Repository, identity: str, **changes) -> Snapshot:
    """A new snapshot whose catalog repeats the first one's, with one entry changed."""
    [first] = repo.snapshots()
    builder = CatalogBuilder()
    for artifact in read_catalog(repo, first.catalog):
        builder.add(dataclasses.replace(artifact, **changes) if _is(repo, artifact, identity) else artifact)
    catalog = repo.put_blob(builder.finish())
    snapshot = Snapshot(plan="plan", time=datetime.now(timezone.utc), hostname="forger", catalog=catalog,
                        catalog_entries=builder.entries, sources=[SourceResult("data", "files", 3, 0)])
    repo.write_snapshot(snapshot)
    return repo.load_snapshot(snapshot.id)


def _is(repo, artifact, identity) -> bool:
    """Whether the stored `artifact` is named `identity`, its sealed name opened (format.md 8.1)."""
    return names.unseal(artifact, repo.identities).identity == identity


def _artifact(repo, snapshot, identity):
    return next(a for a in read_catalog(repo, snapshot.catalog) if _is(repo, a, identity))


def test_an_honest_repository_verifies_clean_with_and_without_data(repo):
    assert checking.verify(repo).ok
    report = checking.verify(repo, read_data=True, identities=repo.identities)
    assert report.ok and report.notes == []


@pytest.mark.parametrize("identity, change, needs_data", [
    ("big.bin", "reordered chunks", True),        # every blob intact, the whole digest wrong
    ("big.bin", "size", False),                    # the listing already tells: blob sizes do not add up
    ("small.txt", "digest", False),                # one chunk: its digest must be the blob's
    ("big.bin", "digest", True),                   # several chunks: only reading tells
    ("key.pem", "size", True),                     # secret: only decrypting tells
])
def test_a_lying_catalog_entry_is_refused_by_verify_as_by_restore(repo, identity, change, needs_data):
    original = _artifact(repo, repo.snapshots()[0], identity)
    changes = {"reordered chunks": {"chunks": list(reversed(original.chunks))},
               "size": {"size": original.size + 400},
               "digest": {"digest": "0" * 64}}[change]
    forged = _forge(repo, identity, **changes)
    with pytest.raises(IntegrityError):  # what the restore does with it
        ArtifactReader(repo, repo.identities).read(_artifact(repo, forged, identity))
    quick = checking.verify(repo, forged.id)
    assert quick.ok == needs_data, quick.problems
    report = checking.verify(repo, forged.id, read_data=True, identities=repo.identities)
    assert not report.ok
    assert any(original.identity in p for p in report.problems), report.problems  # a secret's keyed name (8.1)


def test_without_an_identity_secret_artifacts_are_checked_blob_by_blob_and_verify_says_so(repo):
    forged = _forge(repo, "key.pem", size=10)
    report = checking.verify(repo, forged.id, read_data=True)
    assert report.ok  # the blobs are intact; the lie is in the plaintext size
    assert report.notes and "--identity" in report.notes[0]


def test_blobs_of_multi_chunk_artifacts_are_read_once(repo):
    report = checking.verify(repo, read_data=True, identities=repo.identities)
    blobs = {d for a in read_catalog(repo, repo.snapshots()[0].catalog) for d in a.chunks}
    catalog = 1
    assert report.blobs_checked == len(blobs) + catalog
