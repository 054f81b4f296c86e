"""The mover's staging (dr/exporters/volumes/staging.py) on a real directory: frames written,
read back and compared, made durable by an fsync per file or, for a large tree, one syncfs."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

from dr.exporters.volumes import staging
from dr.exporters.volumes.wire import line


def _frames(count: int, wrong: set[int] = frozenset()) -> io.BufferedReader:
    parts = [line({"path": ".", "kind": "directory", "mode": 0o755, "uid": 0, "gid": 0, "mtime_ns": 1}),
             line({"path": "d", "kind": "directory", "mode": 0o750, "uid": 0, "gid": 0, "mtime_ns": 2})]
    for i in range(count):
        data = f"file {i}".encode() * (i % 7)
        parts += [line({"path": f"d/f{i:05d}", "kind": "file", "mode": 0o640, "uid": 0, "gid": 0,
                        "mtime_ns": 3_000_000_000 + i, "size": len(data)}), data,
                  line({"ok": True, "sha256": hashlib.sha256(data).hexdigest()})]
    return io.BufferedReader(io.BytesIO(b"".join(parts)))


@pytest.mark.parametrize("count,synced", [(10, False), (1200, False), (1200, True)])
def test_a_tree_is_staged_read_back_and_made_durable(tmp_path, monkeypatch, count, synced):
    calls = []
    real = staging.syncfs
    monkeypatch.setattr(staging, "syncfs", lambda d: calls.append(d) or real(d))  # a spy: the real call runs
    if synced:  # the kernel's mount table, as it reads when a block volume is mounted at tmp_path
        table = tmp_path.parent / f"mountinfo-{tmp_path.name}"
        table.write_text(f"1 0 8:1 / / rw - ext4 /dev/vda rw\n7 1 253:4 / {tmp_path} rw - ext4 /dev/rbd0 rw\n")
        monkeypatch.setattr(staging, "MOUNTINFO", str(table))
    stage = staging.Staging(str(tmp_path))
    digests, differing = stage.write(_frames(count))
    assert differing == [] and len(digests) == count
    for i in (0, count - 1):
        path = tmp_path / staging.STAGING / "d" / f"f{i:05d}"
        assert digests[f"d/f{i:05d}"] == hashlib.sha256(path.read_bytes()).hexdigest()
        st = os.stat(path)
        assert (st.st_mode & 0o7777, st.st_mtime_ns) == (0o640, 3_000_000_000 + i)
    assert os.stat(tmp_path / staging.STAGING / "d").st_mtime_ns == 2
    assert bool(calls) == synced
    assert stage.commit() == 1 and sorted(os.listdir(tmp_path / "d"))[:1] == ["f00000"]


def test_a_frame_whose_bytes_are_not_its_trailers_fails_the_write(tmp_path):
    raw = _frames(3).read().replace(b"file 2file 2", b"FILE 2file 2", 1)
    with pytest.raises(Exception, match="not the catalog's"):
        staging.Staging(str(tmp_path)).write(io.BufferedReader(io.BytesIO(raw)))


MOUNTS = """22 27 0:21 / /proc rw,relatime - proc proc rw
1205 1190 253:4 / /data rw,relatime - ext4 /dev/rbd0 rw
1206 1190 8:1 /var/lib/rancher/k3s/storage/pvc-1_ns_data /local rw - ext4 /dev/vda1 rw
1207 1190 8:1 / /with\\040space rw - xfs /dev/nvme1n1 rw
1208 1190 0:55 / /over rw - ext4 /dev/sdb rw
1209 1190 8:1 /srv/share /over rw - ext4 /dev/vda1 rw
"""


@pytest.mark.parametrize("root,whole", [("/data", True), ("/local", False), ("/with space", True),
                                        ("/over", False), ("/data/sub", False), ("/nowhere", False)])
def test_a_volume_is_its_own_filesystem_only_where_a_whole_one_is_mounted(root, whole):
    assert staging.own_filesystem(root, MOUNTS) is whole
