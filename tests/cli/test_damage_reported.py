"""Damage is reported as damage (issue 29): every damaged or hostile object of a real local
repository makes dr exit 6 with a message about the data, never another exit code or dr's own
exception text; one damaged snapshot does not stop verify, backup or prune.

dr runs in-process through its CLI entry (dr.cli.main.main), on a copy of one backed-up
repository per case.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository import layout
from tests.cli.planfiles import files_source, key_pair, local_target, write_plan

# Words that belong to dr's code, not to the data: none may reach the operator.
INTERNAL = ("Traceback", "bug in dr", "KeyError", "TypeError", "AttributeError", "IndexError")


def _dr(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


class World:
    """A backed-up plan (a plain and a secret files source, two snapshots) and a pristine copy
    of its repository; each case works on a fresh copy at `repo`."""

    def __init__(self, root: Path):
        self.root = root
        data = root / "cfg"
        (data / "sub").mkdir(parents=True)
        for i in range(3):
            (data / "sub" / f"f{i}.txt").write_text(f"line {i}\n" * 50)
        self.identity, recipient = key_pair(root)
        self.repo = root / "repo"
        self.plan = write_plan(root / "plan.yaml", local_target(self.repo),
                               files_source("config", [str(data)]) + files_source("keys", [str(data)], secret=True),
                               [recipient])
        assert _dr("backup", "--plan", self.plan, "-q")[0] == Exit.OK
        (data / "sub" / "new.txt").write_text("new")
        assert _dr("backup", "--plan", self.plan, "-q")[0] == Exit.OK
        self.pristine = root / "pristine"
        shutil.copytree(self.repo, self.pristine)

    def reset(self) -> None:
        shutil.rmtree(self.repo)
        shutil.copytree(self.pristine, self.repo)

    def manifests(self) -> list[Path]:
        """Manifest files, oldest snapshot first."""
        return sorted((self.repo / "snapshots").iterdir(), key=lambda p: json.loads(p.read_bytes())["time"])

    def blob(self, digest: str) -> Path:
        return self.repo / layout.blob_key(digest)

    def newest(self) -> dict:
        return json.loads(self.manifests()[-1].read_bytes())

    def catalog_lines(self) -> list[dict]:
        return [json.loads(line) for line in gzip.decompress(self.blob(self.newest()["catalog"]["blob"])
                                                             .read_bytes()).splitlines()]

    def verify(self) -> tuple[int, str]:
        return _dr("verify", "--plan", self.plan, "--read-data", "--identity", self.identity)

    def restore(self) -> tuple[int, str]:
        with tempfile.TemporaryDirectory(dir=self.root) as dest:
            return _dr("restore", "--plan", self.plan, "--source", "config", "--to", dest)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return World(tmp_path_factory.mktemp("damage"))


# -- 50 single-byte damages of each object kind ------------------------------------------------
def _objects(world: World) -> dict[str, tuple[Path, str]]:
    """Each object kind a restore of `config` reads: (its file, how dr names it)."""
    newest = world.newest()
    plain = next(a for a in world.catalog_lines() if a["source"] == "config" and a["kind"] == "file")
    return {"config": (world.repo / "config", "config"),
            "manifest": (world.manifests()[-1], world.manifests()[-1].name),
            "catalog": (world.blob(newest["catalog"]["blob"]), newest["catalog"]["blob"]),
            "blob": (world.blob(plain["chunks"][0]), plain["chunks"][0])}


def _damaged(data: bytes, rng: random.Random) -> bytes:
    """One byte flipped, replaced or cut at: never the same bytes."""
    while True:
        where, how = rng.randrange(len(data)), rng.choice(("flip", "set", "truncate"))
        out = bytearray(data)
        if how == "flip":
            out[where] ^= 1 << rng.randrange(8)
        elif how == "set":
            out[where] = rng.randrange(256)
        else:
            del out[where:]
        if bytes(out) != data:
            return bytes(out)


@pytest.mark.parametrize("kind", ["config", "manifest", "catalog", "blob"])
def test_fifty_single_byte_damages_each_exit_6_naming_the_object_when_a_restore_refuses(world, kind):
    rng = random.Random(f"damage-{kind}")
    refused = 0
    for _ in range(50):
        world.reset()
        path, name = _objects(world)[kind]
        path.write_bytes(_damaged(path.read_bytes(), rng))
        restored, said = world.restore()
        verified, report = world.verify()
        assert restored in (Exit.OK, Exit.INTEGRITY), said
        assert verified in (Exit.OK, Exit.INTEGRITY), report
        assert not any(word in said + report for word in INTERNAL), said + report
        if restored != Exit.OK:
            refused += 1
            assert verified == Exit.INTEGRITY and name[:8] in report, (kind, report)
    # Only the config has bytes whose change harms nothing (a hex digit of its id, a digit of its
    # date): 2 of these 50 (measured), which verify passes too.
    assert refused == 50 if kind != "config" else refused >= 45


# -- hostile catalogs and manifests, stored under their own digests -----------------------------
HOSTILE = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                    st.floats(allow_nan=False), st.sampled_from(["../../etc/passwd", "/etc/passwd", "a\x00b", "",
                                                                 "x" * 100_000, "ab" * 32, "..", "file"]),
                    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(),
                                                                         max_size=2))
ENTRY_FIELDS = ["source", "exporter", "kind", "identity", "size", "sensitivity", "chunks", "digest",
                "encrypted", "dependencies", "meta"]
MANIFEST_FIELDS = ["plan", "time", "hostname", "catalog", "sources", "stats", "tags"]
DELETE = object()


def _put(world: World, data: bytes) -> str:
    digest = layout.sha256(data)
    world.blob(digest).parent.mkdir(parents=True, exist_ok=True)
    world.blob(digest).write_bytes(data)
    return digest


def _write_manifest(world: World, manifest: dict) -> None:
    old = world.manifests()[-1]
    data = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    old.unlink()
    (world.repo / "snapshots" / layout.sha256(data)).write_bytes(data)


def _mutated(record: dict, field: str, value) -> dict:
    out = dict(record)
    if value is DELETE:
        out.pop(field, None)
    else:
        out[field] = value
    return out


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(which=st.integers(min_value=0, max_value=5), field=st.sampled_from(ENTRY_FIELDS),
       value=st.one_of(st.just(DELETE), HOSTILE))
@example(which=0, field="meta", value=DELETE).via("issue 29: 'KeyError: mode'")
@example(which=0, field="meta", value={"mode": 420, "mtime_ns": "x"}).via("wrong types")
@example(which=0, field="identity", value="../../etc/passwd").via("traversal")
@example(which=0, field="size", value=-1).via("negative")
def test_a_hostile_catalog_entry_is_refused_as_damage(world, which, field, value):
    world.reset()
    lines = world.catalog_lines()
    config = [i for i, a in enumerate(lines) if a["source"] == "config"]
    index = config[which % len(config)]
    lines[index] = _mutated(lines[index], field, value)
    text = b"".join(json.dumps(a, sort_keys=True, separators=(",", ":")).encode() + b"\n" for a in lines)
    manifest = world.newest()
    manifest["catalog"]["blob"] = _put(world, gzip.compress(text, mtime=0))
    _write_manifest(world, manifest)
    _refused_as_damage(world, field)


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(MANIFEST_FIELDS + ["catalog.blob", "catalog.entries"]),
       value=st.one_of(st.just(DELETE), HOSTILE))
def test_a_hostile_manifest_is_refused_as_damage(world, field, value):
    world.reset()
    manifest = world.newest()
    if field.startswith("catalog."):
        manifest["catalog"] = _mutated(manifest["catalog"], field.split(".")[1], value)
    else:
        manifest = _mutated(manifest, field, value)
    _write_manifest(world, manifest)
    _refused_as_damage(world, field)


def _refused_as_damage(world: World, field: str) -> None:
    """Exit 6 with a message about the data, or the hostile item refused with one (exit 3), or
    harmless (exit 0); never another code or dr's own words; verify agrees about damage."""
    restored, said = world.restore()
    verified, report = world.verify()
    assert not any(word in said + report for word in INTERNAL), said + report
    assert verified in (Exit.OK, Exit.INTEGRITY), report
    if restored == Exit.INTEGRITY:  # said about the data, and verify finds it too
        assert "damaged" in said and verified == Exit.INTEGRITY, (field, said, report)
    elif restored == Exit.PARTIAL:
        failed = [line for line in said.splitlines() if line.startswith("  failed ")]
        assert failed and all("damaged or hostile" in line and f"field '{field}" in line for line in failed), said
    else:
        assert restored == Exit.OK, said


