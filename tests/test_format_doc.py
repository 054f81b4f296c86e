"""docs/format.md is sufficient: a reader written from it alone reads what dr writes.

dr's own code writes a real snapshot; `SpecReader` below reads it back using only the
standard library and pyrage, never dr.repository. If the document and the code drift apart,
this reader breaks. A second group of tests checks the document's field tables and worked
example against objects the code actually writes.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import re
from pathlib import Path

import pyrage
import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "format.md"
CHUNK = 1000  # a small piece size, so multi-chunk contents stay small; readers must not care


# -- the independent reader: written from docs/format.md, sections 3-9 and 22 ---------------------
class SpecError(Exception):
    pass


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class SpecReader:
    """A local-directory repository: key a/b/c is the file <root>/a/b/c; tmp/ is not ours."""

    def __init__(self, root: Path, identities: list[pyrage.x25519.Identity] = ()):
        self.root = root
        self.identities = list(identities)
        config = json.loads(self.get("config"))
        if config.get("format") != "dr-repository":
            raise SpecError("not a dr repository")
        if config.get("version") != 1:
            raise SpecError(f"unknown format version {config.get('version')}: refusing to read")
        self.config = config

    def get(self, key: str) -> bytes:
        try:
            return (self.root / key).read_bytes()
        except FileNotFoundError:
            raise SpecError(f"missing object {key}") from None

    def list(self, prefix: str) -> list[str]:
        keys = []
        for path in self.root.rglob("*"):
            key = path.relative_to(self.root).as_posix()
            if path.is_file() and key.startswith(prefix) and not key.startswith("tmp/"):
                keys.append(key)
        return sorted(keys)

    def verified(self, key: str, digest: str) -> bytes:
        data = self.get(key)
        if sha256(data) != digest:
            raise SpecError(f"{key} does not hash to its name")
        return data

    def blob(self, digest: str) -> bytes:
        return self.verified(f"blobs/{digest[:2]}/{digest}", digest)

    def snapshot_ids(self) -> list[str]:
        names = [k[len("snapshots/"):] for k in self.list("snapshots/")]
        return [n for n in names if re.fullmatch(r"[0-9a-f]{64}", n)]

    def manifest(self, snapshot_id: str) -> dict:
        return json.loads(self.verified(f"snapshots/{snapshot_id}", snapshot_id))

    def catalog(self, manifest: dict) -> list[dict]:
        text = gzip.decompress(self.blob(manifest["catalog"]["blob"])).decode("utf-8")
        lines = [json.loads(line) for line in text.split("\n") if line.strip()]
        if len(lines) != manifest["catalog"]["entries"]:
            raise SpecError("catalog line count differs from the manifest's entries")
        return [self.unsealed(line) for line in lines]

    def unsealed(self, line: dict) -> dict:
        """Section 8.1: a secret line's real identity and meta, from its sealed body."""
        meta = line.get("meta", {})
        if "sealed" not in meta or not self.identities:
            return line
        body = json.loads(pyrage.decrypt(base64.b64decode(meta["sealed"]), self.identities))
        plain = {k: v for k, v in meta.items() if k not in ("sealed", "sealed_mac")}
        return {**line, "identity": body["identity"], "meta": {**plain, **body["meta"]}}

    def content(self, artifact: dict) -> bytes:
        pieces = []
        for digest in artifact.get("chunks", []):
            chunk = self.blob(digest)
            pieces.append(pyrage.decrypt(chunk, self.identities) if artifact.get("encrypted") else chunk)
        data = b"".join(pieces)
        if len(data) != artifact["size"]:
            raise SpecError("content length differs from size")
        if "digest" in artifact and sha256(data) != artifact["digest"]:
            raise SpecError("content does not match its digest")
        return data


# -- writing with dr's code ---------------------------------------------------------------------
CONTENTS = {
    "small.txt": b"replicas: 3\n",
    "empty": b"",
    "multi.bin": os.urandom(2 * CHUNK + 500),
    "exact.bin": os.urandom(2 * CHUNK),  # a multiple of the piece size: no trailing empty chunk
}
SECRET = os.urandom(CHUNK + 17)


