"""Small files stored together in packs (dr/exporters/volumes/packing.py): which files go
together, what a pack records and refuses, and a volume of many small files through backup,
a change of one file, and restore.

The end-to-end tests use emulated API servers; THE CSI DRIVER AND THE KUBELET ARE STAND-INS
(tests/harness/volumes.py, tests/harness/jobs.py): a claim is a local directory, the mover Job's
container a local process of dr reached through the emulated pod proxy over real HTTP.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys

import pytest

from dr.cli.main import main
from dr.exporters.volumes.exporting import ClaimBackup, Tally
from dr.exporters.volumes.packing import PACK_BYTES, PACK_FILES, PACK_KIND, Pack, change_token, members_of, packs_of
from dr.exporters.volumes.restoring import catalog_problems
from dr.exporters.volumes.wire import Entry, line
from dr.model.artifacts import Artifact, Sensitivity
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from dr.repository.catalogs import read_catalog
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.harness.jobs import JobRunner
from tests.harness.volumes import CsiStandIn
from tests.volumes.helpers import claim, findings, outcomes, tree, volumes_plan


def _file(path: str, size: int = 100, mtime: int = 1) -> Entry:
    return Entry(path, "file", 0o644, 0, 0, mtime, size)


def _packs(entries: list[Entry], below: int = 1 << 20) -> list[Pack]:
    units, count = packs_of(entries, below)
    packs = [u for u in units if isinstance(u, Pack)]
    assert len(packs) == count
    return packs


def test_a_file_added_changes_only_its_own_pack():
    names = [f"d/f{i:04d}" for i in range(2000)]
    before = _packs([_file(n) for n in names])
    after = _packs([_file(n) for n in names[:1000] + ["d/f0999x"] + names[1000:]])
    tokens = {change_token(p.members) for p in before}
    changed = [p for p in after if change_token(p.members) not in tokens]
    assert len(before) > 10, "2,000 files in one pack: the boundaries do not cut"
    assert [[e.path for e in p.members if e.path == "d/f0999x"] for p in changed] == [["d/f0999x"]]
    assert len(after) - len(changed) == len(before) - 1


def test_packs_hold_one_directory_small_files_and_stay_within_their_bounds():
    entries = [Entry(".", "directory", 0o755, 0, 0, 1), _file("a/big", 1 << 20), _file("a/x", 10), _file("b/y", 10),
               _file("a/z", 10)] + [_file(f"c/{i:05d}", 3 << 20) for i in range(3)] \
        + [_file(f"e/{i:05d}", 0) for i in range(3 * PACK_FILES)]
    units, _ = packs_of(entries, 1 << 20)
    assert units[0].path == "." and units[1].path == "a/big", "a directory or a large file went into a pack"
    packs = [u for u in units if isinstance(u, Pack)]
    assert {tuple(e.path for e in p.members) for p in packs if p.path[0] in "ab"} == {("a/x", "a/z"), ("b/y",)}
    assert all(p.size <= PACK_BYTES and len(p.members) <= PACK_FILES for p in packs)
    wider = [u for u in packs_of(entries, 4 << 20)[0] if isinstance(u, Pack) and u.path.startswith("c/")]
    assert [len(p.members) for p in wider] == [1, 1, 1], "two 3 MiB files in one pack, past PACK_BYTES"
    assert all(not isinstance(u, Pack) for u in packs_of(entries, 0)[0]), "pack_below 0 still packed"


def _pack(files: list, size: int, identity: str = "ml/data/a") -> Artifact:
    return Artifact("vols", "volumes", PACK_KIND, identity, size, Sensitivity.INTERNAL, meta={"files": files})


@pytest.mark.parametrize("files,size,why", [
    ([["../../etc/passwd", "0644", 0, 0, 1, 4, False]], 4, "refused path"),
    ([["a", "0644", 0, 0, 1, 4, False]], 5, "add up to 4 bytes"),
    ([["a", "0644", 0, 0, 1]], 4, "facts are unusable"),
    ([["a", "99999", 0, 0, 1, 4, False]], 4, "facts are unusable"),
    ([], 0, "without its list of files"),
    ([["a", "0644", 0, 0, 1, 0, False]] * (PACK_FILES + 1), 0, "more than"),
])
def test_a_damaged_or_hostile_pack_is_named_by_verify(files, size, why):
    claim_line = Artifact("vols", "volumes", "volume", "ml/data", 10, Sensitivity.INTERNAL)
    problems = catalog_problems([claim_line, _pack(files, size)])
    assert len(problems) == 1 and why in problems[0] and "ml/data/a" in problems[0], problems
    with pytest.raises(Exception, match=why.split()[0]):
        members_of("ml/data/a", {"files": files}, size)


def test_a_file_in_a_pack_and_beside_it_is_recorded_twice():
    claim_line = Artifact("vols", "volumes", "volume", "ml/data", 10, Sensitivity.INTERNAL)
    single = Artifact("vols", "volumes", "volume-file", "ml/data/a", 4, Sensitivity.INTERNAL,
                      meta={"mode": "0644", "uid": 0, "gid": 0, "mtime_ns": 1, "size": 4})
    assert catalog_problems([claim_line, single, _pack([["a", "0644", 0, 0, 1, 4, False]], 4, "ml/data/b")]) \
        == ["ml/data/a: recorded twice"]


class _Recorded:
    """What the exporter hands its sink, kept (a stand-in for the repository's sink: this test is
    about reading the mover's frames into packs, not about storing them)."""

    def __init__(self):
        self.written = []

    def write(self, kind, identity, content, **kw):
        self.written.append((kind, identity, content, kw))

    def unchanged(self, *a, **kw):
        return False


def test_a_file_that_failed_at_the_mover_is_named_and_left_out_of_its_pack():
    frames = b"".join([line({"path": "d/a", "size": 3}), b"aaa", line({"ok": True, "sha256": _sha(b"aaa")}),
                       line({"path": "d/b", "error": "Permission denied"}),
                       line({"path": "d/c", "size": 2}), b"cc", line({"error": "the file changed while it was read"}),
                       line({"path": "d/e", "size": 1}), b"e", line({"ok": True, "sha256": _sha(b"e")})])
    backup = ClaimBackup.__new__(ClaimBackup)
    backup.sink, unreadable = _Recorded(), []
    backup.claim = type("C", (), {"key": "ml/data"})()
    backup.sensitivity = Sensitivity.INTERNAL
    backup.tally = Tally()
    backup._unreadable = lambda path, error: unreadable.append((path, error))
    members = [_file("d/a", 3), _file("d/b", 4), _file("d/c", 2), _file("d/e", 1)]
    backup._write_pack(Pack(members), io.BufferedReader(io.BytesIO(frames)))
    ((kind, identity, content, kw),) = backup.sink.written
    assert (kind, identity, content) == (PACK_KIND, "ml/data/d/a", b"aaae")
    assert [f[0] for f in kw["meta"]["files"]] == ["d/a", "d/e"]
    assert kw["change_token"] == change_token([members[0], members[3]]) != change_token(members)
    assert unreadable == [("d/b", "Permission denied"), ("d/c", "the file changed while it was read")]
    assert (backup.tally.files, backup.tally.bytes) == (2, 4)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def two(tmp_path):
    with EmulatedCluster(name="source") as a, EmulatedCluster(name="recovery") as b:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"source": a, "recovery": b})
        with CsiStandIn(a, tmp_path / "csi-a") as csi_a, CsiStandIn(b, tmp_path / "csi-b") as csi_b, \
                JobRunner(a, csi_a, tmp_path / "pods-a", programs={"python": sys.executable}), \
                JobRunner(b, csi_b, tmp_path / "pods-b", programs={"python": sys.executable}):
            yield {"a": a, "b": b, "csi_a": csi_a, "csi_b": csi_b, "kubeconfig": str(kubeconfig)}


