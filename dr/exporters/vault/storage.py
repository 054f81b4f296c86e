"""What a raft snapshot's storage holds, as one digest: "does the target still hold this snapshot?"

A restore into the snapshot's own cluster must end `unchanged` when nothing changed there since
the snapshot was restored (issue 30: the demo restores the same snapshot twice). A record made
with `kv_metadata: paths` has no KV versions to compare, so the storage itself is compared.

`state.bin` in a raft snapshot is the storage, key by key in key order, as delimited protobuf
`StorageEntry{key = 1, value = 2}` messages, each value encrypted by the barrier. A restore puts
these bytes back as they are and unsealing does not re-encrypt them, so a key whose value was not
written since holds the same ciphertext, and any write (a secret, a policy, a mount) changes it.
What the server writes by itself when it unseals and takes the lead (`core/leader/<uuid>`,
`core/lock`), and the token and lease bookkeeping of logins (`sys/token/`, `sys/expire/`), are
left out of the digest: measured against OpenBao 2.7, a snapshot restored and unsealed differed
from the original in exactly `core/leader/*` and `core/lock`.

Both snapshots are read as streams; memory stays at one entry.
"""

from __future__ import annotations

import hashlib
import tarfile
from dataclasses import dataclass
from typing import BinaryIO

# written by the server itself (leadership) or by logging in, never by restoring data
VOLATILE_PREFIXES = ("core/leader/", "core/lock", "sys/token/", "sys/expire/")
_MAX_ENTRY = 512 << 20  # Vault's own limit on a storage entry is far smaller (raft: 1 MiB by default)


class StorageUnreadable(Exception):
    """The snapshot's state.bin is not the delimited StorageEntry stream described above."""


@dataclass(frozen=True)
class StorageDigest:
    entries: int  # entries counted (volatile ones excluded)
    digest: str  # sha256 over each counted entry's key and value digest, in stream order


def storage_digest(snapshot: BinaryIO) -> StorageDigest:
    """The digest of a gzip'd raft snapshot's storage, read from a stream."""
    try:
        with tarfile.open(fileobj=snapshot, mode="r|gz") as archive:
            for member in archive:
                if member.name == "state.bin" and member.isfile():
                    return _digest_entries(archive.extractfile(member))
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise StorageUnreadable(f"not a readable raft snapshot: {exc}") from None
    raise StorageUnreadable("the snapshot holds no state.bin")


def _digest_entries(stream: BinaryIO) -> StorageDigest:
    total, count = hashlib.sha256(), 0
    reader = _Reader(stream)
    while (size := reader.varint(allow_end=True)) is not None:
        if size > _MAX_ENTRY:
            raise StorageUnreadable(f"a storage entry of {size} bytes")
        key, value = _entry(reader.exactly(size))
        if key.startswith(VOLATILE_PREFIXES):
            continue
        count += 1
        total.update(len(key).to_bytes(4, "big") + key.encode() + hashlib.sha256(value).digest())
    return StorageDigest(count, total.hexdigest())


def _entry(message: bytes) -> tuple[str, bytes]:
    reader, key, value = _Reader(message), None, b""
    while (tag := reader.varint(allow_end=True)) is not None:
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            reader.varint()
        elif wire == 2:
            data = reader.exactly(reader.varint())
            key, value = (data.decode("utf-8", "replace"), value) if field == 1 else \
                (key, data if field == 2 else value)
        else:
            raise StorageUnreadable(f"unexpected protobuf wire type {wire} in a storage entry")
    if key is None:
        raise StorageUnreadable("a storage entry without a key")
    return key, value


class _Reader:
    """Varints and exact reads over bytes or a stream."""

    def __init__(self, source: BinaryIO | bytes):
        self._bytes = source if isinstance(source, bytes) else None
        self._stream = None if isinstance(source, bytes) else source
        self._at = 0

    def _read(self, n: int) -> bytes:
        if self._bytes is not None:
            data, self._at = self._bytes[self._at:self._at + n], self._at + n
            return data
        return self._stream.read(n)

    def exactly(self, n: int) -> bytes:
        parts, left = [], n
        while left:
            data = self._read(min(left, 1 << 20))
            if not data:
                raise StorageUnreadable("the storage stream ends inside an entry")
            parts.append(data)
            left -= len(data)
        return b"".join(parts)

    def varint(self, allow_end: bool = False) -> int | None:
        value = shift = 0
        while True:
            byte = self._read(1)
            if not byte:
                if allow_end and shift == 0:
                    return None
                raise StorageUnreadable("the storage stream ends inside a length")
            value |= (byte[0] & 0x7F) << shift
            if byte[0] < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise StorageUnreadable("a length of more than 64 bits")