def _write_snapshot(root: Path, recipient: str):
    from dr.model.artifacts import Dependency, Sensitivity
    from dr.model.snapshots import SourceResult
    from dr.repository.repositories import Repository
    from dr.repository.stores.local import LocalStore
    from dr.repository.writing import SnapshotWriter

    repo = Repository(LocalStore(str(root)))
    repo.init()
    writer = SnapshotWriter(repo, [recipient], chunk_size=CHUNK)
    try:
        sink = writer.source("app", "files")
        for name, data in CONTENTS.items():
            sink.write("file", name, data, meta={"mode": 0o644}, change_token=f"t-{name}",
                       dependencies=[Dependency("image", "registry.example/app:1", "spec.image")])
        sink.write("file", "token", lambda: io.BytesIO(SECRET), sensitivity=Sensitivity.SECRET)
        failed = SourceResult("db", "files", error="OSError: unreachable")
        snapshot = writer.finish("demo", [sink.commit(), failed], tags=["nightly"])
    finally:
        writer.close()
    return repo, snapshot


@pytest.fixture(scope="module")
def keys():
    identity = pyrage.x25519.Identity.generate()
    return identity, str(identity.to_public())


@pytest.fixture
def written(tmp_path, keys):
    repo, snapshot = _write_snapshot(tmp_path / "repo", keys[1])
    return tmp_path / "repo", repo, snapshot


