"""Writing a snapshot: chunk, encrypt if secret, deduplicate, upload, then catalog, then manifest.

This is the write ordering of docs/format.md made code:
  1. blobs (in parallel, bounded; the small ones in the store's batch, published together
  once every upload finished), 2. the catalog blob, 3. the manifest, last. A crash anywhere
  before 3 leaves no snapshot, only unreferenced blobs (or a local store's tmp/ files) that
  prune reclaims.
Exporters never see this class; they see it through the ArtifactSink contract.
"""

from __future__ import annotations

import hashlib
import io
import json
import socket
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import BinaryIO, Callable, Iterable, Union

from dr.model import clock
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.snapshots import Snapshot, SourceResult
from dr.repository import encryption, layout, names
from dr.repository.catalogs import CatalogBuilder
from dr.repository.repositories import Repository
from dr.repository.stores.base import ObjectExists

CHUNK_SIZE = 8 << 20  # bounded memory per in-flight upload; large enough for few requests
# Blobs under this size go into the store's batch (stores.base.PutBatch): on a local
# repository they become durable and visible together before the catalog, their fsyncs issued
# at once, where each blob's fsync, link and directory fsync, one after another, cost ~1 ms on
# ext4 (most of a small file's backup). Larger ones are put at once, so that a backup retried
# after a crash finds them stored and does not upload them again.
BATCHED_UNDER = 4 << 20
# A whole piece (chunk_size, when at least this large: more may follow) is encrypted, hashed
# and handed to the upload pool on a thread of its own while the next piece is read (hashlib and OpenSSL's cipher let go of the GIL): a 1 GiB
# volume's backup spent its one thread reading the mover's stream, encrypting and hashing in
# turn. A last or only piece (most artifacts: one small piece) is done inline: nothing is read
# meanwhile, and the hop to a thread cost 1 MiB files 5%.
PIPELINED_FROM = 1 << 20
PIPELINE_DEPTH = 2  # pieces being sealed at once, per writer: ~2 x 2 x chunk_size more memory
Content = Union[bytes, Callable[[], BinaryIO]]


#: meta key of secret artifacts: which recipients their chunks are encrypted to (section 11)
RECIPIENTS_KEY = "recipients"


def recipients_fingerprint(recipients: list[str]) -> str:
    """A short, order-free name for a set of recipients (public keys: nothing secret)."""
    canonical = "\n".join(sorted({r.strip() for r in recipients}))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:32]


