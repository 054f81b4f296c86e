"""The raft storage digest on damaged or hostile snapshots (real snapshots: test_vault_exporter.py)."""

from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from dr.exporters.vault.storage import StorageUnreadable, storage_digest


def _entry(key: bytes, value: bytes) -> bytes:
    body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(value)]) + value
    return bytes([len(body)]) + body


def _snapshot(state: bytes) -> io.BytesIO:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        member = tarfile.TarInfo("state.bin")
        member.size = len(state)
        archive.addfile(member, io.BytesIO(state))
    return io.BytesIO(gzip.compress(raw.getvalue()))


def test_leadership_and_login_bookkeeping_do_not_count_but_data_does():
    data = _entry(b"logical/abc/secret", b"cipher-1")
    first = storage_digest(_snapshot(data + _entry(b"core/leader/1", b"x") + _entry(b"sys/token/id/t", b"y")))
    second = storage_digest(_snapshot(data + _entry(b"core/leader/2", b"z")))
    assert first == second and first.entries == 1
    assert storage_digest(_snapshot(_entry(b"logical/abc/secret", b"cipher-2"))) != first


@pytest.mark.parametrize("state", [
    b"\x05\x0a",  # ends inside an entry
    b"\xff\xff",  # ends inside a length
    b"\x02\x1b\x00",  # a wire type no StorageEntry has
    b"\x02\x12\x00",  # an entry without a key
    b"\xff" * 10 + b"\x01",  # a length of more than 64 bits
])
def test_a_damaged_storage_stream_is_refused(state):
    with pytest.raises(StorageUnreadable):
        storage_digest(_snapshot(state))


def test_not_a_snapshot_is_refused():
    with pytest.raises(StorageUnreadable):
        storage_digest(io.BytesIO(b"not gzip at all"))
    with pytest.raises(StorageUnreadable, match="no state.bin"):
        raw = io.BytesIO()
        tarfile.open(fileobj=raw, mode="w").close()
        storage_digest(io.BytesIO(gzip.compress(raw.getvalue())))
