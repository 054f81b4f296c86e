"""The snapshot file's integrity rule, as etcdutl applies it: database sectors + sha256."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

from dr.exporters.etcd.snapshots import SnapshotCorrupt, Verifying, check_file, check_stream


def snapshot(db_size: int = 4096 * 3) -> bytes:
    db = os.urandom(db_size)
    return db + hashlib.sha256(db).digest()


def pieces(data: bytes, size: int):
    return iter([data[i:i + size] for i in range(0, len(data), size)])


@pytest.mark.parametrize("piece", [1, 7, 32, 33, 4096, 1 << 20])
def test_an_intact_snapshot_streams_through_unchanged(piece):
    data = snapshot()
    assert Verifying(pieces(data, piece)).read() == data


def test_a_flipped_byte_is_refused_at_the_end_of_the_stream():
    data = bytearray(snapshot())
    data[5000] ^= 0x01
    stream = Verifying(pieces(bytes(data), 1000))
    with pytest.raises(SnapshotCorrupt, match="integrity hash mismatch"):
        stream.read()


@pytest.mark.parametrize("cut, why", [(1, "truncated"), (32, "truncated"), (4096, "hash mismatch")])
def test_a_truncated_snapshot_is_refused(cut, why):
    with pytest.raises(SnapshotCorrupt, match=why):
        check_stream(io.BytesIO(snapshot()[:-cut]))


def test_a_database_without_its_hash_is_refused(tmp_path):
    path = tmp_path / "bare.db"
    path.write_bytes(os.urandom(8192))
    with pytest.raises(SnapshotCorrupt, match="no integrity hash"):
        check_file(str(path))


def test_check_copies_and_measures(tmp_path):
    data = snapshot()
    out = io.BytesIO()
    assert check_stream(io.BytesIO(data), out, piece=100) == len(data)
    assert out.getvalue() == data