def _seed(folder: str) -> None:
    for index in range(600):
        sub = os.path.join(folder, f"shard-{index % 3}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"seg-{index:04d}.json"), "wb") as handle:
            handle.write(os.urandom(100 + index * 7))
    with open(os.path.join(folder, "model.bin"), "wb") as handle:
        handle.write(os.urandom(2 << 20))
    os.chmod(os.path.join(folder, "shard-1", "seg-0001.json"), 0o600)


def _catalog(tmp_path) -> list[Artifact]:
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    newest = max(repo.snapshots(), key=lambda s: s.time)
    return read_catalog(repo, newest.catalog)


def _backup(path: str, capsys) -> dict:
    code = main(["backup", "--plan", path, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)["results"][0]["stats"]


def test_many_small_files_round_trip_in_packs_and_one_changed_file_stores_one_pack(two, tmp_path, capsys):
    two["a"].create_objects(claim("ml", "segments"))
    folder = two["csi_a"].directory_of("ml", "segments")
    _seed(folder)
    path = volumes_plan(tmp_path, two["kubeconfig"], "source", namespaces=["ml"])
    first = _backup(path, capsys)
    kinds = [a.kind for a in _catalog(tmp_path)]
    assert kinds.count("volume-file") == 1, kinds  # model.bin: 2 MiB, not packed
    assert 3 <= kinds.count(PACK_KIND) < 60, kinds  # 600 files in 3 directories
    packed = sum(len(a.meta["files"]) for a in _catalog(tmp_path) if a.kind == PACK_KIND)
    assert packed == 600 and first["artifacts"] == len(kinds)

    with open(os.path.join(folder, "shard-2", "seg-0302.json"), "ab") as handle:
        handle.write(b"appended")
    second = _backup(path, capsys)
    # the pack that holds the changed file, the claim's record and the catalog; a pack is ~64 files
    assert second["blobs_uploaded"] == 3 and 0 < second["bytes_uploaded"] < first["bytes_uploaded"] / 4, second
    assert second["artifacts_reused"] == second["artifacts"] - 2, second

    code = main(["restore", "--plan", path, "--source", "vols", "--to", f"vols={two['kubeconfig']}:recovery",
                 "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    restored = two["csi_b"].directory_of("ml", "segments")
    assert tree(restored) == tree(folder)
    assert not [f for f in findings(json.loads(out)) if f.get("severity") == "error"], out

    # two files of one pack changed at the destination: one's mode, the other's bytes alone
    # (same size and mtime): both are conflicts, the pack's other files unchanged
    os.chmod(os.path.join(restored, "shard-0", "seg-0000.json"), 0o600)
    other = os.path.join(restored, "shard-0", "seg-0003.json")
    st = os.stat(other)
    with open(other, "r+b") as handle:
        handle.write(bytes(16))
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    code = main(["restore", "--plan", path, "--source", "vols", "--to", f"vols={two['kubeconfig']}:recovery",
                 "--json"])
    out = capsys.readouterr().out
    conflicts = {o["item"] for o in outcomes(json.loads(out)) if o["status"] == "conflict"}
    assert code != 0 and conflicts == {"ml/segments/shard-0/seg-0000.json", "ml/segments/shard-0/seg-0003.json"}, out


def test_pack_below_zero_keeps_a_file_per_artifact(two, tmp_path, capsys):
    two["a"].create_objects(claim("ml", "segments"))
    folder = two["csi_a"].directory_of("ml", "segments")
    _seed(folder)
    path = volumes_plan(tmp_path, two["kubeconfig"], "source", namespaces=["ml"], pack_below=0)
    _backup(path, capsys)
    kinds = [a.kind for a in _catalog(tmp_path)]
    assert kinds.count("volume-file") == 601 and PACK_KIND not in kinds
    assert main(["restore", "--plan", path, "--source", "vols", "--to", f"vols={two['kubeconfig']}:recovery",
                 "-q"]) == 0, capsys.readouterr()
    assert tree(two["csi_b"].directory_of("ml", "segments")) == tree(folder)


def test_what_the_mover_read_back_otherwise_is_named_in_either_answer():
    from dr.exporters.volumes.restoring import _differing

    pack = _pack([["d/a", "0644", 0, 0, 1, 3, False], ["d/b", "0644", 0, 0, 1, 1, False]], 4)
    sent = [hashlib.sha256(b"aaa").digest(), hashlib.sha256(b"b").digest()]
    assert _differing({"files": 2, "differing": []}, sent, [pack]) == []
    assert _differing({"files": 2, "differing": ["d/b"]}, sent, [pack]) == ["d/b"]
    assert "staged 1 files of 2" in _differing({"files": 1, "differing": []}, sent, [pack])[0]
    # a mover of an earlier version answers every digest by path
    old = {"digests": {"d/a": _sha(b"aaa"), "d/b": _sha(b"other")}}
    assert _differing(old, sent, [pack]) == ["d/b"]
