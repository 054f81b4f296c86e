"""Blob bytes on their way from one registry to another (or into dr's repository): hashed and
counted as they pass, cut into upload pieces, never held whole."""

from __future__ import annotations

import hashlib
from typing import BinaryIO, Iterator

from dr.kits.oci.errors import DigestMismatch

READ_SIZE = 1 << 20


class HashingReader:
    """A file-like view of a blob download that hashes and counts every byte it hands out.

    `finish()` (called when the upload ends) and the read that reaches the expected size raise
    DigestMismatch when the bytes do not match: a corrupt source is refused, with the reference
    named, before the destination commits the upload (the destination also checks the digest).
    """

    def __init__(self, stream: BinaryIO | Iterator[bytes], digest: str, size: int, name: str) -> None:
        self._stream, self.digest, self.size, self.name = stream, digest, size, name
        self._hash = hashlib.sha256()
        self.read_bytes = 0

    def read(self, n: int = -1) -> bytes:
        want = self.size - self.read_bytes if n is None or n < 0 else min(n, self.size - self.read_bytes)
        data = self._stream.read(want) if want > 0 else b""
        self._hash.update(data)
        self.read_bytes += len(data)
        if want > 0 and not data:
            raise DigestMismatch(f"{self.name}: the registry sent {self.read_bytes} of {self.size} bytes")
        if self.read_bytes == self.size:
            self._verify()
        return data

    def _verify(self) -> None:
        got = "sha256:" + self._hash.hexdigest()
        if got != self.digest:
            raise DigestMismatch(f"{self.name}: the registry served bytes whose digest is {got}, "
                                 f"not {self.digest}; refused")

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()

    def finish(self) -> None:
        if self.read_bytes != self.size:
            raise DigestMismatch(f"{self.name}: {self.read_bytes} of {self.size} bytes were read")
        self._verify()
        extra = self._stream.read(1)
        if extra:
            raise DigestMismatch(f"{self.name}: the registry sent more than the {self.size} bytes "
                                 "its descriptor states")


class Piece:
    """`length` bytes of a reader, file-like with a length, so requests sends a Content-Length
    and streams it without buffering."""

    def __init__(self, reader: HashingReader, length: int) -> None:
        self._reader, self._left = reader, length

    def __len__(self) -> int:
        return self._left

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._reader.read(min(n, READ_SIZE))
        self._left -= len(data)
        return data