class SnapshotWriter:
    def __init__(self, repo: Repository, recipients: list[str], *, workers: int = 8,
                 chunk_size: int = CHUNK_SIZE, on_progress: Callable[[int], None] | None = None,
                 on_reused: Callable[[set[str], Callable[[list[Callable]], None]], None] | None = None):
        self.repo = repo
        self.recipients = encryption.parse_recipients(recipients) if recipients else []
        self.recipients_id = recipients_fingerprint(recipients)
        self.names = names.Sealer(recipients, self.recipients)
        self.chunk_size = chunk_size
        self.on_progress = on_progress or (lambda n: None)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="upload")
        self._sealers = ThreadPoolExecutor(max_workers=PIPELINE_DEPTH, thread_name_prefix="seal")
        self._sealing = threading.BoundedSemaphore(PIPELINE_DEPTH)
        # At most `workers` chunks in memory at once: peak memory ~ workers x chunk_size.
        self._in_flight = threading.BoundedSemaphore(workers)
        self._lock = threading.Lock()
        self._known: set[str] | None = None
        # The blob listing (format.md section 11) is started now, on the upload pool, so that
        # its round trips overlap the parent snapshot's reads instead of following them.
        self._listing: Future = self._pool.submit(lambda: {digest for digest, _ in repo.list_blobs()})
        self._pending: dict[str, Future] = {}
        self._batch = repo.store.batch()
        self._catalog = CatalogBuilder()
        # Object Lock (dr.repository.immutability): blobs the snapshot names but this run did
        # not write are handed to on_reused, with a runner, before the manifest is written.
        self._on_reused = on_reused
        self._written: set[str] = set()
        self._referenced: set[str] = set()
        self._started = time.monotonic()  # duration_seconds: restore estimates bytes_read / it
        self.stats = {"bytes_read": 0, "bytes_uploaded": 0, "blobs_uploaded": 0,
                      "artifacts": 0, "artifacts_reused": 0, "bytes_reused": 0, "bytes_transferred": 0}

    # -- the blob set ---------------------------------------------------------------------
    def _known_blobs(self) -> set[str]:
        if self._known is None:
            self._known = self._listing.result()
        return self._known

    def _upload(self, data: bytes, futures: list[Future]) -> str:
        """Schedule an upload unless the blob exists; the owner's `futures` get its future.

        A blob another source is still uploading is not uploaded twice, but its future joins
        this owner's too: if that upload fails, both owners fail, never a dangling reference.
        """
        digest = layout.sha256(data)
        with self._lock:
            known = self._known_blobs()
            pending = self._pending.get(digest)
            if pending is not None:
                futures.append(pending)
                return digest
            if digest in known:
                return digest
            known.add(digest)
            self._written.add(digest)
        _raise_finished_failures(futures)
        self._in_flight.acquire()
        future = self._pool.submit(self._put, digest, data)
        with self._lock:
            if not future.done():
                self._pending[digest] = future
        future.add_done_callback(lambda f: self._settle(digest, f))
        futures.append(future)
        return digest

    def _settle(self, digest: str, future: Future) -> None:
        self._in_flight.release()
        with self._lock:
            self._pending.pop(digest, None)
            if future.cancelled() or future.exception() is not None:
                self._known_blobs().discard(digest)  # not stored: a later writer must upload it

    def _put(self, digest: str, data: bytes) -> None:
        put = self._batch.put if len(data) < BATCHED_UNDER else self.repo.store.put
        try:
            put(layout.blob_key(digest), data)
        except ObjectExists:
            return  # another writer stored the same content first: same name, same bytes
        with self._lock:
            self.stats["bytes_uploaded"] += len(data)
            self.stats["blobs_uploaded"] += 1

    def has_blobs(self, digests: Iterable[str]) -> bool:
        known = self._known_blobs()
        return all(d in known for d in digests)

    # -- artifacts ------------------------------------------------------------------------
    def store_content(self, content: Content, sensitivity: Sensitivity,
                      futures: list[Future]) -> tuple[list[str], str, int]:
        """Chunk and upload content; return (chunk digests, plaintext digest or '', size)."""
        secret = sensitivity == Sensitivity.SECRET
        whole = None if secret else hashlib.sha256()  # a secret's plaintext digest is never recorded
        chunks: list[str | Future] = []
        size = 0
        stream = io.BytesIO(content) if isinstance(content, bytes) else content()
        try:
            with stream:
                while True:
                    piece = _read_full(stream, self.chunk_size)
                    if not piece and chunks:
                        break
                    size += len(piece)
                    if whole is not None:
                        whole.update(piece)
                    self.on_progress(len(piece))
                    chunks.append(self._store_piece(piece, secret, futures))
                    if len(piece) < self.chunk_size:
                        break
        except BaseException:  # the pieces being sealed end first; the reading's error is the one raised
            wait([c for c in chunks if isinstance(c, Future)])
            raise
        digests = [c.result() if isinstance(c, Future) else c for c in chunks]
        with self._lock:
            self.stats["bytes_read"] += size
        return digests, ("" if whole is None else whole.hexdigest()), size

    def _store_piece(self, piece: bytes, secret: bool, futures: list[Future]) -> str | Future:
        """The piece's chunk digest, or, for a large piece, a future of it (PIPELINED_FROM)."""
        def store() -> str:
            return self._upload(encryption.encrypt(piece, self.recipients) if secret else piece, futures)

        if len(piece) < max(PIPELINED_FROM, self.chunk_size):  # the last piece: nothing to overlap with
            return store()
        self._sealing.acquire()
        try:
            future = self._sealers.submit(store)
        except BaseException:
            self._sealing.release()
            raise
        future.add_done_callback(lambda _: self._sealing.release())
        return future

    def source(self, name: str, exporter: str, parent: Iterable[Artifact] = ()) -> "SourceSink":
        return SourceSink(self, name, exporter, parent)

    def _commit_source(self, lines: tempfile.SpooledTemporaryFile, count: int, chunks: set[str]) -> None:
        self._referenced |= chunks
        lines.seek(0)
        self._catalog.add_lines(iter(lines.readline, b""))
        self.stats["artifacts"] += count

    # -- finishing ------------------------------------------------------------------------
    def finish(self, plan: str, sources: list[SourceResult], tags: list[str] = ()) -> Snapshot:
        """Write the catalog once every source committed (its uploads done), then the manifest."""
        entries = self._catalog.entries
        self._publish()  # every blob the catalog names is durable and visible before the catalog
        futures: list[Future] = []
        catalog = self._upload(self._catalog.finish(), futures)
        _wait_all(futures)
        self._publish()  # the catalog itself, when it was small enough to be batched
        if self._on_reused is not None:
            self._on_reused((self._referenced | {catalog}) - self._written, self._run_all)
        self.stats["duration_seconds"] = round(time.monotonic() - self._started, 3)
        snapshot = Snapshot(plan=plan, time=clock.now(), hostname=socket.gethostname(),
                            catalog=catalog, catalog_entries=entries, sources=sources,
                            stats=dict(self.stats), tags=list(tags))
        self.repo.write_snapshot(snapshot)
        return snapshot

    def _publish(self) -> None:
        taken = self._batch.publish()  # stored meanwhile by another writer: not uploaded by this one
        with self._lock:
            self.stats["blobs_uploaded"] -= taken

    def _run_all(self, calls: list[Callable]) -> None:
        """Run the calls on the upload pool; return when all succeeded (else raise)."""
        _wait_all([self._pool.submit(call) for call in calls])

    def close(self) -> None:
        self._sealers.shutdown(wait=True, cancel_futures=True)
        self._pool.shutdown(wait=True, cancel_futures=True)
        # what is still staged no snapshot names (a failed or interrupted run's, or a failed
        # source's upload that ended after the catalog): dropped, not left for prune
        self._batch.discard()