# -- the spec is sufficient ---------------------------------------------------------------------
def test_spec_reader_lists_verifies_and_reassembles(written, keys):
    root, _, snapshot = written
    reader = SpecReader(root, [keys[0]])
    assert reader.snapshot_ids() == [snapshot.id]
    manifest = reader.manifest(snapshot.id)
    assert manifest["plan"] == "demo" and manifest["tags"] == ["nightly"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", manifest["time"])
    holding = [s["name"] for s in manifest["sources"] if "error" not in s]
    assert holding == ["app"]
    assert [s["error"] for s in manifest["sources"] if s["name"] == "db"] == ["OSError: unreachable"]

    artifacts = {a["identity"]: a for a in reader.catalog(manifest)}
    assert set(artifacts) == set(CONTENTS) | {"token"}
    for name, data in CONTENTS.items():
        artifact = artifacts[name]
        assert reader.content(artifact) == data
        assert artifact["digest"] == sha256(data) and artifact["encrypted"] is False
        assert artifact["meta"]["change_token"] == f"t-{name}"
        assert len(artifact["chunks"]) == max(1, -(-len(data) // CHUNK))
    assert artifacts["empty"]["chunks"] == [sha256(b"")]


def test_a_secret_line_holds_its_name_keyed_as_section_8_1_says(written, keys):
    import hmac

    root, _, snapshot = written
    [stored] = [a for a in SpecReader(root).catalog(SpecReader(root).manifest(snapshot.id))
                if a["sensitivity"] == "secret"]
    key = hmac.new(b"dr name key v1", keys[1].strip().encode(), hashlib.sha256).digest()
    keyed = lambda text: "hmac-sha256:" + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()  # noqa: E731
    assert stored["identity"] == keyed(f"{stored['kind']}\x00token")
    opened = SpecReader(root, [keys[0]]).unsealed(stored)
    assert opened["identity"] == "token" and stored["meta"]["sealed_mac"] == keyed(json.dumps(
        {"identity": "token", "meta": {k: v for k, v in opened["meta"].items() if k not in (
            "recipients", "sops", "change_token", "provides")}}, sort_keys=True, separators=(",", ":")))


def test_secret_content_is_age_per_chunk_without_plaintext_digest(written, keys):
    root, _, snapshot = written
    reader = SpecReader(root, [keys[0]])
    token = next(a for a in reader.catalog(reader.manifest(snapshot.id)) if a["identity"] == "token")
    assert token["encrypted"] is True and token["sensitivity"] == "secret"
    assert "digest" not in token
    assert len(token["chunks"]) == 2  # each piece is its own complete age file
    for digest in token["chunks"]:
        assert reader.blob(digest).startswith(b"age-encryption.org/v1\n-> X25519 ")
    assert reader.content(token) == SECRET
    with pytest.raises(pyrage.DecryptError):
        SpecReader(root, [pyrage.x25519.Identity.generate()]).content(token)


def test_spec_reader_refuses_a_damaged_blob(written, keys):
    root, _, snapshot = written
    reader = SpecReader(root, [keys[0]])
    artifact = next(a for a in reader.catalog(reader.manifest(snapshot.id)) if a["identity"] == "multi.bin")
    path = root / "blobs" / artifact["chunks"][1][:2] / artifact["chunks"][1]
    data = bytearray(path.read_bytes())
    data[0] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(SpecError, match="does not hash"):
        reader.content(artifact)


def test_unknown_version_is_refused_by_dr_and_by_the_spec_reader(tmp_path):
    from dr.repository.repositories import Repository, RepositoryError
    from dr.repository.stores.local import LocalStore

    (tmp_path / "config").write_text(json.dumps({"format": "dr-repository", "version": 2}))
    with pytest.raises(SpecError, match="version"):
        SpecReader(tmp_path)
    with pytest.raises(RepositoryError, match="version"):
        Repository(LocalStore(str(tmp_path))).open()


# -- the document's tables and example match what the code writes --------------------------------
def _section(number: int) -> str:
    text = DOC.read_text()
    match = re.search(rf"^## {number}\. .*?(?=^## |\Z)", text, re.M | re.S)
    assert match, f"docs/format.md has no section {number}"
    return match.group(0)


def _tables(number: int) -> list[set[str]]:
    """First-column `names` of each table in a section, table by table."""
    tables: list[set[str]] = []
    in_table = False
    for line in _section(number).splitlines():
        if line.startswith("| Field"):
            tables.append(set())
            in_table = True
        elif in_table and line.startswith("|"):
            name = re.match(r"\| `([a-z_]+)`", line)
            if name:
                tables[-1].add(name.group(1))
        else:
            in_table = False
    return tables


def test_documented_fields_are_exactly_the_written_ones(written, keys):
    from dr.repository.locks import Lock

    root, repo, snapshot = written
    reader = SpecReader(root, [keys[0]])
    (config_fields,) = _tables(6)
    assert set(reader.config) == config_fields
    (artifact_fields,) = _tables(8)
    lines = reader.catalog(reader.manifest(snapshot.id))
    plain = next(a for a in lines if not a["encrypted"])
    secret = next(a for a in lines if a["encrypted"])
    assert set(plain) == artifact_fields
    assert set(secret) == artifact_fields - {"digest"}
    manifest_fields, source_fields = _tables(9)
    manifest = reader.manifest(snapshot.id)
    assert set(manifest) == manifest_fields
    assert set(manifest["catalog"]) == {"blob", "entries"}
    assert set().union(*(set(s) for s in manifest["sources"])) <= source_fields
    (lock_fields,) = _tables(10)
    with Lock(repo, exclusive=True, command="test").acquire():
        (key,) = reader.list("locks/")
        assert re.fullmatch(r"locks/\d{15}-[0-9a-f]{16}", key)
        assert set(json.loads(reader.get(key))) == lock_fields


def test_worked_example_manifest_hashes_to_its_id():
    section = _section(21)
    block = re.search(r"```json\n(\{\"catalog\".*?)```", section, re.S).group(1)
    manifest_bytes = "".join(block.splitlines()).encode()
    stated = re.search(r"is\s+`([0-9a-f]{64})`, the snapshot id", section).group(1)
    assert sha256(manifest_bytes) == stated
    assert f"snapshots/{stated}" in section
    manifest = json.loads(manifest_bytes)
    assert f"blobs/{manifest['catalog']['blob'][:2]}/{manifest['catalog']['blob']}" in section
