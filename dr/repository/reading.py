"""Reading artifact content back: each chunk verified against its digest, decrypted if secret.

Implements the exporters' ContentReader contract (dr.contract) structurally; the
repository layer does not import exporters.
"""

from __future__ import annotations

import collections
import hashlib
import io
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO, Iterator

import pyrage

from dr.model.artifacts import Artifact
from dr.repository import encryption
from dr.repository.repositories import IntegrityError, Repository


class ArtifactReader:
    """Reads artifacts for exporters' restores. `damage` lists every integrity problem it met:
    an exporter reports one as an item's failure, in its own words, and the restore's exit code
    must still say damaged data (6), not a partial failure (3)."""

    def __init__(self, repo: Repository, identities: list[pyrage.x25519.Identity] | None = None):
        self.repo = repo
        self.identities = identities or []
        self.damage: list[str] = []  # appended from the restore's threads: list.append is atomic

    def open(self, artifact: Artifact) -> BinaryIO:
        return _ChunkStream(self, artifact)

    def read(self, artifact: Artifact) -> bytes:
        with self.open(artifact) as stream:
            return stream.read()

    def pieces(self, artifact: Artifact) -> Iterator[memoryview]:
        """The content a chunk at a time, without copies, checked as open()'s stream is; the
        next chunks are read, checked and decrypted on other threads while one is handed out
        (AHEAD: a 1 GiB volume file's restore spent its one thread hashing, decrypting and
        sending in turn, while the mover waited on its socket)."""
        with _ChunkStream(self, artifact, ahead=AHEAD) as stream:
            yield from stream.pieces()

    def met(self, damage: IntegrityError) -> IntegrityError:
        """`damage`, remembered in self.damage."""
        self.damage.append(str(damage))
        return damage

    def chunk(self, artifact: Artifact, digest: str) -> bytes:
        try:
            data = self.repo.read_blob(digest)
        except IntegrityError as exc:
            raise self.met(exc) from None
        return encryption.decrypt(data, self.identities) if artifact.encrypted else data


AHEAD = 2  # chunks fetched ahead by pieces(): ~AHEAD x the chunk size more memory
_ahead_pool: ThreadPoolExecutor | None = None
_ahead_lock = threading.Lock()


def _fetcher() -> ThreadPoolExecutor:
    global _ahead_pool
    with _ahead_lock:
        if _ahead_pool is None:
            _ahead_pool = ThreadPoolExecutor(AHEAD, thread_name_prefix="chunk-ahead")
        return _ahead_pool


class _ChunkStream(io.RawIOBase):
    """Streams an artifact chunk by chunk; at the end, checks the whole-content digest."""

    def __init__(self, reader: ArtifactReader, artifact: Artifact, ahead: int = 0):
        self._reader = reader
        self._artifact = artifact
        self._pending = list(artifact.chunks)
        self._ahead_count = ahead
        self._ahead: collections.deque[Future] = collections.deque()  # the next chunks of _pending
        self._buffer = memoryview(b"")  # the chunk being read out, from _offset on (no copy per read)
        self._offset = 0
        # a secret's plaintext digest is not recorded (age's authentication stands for it)
        self._whole = hashlib.sha256() if artifact.digest else None
        self._size = 0
        self._checked = False

    def readable(self) -> bool:
        return True

    def _fill(self) -> None:
        """The next chunk, once the current one is read out; the whole checked before the last
        chunk's bytes are handed out."""
        while self._offset >= len(self._buffer) and self._pending:
            chunk = self._next_chunk()
            if self._whole is not None:
                self._whole.update(chunk)
            self._size += len(chunk)
            self._buffer, self._offset = memoryview(chunk), 0
        if not self._pending and not self._checked:
            self._check_whole()

    def _next_chunk(self) -> bytes:
        if not self._ahead_count:
            return self._reader.chunk(self._artifact, self._pending.pop(0))
        self._top_up()
        future = self._ahead.popleft()
        self._pending.pop(0)
        self._top_up()
        return future.result()

    def _top_up(self) -> None:
        while len(self._ahead) < min(self._ahead_count, len(self._pending)):
            digest = self._pending[len(self._ahead)]
            self._ahead.append(_fetcher().submit(self._reader.chunk, self._artifact, digest))

    def close(self) -> None:
        while self._ahead:  # a stream left early fetches nothing more
            self._ahead.pop().cancel()
        super().close()

    def readinto(self, target) -> int:
        self._fill()
        n = min(len(target), len(self._buffer) - self._offset)
        target[:n] = self._buffer[self._offset:self._offset + n]
        self._offset += n
        return n

    def pieces(self) -> Iterator[memoryview]:
        """The rest a chunk at a time, as views of the decrypted chunks (read(n) copies each
        twice); the whole is checked before the last piece comes out, as with read()."""
        while True:
            self._fill()
            if self._offset >= len(self._buffer):
                return
            yield self._buffer[self._offset:]
            self._offset = len(self._buffer)

    def readall(self) -> bytes:
        """The rest at once, a chunk at a time (RawIOBase's would read it 8 KiB at a time)."""
        parts = []
        while True:
            self._fill()
            if self._offset >= len(self._buffer):
                return b"".join(parts)
            parts.append(self._buffer[self._offset:].tobytes())
            self._offset = len(self._buffer)

    def _check_whole(self) -> None:
        self._checked = True
        artifact = self._artifact
        if self._size != artifact.size:
            raise self._reader.met(IntegrityError(f"{artifact.source}/{artifact.identity}: content is "
                                                  f"{self._size} bytes, catalog says {artifact.size}"))
        if self._whole is not None and self._whole.hexdigest() != artifact.digest:
            raise self._reader.met(IntegrityError(f"{artifact.source}/{artifact.identity}: content does not "
                                                  "match its digest"))

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        return super().read(size)