class SourceSink:
    """The ArtifactSink one source writes into (see dr.contract.ArtifactSink)."""

    def __init__(self, writer: SnapshotWriter, source: str, exporter: str, parent: Iterable[Artifact]):
        self._writer = writer
        self.source = source
        self.exporter = exporter
        self._parent = {(a.kind, a.identity): a for a in parent}
        self._lines = tempfile.SpooledTemporaryFile(max_size=4 << 20)
        self._futures: list[Future] = []
        self._chunks: set[str] = set()
        self.artifacts = 0
        self.bytes = 0

    def write(self, kind: str, identity: str, content: Content, *,
              sensitivity: Sensitivity = Sensitivity.INTERNAL,
              dependencies: Iterable[Dependency] = (), meta: dict | None = None,
              change_token: str = "") -> Artifact:
        meta = dict(meta or {})
        secret = sensitivity == Sensitivity.SECRET
        stored, token = identity, change_token
        if secret:  # section 8.1: the name and the token are stored as keyed digests
            meta[RECIPIENTS_KEY] = self._writer.recipients_id
            stored, token = self._writer.names.identity(kind, identity), self._writer.names.token(change_token)
        reused = self._reuse(kind, stored, token, sensitivity, meta.get(RECIPIENTS_KEY))
        if reused is None and secret:  # a parent written before 8.1 holds the names in plaintext
            reused = self._reuse(kind, identity, change_token, sensitivity, meta.get(RECIPIENTS_KEY))
        if reused is not None:
            chunks, digest, size, encrypted = reused.chunks, reused.digest, reused.size, reused.encrypted
            # facts about the content the exporter did not read again this time stay true
            meta = {**{k: v for k, v in reused.meta.items() if k != "change_token"}, **meta}
            with self._writer._lock:
                self._writer.stats["artifacts_reused"] += 1
                self._writer.stats["bytes_reused"] += size
        else:
            chunks, digest, size = self._writer.store_content(content, sensitivity, self._futures)
            encrypted = secret
        if token:
            meta["change_token"] = token
        if secret:
            meta = self._writer.names.seal(identity, meta, reused)
        artifact = Artifact(self.source, self.exporter, kind, stored, size, sensitivity, chunks,
                            digest, encrypted, list(dependencies), meta)
        self._record(artifact)
        return artifact

    def unchanged(self, kind: str, identity: str, change_token: str, *,
                  sensitivity: Sensitivity = Sensitivity.INTERNAL) -> bool:
        """What write() would decide about reuse, asked ahead (dr.contract.ArtifactSink.unchanged)."""
        if sensitivity != Sensitivity.SECRET:
            return self._reuse(kind, identity, change_token, sensitivity, None) is not None
        recipients, names = self._writer.recipients_id, self._writer.names
        return (self._reuse(kind, names.identity(kind, identity), names.token(change_token), sensitivity,
                            recipients) is not None
                or self._reuse(kind, identity, change_token, sensitivity, recipients) is not None)

    def transferred(self, nbytes: int) -> None:
        with self._writer._lock:
            self._writer.stats["bytes_transferred"] += nbytes

    def _reuse(self, kind: str, identity: str, token: str, sensitivity: Sensitivity,
               recipients: str | None) -> Artifact | None:
        """The parent's artifact when the exporter says nothing changed and its blobs exist, and
        secret content was encrypted to today's recipients (after a rotation it is read and
        encrypted again, so snapshots stop depending on the old keys)."""
        previous = self._parent.get((kind, identity))
        if (not token or previous is None or previous.meta.get("change_token") != token
                or previous.sensitivity != sensitivity or previous.meta.get(RECIPIENTS_KEY) != recipients
                or not self._writer.has_blobs(previous.chunks)):
            return None
        return previous

    def _record(self, artifact: Artifact) -> None:
        self._chunks.update(artifact.chunks)
        self._lines.write(json.dumps(artifact.to_json(), sort_keys=True, separators=(",", ":")).encode() + b"\n")
        self.artifacts += 1
        self.bytes += artifact.size

    def commit(self) -> SourceResult:
        """Wait for this source's uploads; only then do its artifacts join the catalog."""
        try:
            _wait_all(self._futures)
        except Exception as exc:  # a failed upload fails this source, not the others
            return self.discard(f"upload failed: {exc.__class__.__name__}: {exc}")
        self._writer._commit_source(self._lines, self.artifacts, self._chunks)
        self._lines.close()
        return SourceResult(self.source, self.exporter, self.artifacts, self.bytes)

    def discard(self, error: str) -> SourceResult:
        for future in self._futures:
            future.cancel()
        self._lines.close()
        return SourceResult(self.source, self.exporter, error=error)


def _raise_finished_failures(futures: list[Future]) -> None:
    """Fail fast: surface an upload error of this owner at its next write."""
    for future in [f for f in futures if f.done()]:
        future.result()
        futures.remove(future)


def _wait_all(futures: list[Future]) -> None:
    for future in futures:
        future.result()
    futures.clear()


def _read_full(stream: BinaryIO, size: int) -> bytes:
    """Read `size` bytes unless EOF comes first: a short read from a pipe is not the end."""
    parts: list[bytes] = []
    wanted = size
    while wanted:
        piece = stream.read(wanted)
        if not piece:
            break
        parts.append(piece)
        wanted -= len(piece)
    return b"".join(parts)
