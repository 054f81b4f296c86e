"""The local manifest cache: an unchanged backup reads no manifest it has read before, and a
cached copy is trusted only as far as its id proves it (dr.repository.manifest_cache)."""

from __future__ import annotations

import json
import os

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository import layout
from dr.repository.manifest_cache import ManifestCache
from dr.repository.repositories import Repository
from dr.repository.stores.counting import CountingStore
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import files_source, local_target, write_plan


def _repository_with_snapshots(tmp_path, count: int) -> tuple[str, str]:
    data = tmp_path / "data"
    data.mkdir()
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"), files_source("config", [str(data)]))
    for i in range(count):
        (data / "f.txt").write_text(f"version {i}\n")
        assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    return plan, str(tmp_path / "repo")


def _opened(root: str) -> tuple[Repository, CountingStore]:
    store = CountingStore(LocalStore(root))
    repo = Repository(store)
    repo.open()
    store.reset()
    return repo, store


def _cache(tmp_path, repo: Repository) -> ManifestCache:
    return ManifestCache(str(tmp_path / "cache"), repo.config["id"])


def test_second_parent_search_reads_no_manifest_from_the_store(tmp_path, capsys):
    _, root = _repository_with_snapshots(tmp_path, 4)
    repo, store = _opened(root)
    cache = _cache(tmp_path, repo)
    first = repo.snapshots(cache)
    assert store.counts()["gets"] == 4  # each manifest once
    store.reset()
    again = repo.snapshots(cache)
    assert store.counts()["gets"] == 0 and store.counts()["lists"] == 1  # the listing only
    assert [s.id for s in again] == [s.id for s in first]
    assert [s.time for s in again] == sorted(s.time for s in first)


def test_a_damaged_or_planted_cached_manifest_is_dropped_and_read_from_the_store(tmp_path, capsys):
    _, root = _repository_with_snapshots(tmp_path, 2)
    repo, store = _opened(root)
    cache = _cache(tmp_path, repo)
    ids = [s.id for s in repo.snapshots(cache)]
    folder = tmp_path / "cache" / repo.config["id"] / "snapshots"
    (folder / ids[0]).write_bytes(b'{"forged": true}')  # a manifest that is not the one its id names
    store.reset()
    loaded = repo.snapshots(cache)
    assert store.counts()["gets"] == 1  # only the damaged one is read again
    assert loaded[0].id == ids[0] and loaded[0].source_names() == ["config"]
    assert layout.sha256((folder / ids[0]).read_bytes()) == ids[0]  # and the good copy replaced it


def test_a_forgotten_snapshot_leaves_the_cache(tmp_path, capsys):
    _, root = _repository_with_snapshots(tmp_path, 3)
    repo, _ = _opened(root)
    cache = _cache(tmp_path, repo)
    ids = [s.id for s in repo.snapshots(cache)]
    repo.forget(ids[0])
    assert [s.id for s in repo.snapshots(cache)] == ids[1:]
    assert sorted(os.listdir(tmp_path / "cache" / repo.config["id"] / "snapshots")) == sorted(ids[1:])


def test_verify_sees_a_damaged_manifest_in_the_store_whatever_the_cache_holds(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DR_CACHE_DIR", str(tmp_path / "cache"))
    plan, root = _repository_with_snapshots(tmp_path, 2)  # the backups filled the cache
    repo, _ = _opened(root)
    victim = repo.snapshots()[0].id  # the first backup's: the second one's parent search cached it
    assert (tmp_path / "cache" / repo.config["id"] / "snapshots" / victim).exists()
    path = os.path.join(root, layout.snapshot_key(victim))
    with open(path, "r+b") as handle:
        handle.write(b"X")
    capsys.readouterr()
    assert main(["verify", "--plan", plan, "--json"]) == Exit.INTEGRITY
    report = json.loads(capsys.readouterr().out)  # a problem in the report; the other snapshot checked
    assert any(f"snapshot {victim} is damaged" in p for p in report["problems"]) and report["snapshots"] == 1


def test_an_unwritable_cache_costs_only_the_reads_it_would_save(tmp_path, capsys, monkeypatch):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would go\n")
    monkeypatch.setenv("DR_CACHE_DIR", str(blocked))
    plan, root = _repository_with_snapshots(tmp_path, 2)
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    assert blocked.read_text().startswith("a file")


def test_without_dr_cache_dir_the_cache_is_under_xdg_cache_home(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _, root = _repository_with_snapshots(tmp_path, 2)
    repo, _ = _opened(root)
    oldest = repo.snapshots()[0].id
    assert os.listdir(tmp_path / "xdg" / "dr" / repo.config["id"] / "snapshots") == [oldest]


def test_off_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DR_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)  # "off" taken for a folder would appear here
    _repository_with_snapshots(tmp_path, 2)
    assert ManifestCache.default("0" * 32) is None
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "off").exists()
