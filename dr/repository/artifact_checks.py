"""Checking artifacts as a restore reads them: size and whole digest, not only each blob.

Where it sits: dr.repository.checking (`dr verify`) hands every catalog entry to ArtifactChecks.
A catalog entry can lie about its content while every blob is intact (an artifact reassembled
from other blobs, a size or digest edited): the reader (dr.repository.reading) refuses it at
restore time, so verify must refuse it first. Entries with the same content (the same digest,
size and chunks; most snapshots reuse most artifacts) are checked once.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from dr.model.artifacts import Artifact
from dr.repository import names
from dr.repository.encryption import EncryptionError
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import IntegrityError, Repository

_Key = tuple[str, int, tuple[str, ...], bool]


class ArtifactChecks:
    def __init__(self, stored: dict[str, int]):
        self._stored = stored
        self._seen: dict[_Key, str] = {}  # content -> "snapshot source/identity", the first that had it

    def add(self, snapshot: str, artifact: Artifact) -> None:
        key = (artifact.digest, artifact.size, tuple(artifact.chunks), artifact.encrypted)
        self._seen.setdefault(key, f"snapshot {snapshot}: {names.shown(artifact)}")

    def listed_problems(self) -> list[str]:
        """What the blob listing alone shows: sizes, and one-chunk digests, of plain artifacts."""
        problems = []
        for (digest, size, chunks, encrypted), name in self._seen.items():
            if encrypted or any(c not in self._stored for c in chunks):
                continue  # secret sizes need decryption; a missing blob is reported already
            listed = sum(self._stored[c] for c in chunks)
            if listed != size:
                problems.append(f"{name}: its blobs hold {listed} bytes, catalog says {size}")
            elif len(chunks) == 1 and digest and digest != chunks[0]:
                problems.append(f"{name}: content does not match its digest (its one blob is {chunks[0][:12]})")
        return problems

    def read_all(self, repo: Repository, identities: list, report, on_blob: Callable[[int], None],
                 workers: int, holds: Callable[[str], bool] = lambda digest: True) -> set[str]:
        """Stream every distinct artifact that the listing cannot vouch for (of those whose digest
        `holds`: a --read-data-subset); return the blobs read."""
        todo = [(key, name) for key, name in self._seen.items()
                if self._needs_reading(key, identities) and _in_part(key, holds)]
        skipped = sum(1 for key in self._seen if key[3] and not identities)
        if skipped:
            report.notes.append(f"{skipped} secret artifacts were checked blob by blob only: give an identity "
                                "(--identity) to decrypt them and check their sizes as a restore would")
        reader = ArtifactReader(repo, identities)
        read: set[str] = set()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for (key, name), (size, problem) in zip(todo, pool.map(lambda t: _stream(reader, t[0]), todo)):
                read.update(key[2])
                report.bytes_read += size
                report.blobs_checked += len(key[2])
                on_blob(size)
                if problem:
                    report.problems.append(f"{name}: {problem}")
        return read

    def _needs_reading(self, key: _Key, identities: list) -> bool:
        digest, size, chunks, encrypted = key
        if any(c not in self._stored for c in chunks):
            return False
        return bool(identities) if encrypted else len(chunks) > 1


def _in_part(key: _Key, holds: Callable[[str], bool]) -> bool:
    """An artifact's part is its digest's, or its first chunk's when the entry records no digest."""
    named = key[0] or next(iter(key[2]), "")
    return holds(named) if named else True


def _stream(reader: ArtifactReader, key: _Key) -> tuple[int, str]:
    """(bytes read, problem or '') for one artifact, read as a restore reads it."""
    digest, size, chunks, encrypted = key
    artifact = Artifact("verify", "", "", "-", size, None, list(chunks), digest, encrypted)
    total = 0
    try:
        with reader.open(artifact) as stream:  # the reader checks every blob, the size and the digest
            while piece := stream.read(1 << 20):
                total += len(piece)
    except (IntegrityError, EncryptionError) as exc:
        return total, str(exc).replace("verify/-: ", "")
    return total, ""
