"""Writing a snapshot: chunk, encrypt if secret, deduplicate, upload, then catalog, then manifest.

This is the write ordering of docs/format.md made code:
  1. blobs (in parallel, bounded), 2. the catalog blob, once every upload finished,
  3. the manifest, last. A crash anywhere before 3 leaves no snapshot, only unreferenced
  blobs that prune reclaims.
Exporters never see this class; they see it through the ArtifactSink contract.
"""

from __future__ import annotations

import hashlib
import io
import json
import socket
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from typing import BinaryIO, Callable, Iterable, Union

from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.snapshots import Snapshot, SourceResult
from dr.repository import encryption, layout
from dr.repository.catalogs import CatalogBuilder
from dr.repository.repositories import Repository
from dr.repository.stores.base import ObjectExists

CHUNK_SIZE = 8 << 20  # bounded memory per in-flight upload; large enough for few requests
Content = Union[bytes, Callable[[], BinaryIO]]


class SnapshotWriter:
    def __init__(self, repo: Repository, recipients: list[str], *, workers: int = 16,
                 chunk_size: int = CHUNK_SIZE, on_progress: Callable[[int], None] | None = None):
        self.repo = repo
        self.recipients = encryption.parse_recipients(recipients) if recipients else []
        self.chunk_size = chunk_size
        self.on_progress = on_progress or (lambda n: None)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="upload")
        self._in_flight = threading.BoundedSemaphore(workers * 2)
        self._lock = threading.Lock()
        self._known: set[str] | None = None
        self._futures: list[Future] = []
        self._catalog = CatalogBuilder()
        self.stats = {"bytes_read": 0, "bytes_uploaded": 0, "blobs_uploaded": 0,
                      "artifacts": 0, "artifacts_reused": 0}

    # -- the blob set ---------------------------------------------------------------------
    def _known_blobs(self) -> set[str]:
        if self._known is None:
            self._known = {digest for digest, _ in self.repo.list_blobs()}
        return self._known

    def _claim(self, digest: str) -> bool:
        """True if this writer must upload `digest` (not stored, not already scheduled)."""
        with self._lock:
            known = self._known_blobs()
            if digest in known:
                return False
            known.add(digest)
            return True

    def _upload(self, data: bytes) -> str:
        digest = layout.sha256(data)
        if self._claim(digest):
            self._raise_failed_upload()
            self._in_flight.acquire()
            future = self._pool.submit(self._put, digest, data)
            future.add_done_callback(lambda _: self._in_flight.release())
            self._futures.append(future)
        return digest

    def _put(self, digest: str, data: bytes) -> None:
        try:
            self.repo.store.put(layout.blob_key(digest), data)
        except ObjectExists:
            return  # another writer stored the same content first: same name, same bytes
        with self._lock:
            self.stats["bytes_uploaded"] += len(data)
            self.stats["blobs_uploaded"] += 1

    def _raise_failed_upload(self) -> None:
        for future in [f for f in self._futures if f.done()]:
            future.result()
            self._futures.remove(future)

    def has_blobs(self, digests: Iterable[str]) -> bool:
        known = self._known_blobs()
        return all(d in known for d in digests)

    # -- artifacts ------------------------------------------------------------------------
    def store_content(self, content: Content, sensitivity: Sensitivity) -> tuple[list[str], str, int]:
        """Chunk and upload content; return (chunk digests, plaintext digest or '', size)."""
        secret = sensitivity == Sensitivity.SECRET
        whole = hashlib.sha256()
        chunks: list[str] = []
        size = 0
        stream = io.BytesIO(content) if isinstance(content, bytes) else content()
        with stream:
            while True:
                piece = stream.read(self.chunk_size)
                if not piece and chunks:
                    break
                size += len(piece)
                whole.update(piece)
                self.on_progress(len(piece))
                stored = encryption.encrypt(piece, self.recipients) if secret else piece
                chunks.append(self._upload(stored))
                if not piece or len(piece) < self.chunk_size:
                    break
        with self._lock:
            self.stats["bytes_read"] += size
        return chunks, ("" if secret else whole.hexdigest()), size

    def source(self, name: str, exporter: str, parent: Iterable[Artifact] = ()) -> "SourceSink":
        return SourceSink(self, name, exporter, parent)

    def _commit_source(self, lines: tempfile.SpooledTemporaryFile, count: int) -> None:
        lines.seek(0)
        self._catalog.add_lines(iter(lines.readline, b""))
        self.stats["artifacts"] += count

    # -- finishing ------------------------------------------------------------------------
    def wait_uploads(self) -> None:
        for future in self._futures:
            future.result()
        self._futures.clear()

    def finish(self, plan: str, sources: list[SourceResult], tags: list[str] = ()) -> Snapshot:
        """Wait for every upload, write the catalog, then the manifest (last)."""
        self.wait_uploads()
        entries = self._catalog.entries
        catalog = self._upload(self._catalog.finish())
        self.wait_uploads()
        snapshot = Snapshot(plan=plan, time=datetime.now(timezone.utc), hostname=socket.gethostname(),
                            catalog=catalog, catalog_entries=entries, sources=sources,
                            stats=dict(self.stats), tags=list(tags))
        self.repo.write_snapshot(snapshot)
        return snapshot

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class SourceSink:
    """The ArtifactSink one source writes into (see dr.exporters.contract.ArtifactSink)."""

    def __init__(self, writer: SnapshotWriter, source: str, exporter: str, parent: Iterable[Artifact]):
        self._writer = writer
        self.source = source
        self.exporter = exporter
        self._parent = {(a.kind, a.identity): a for a in parent}
        self._lines = tempfile.SpooledTemporaryFile(max_size=4 << 20)
        self.artifacts = 0
        self.bytes = 0

    def write(self, kind: str, identity: str, content: Content, *,
              sensitivity: Sensitivity = Sensitivity.INTERNAL,
              dependencies: Iterable[Dependency] = (), meta: dict | None = None,
              change_token: str = "") -> Artifact:
        meta = dict(meta or {})
        reused = self._reuse(kind, identity, change_token, sensitivity)
        if reused is not None:
            chunks, digest, size, encrypted = reused.chunks, reused.digest, reused.size, reused.encrypted
            self._writer.stats["artifacts_reused"] += 1
        else:
            chunks, digest, size = self._writer.store_content(content, sensitivity)
            encrypted = sensitivity == Sensitivity.SECRET
        if change_token:
            meta["change_token"] = change_token
        artifact = Artifact(self.source, self.exporter, kind, identity, size, sensitivity, chunks,
                            digest, encrypted, list(dependencies), meta)
        self._record(artifact)
        return artifact

    def _reuse(self, kind: str, identity: str, token: str, sensitivity: Sensitivity) -> Artifact | None:
        """The parent's artifact when the exporter says nothing changed and its blobs exist."""
        previous = self._parent.get((kind, identity))
        if (not token or previous is None or previous.meta.get("change_token") != token
                or previous.sensitivity != sensitivity or not self._writer.has_blobs(previous.chunks)):
            return None
        return previous

    def _record(self, artifact: Artifact) -> None:
        self._lines.write(json.dumps(artifact.to_json(), sort_keys=True, separators=(",", ":")).encode() + b"\n")
        self.artifacts += 1
        self.bytes += artifact.size

    def commit(self) -> SourceResult:
        self._writer._commit_source(self._lines, self.artifacts)
        self._lines.close()
        return SourceResult(self.source, self.exporter, self.artifacts, self.bytes)

    def discard(self, error: str) -> SourceResult:
        self._lines.close()
        return SourceResult(self.source, self.exporter, error=error)