@pytest.mark.parametrize("what", ["catalog", "manifest"])
def test_json_nested_past_reading_is_damage_not_a_bug(world, what):
    """A line of 100,000 nested arrays: json raises RecursionError, which is not a ValueError."""
    world.reset()
    nested = b"[" * 100_000 + b"]" * 100_000
    manifest = world.newest()
    if what == "catalog":
        manifest["catalog"]["blob"] = _put(world, gzip.compress(nested + b"\n", mtime=0))
        _write_manifest(world, manifest)
    else:
        world.manifests()[-1].unlink()
        (world.repo / "snapshots" / layout.sha256(nested)).write_bytes(nested)
    restored, said = world.restore()
    assert restored == Exit.INTEGRITY and "damaged" in said and not any(word in said for word in INTERNAL), said


# -- one damaged snapshot does not stop the others -----------------------------------------------
def test_one_damaged_manifest_stops_neither_verify_nor_backup_nor_prune(world, tmp_path, monkeypatch):
    world.reset()
    monkeypatch.setenv("DR_CACHE_DIR", "off")  # the parent search must meet the damage, not a cached copy
    older, newer = world.manifests()
    older.write_bytes(older.read_bytes().replace(b'"entries":', b'"entries": '))
    verified, report = world.verify()
    assert verified == Exit.INTEGRITY and older.name in report
    assert "2 snapshots" not in report and "1 snapshots" in report  # the intact one was checked
    code, said = _dr("backup", "--plan", world.plan)
    assert code == Exit.OK and older.name in said and "newest intact snapshot" in said
    assert "0 B uploaded" in said  # its parent (the intact newer snapshot) was found: nothing re-sent
    blobs = sorted(p.name for p in (world.repo / "blobs").rglob("*") if p.is_file())
    code, said = _dr("prune", "--plan", world.plan)
    assert code == Exit.INTEGRITY and "no blob was deleted" in said and "runbooks/damaged-snapshot.md" in said
    assert sorted(p.name for p in (world.repo / "blobs").rglob("*") if p.is_file()) == blobs
    code, listed = _dr("snapshots", "--plan", world.plan)
    assert code == Exit.INTEGRITY and f"{older.name[:8]}  DAMAGED" in listed and newer.name[:8] in listed
