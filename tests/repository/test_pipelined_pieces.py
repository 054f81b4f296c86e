"""Large pieces are encrypted, hashed and uploaded on the writer's sealing threads while the next
piece is read (writing.PIPELINED_FROM): the chunks stay in content order, equal pieces are
stored once, and a stream that fails mid-way fails the artifact with its own error, with no
piece left being sealed."""

from __future__ import annotations

import io
import os

import pyrage
import pytest

from dr.model.artifacts import Sensitivity
from dr.repository import layout, names, writing
from dr.repository.catalogs import read_catalog
from dr.repository.encryption import generate_identity
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import IntegrityError, Repository
from dr.repository.stores.local import LocalStore
from dr.repository.writing import SnapshotWriter

PIECE = writing.PIPELINED_FROM  # the smallest piece that goes to the sealing threads


@pytest.fixture
def repo(tmp_path):
    repository = Repository(LocalStore(str(tmp_path / "repo")))
    repository.init()
    return repository


@pytest.mark.parametrize("sensitivity", [Sensitivity.INTERNAL, Sensitivity.SECRET])
def test_pieces_come_back_in_order(repo, sensitivity):
    identity, recipient = generate_identity()
    repeated = os.urandom(PIECE)
    data = repeated + os.urandom(3 * PIECE) + repeated + os.urandom(PIECE // 3)  # 6 pieces, the last short
    writer = SnapshotWriter(repo, [recipient], chunk_size=PIECE)
    sink = writer.source("vols", "volumes")
    sink.write("volume-file", "ns/data/model.bin", lambda: io.BytesIO(data), sensitivity=sensitivity)
    snapshot = writer.finish("plan", [sink.commit()])
    writer.close()
    (artifact,) = [a for a in read_catalog(repo, snapshot.catalog) if a.kind == "volume-file"]
    assert len(artifact.chunks) == 6
    if sensitivity == Sensitivity.INTERNAL:
        assert artifact.chunks[0] == artifact.chunks[4]  # the same piece is the same blob
    reader = ArtifactReader(repo, [pyrage.x25519.Identity.from_str(identity)])
    (opened,) = names.open_all([artifact], reader.identities)
    assert reader.read(opened) == data
    assert b"".join(bytes(p) for p in reader.pieces(opened)) == data


class FailingStream(io.RawIOBase):
    """Gives `good` bytes, then fails as a mover's stream cut off would."""

    def __init__(self, good: int):
        self.left = good

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        if not self.left:
            raise ConnectionResetError("the mover's stream was cut")
        n = min(len(target), self.left)
        target[:n] = os.urandom(n)
        self.left -= n
        return n


def test_a_stream_failing_mid_way_fails_with_its_own_error(repo):
    _, recipient = generate_identity()
    writer = SnapshotWriter(repo, [recipient], chunk_size=PIECE)
    sink = writer.source("vols", "volumes")
    with pytest.raises(ConnectionResetError, match="cut"):
        sink.write("volume-file", "ns/data/model.bin", lambda: FailingStream(3 * PIECE + 5),
                   sensitivity=Sensitivity.SECRET)
    assert writer._sealing._value == writing.PIPELINE_DEPTH  # nothing is still being sealed
    writer.close()


def test_a_damaged_chunk_read_ahead_fails_the_read(repo, tmp_path):
    data = os.urandom(4 * PIECE)
    writer = SnapshotWriter(repo, [], chunk_size=PIECE)
    sink = writer.source("vols", "volumes")
    sink.write("volume-file", "ns/data/model.bin", data)
    snapshot = writer.finish("plan", [sink.commit()])
    writer.close()
    (artifact,) = [a for a in read_catalog(repo, snapshot.catalog) if a.kind == "volume-file"]
    path = tmp_path / "repo" / layout.blob_key(artifact.chunks[2])
    raw = bytearray(path.read_bytes())
    raw[100] ^= 0xFF
    path.write_bytes(bytes(raw))
    reader = ArtifactReader(repo)
    got = []
    with pytest.raises(IntegrityError):
        for piece in reader.pieces(artifact):
            got.append(bytes(piece))
    assert b"".join(got) == data[:2 * PIECE]  # the pieces before the damaged one, and no more
    assert reader.damage
