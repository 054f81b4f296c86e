"""DR copies of model weights (copy_artifacts): copy, record, verify, and the restore's check.

Layout of one copy, under copy_to:  <source>/<model>/v<N>/
    files/...           the version's artifacts, byte for byte
    dr-manifest.json    {"format", "version", "model", "model_version", "source", "files": [{path, size, sha256}]}
    dr-complete         the manifest's SHA-256, written last: a copy without it is not a copy
Write order: files, manifest, marker. A copy whose marker names its manifest's digest is
complete; the next backup reuses it without reading the source (a version's source is written
once and never changed by MLflow). An interrupted copy is redone file by file, skipping files
already copied with the manifest's size and digest (resumable).

Each complete copy is one `model-weights-copy` artifact: its content is the manifest, its meta
`provides` the version's source location (so the audit says "remapped" for weights in a lost
domain) and its dependency of kind `model-weights-copy` is where the copy is (judged like any
location). verify_recorded() checks what restore_outcome() checks before a restore relies on a
copy: marker, manifest digest, every file's size (and with read_data every byte's digest).
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
from typing import TYPE_CHECKING, BinaryIO

from dr.contract import ArtifactSink, ContentReader, CopyReport, Outcome, OutcomeStatus
from dr.exporters.mlflow.places import WeightsPlace, open_place
from dr.exporters.mlflow.reading import aliases_of
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.redaction import redact

if TYPE_CHECKING:
    from dr.exporters.mlflow import MlflowExporter
    from dr.exporters.mlflow.exporting import ModelRegistry

KIND = "model-weights-copy"
FORMAT = "dr-mlflow-weights-copy"
MANIFEST, MARKER = "dr-manifest.json", "dr-complete"


class CopyFailed(Exception):
    pass


def selected(selectors: list[str], model: dict, versions: list[dict]) -> list[dict]:
    """The versions copy_only picks: all, @alias, stage:NAME."""
    if "all" in selectors:
        return list(versions)
    aliases = aliases_of(model)
    picked = {aliases[s[1:]] for s in selectors if s.startswith("@") and s[1:] in aliases}
    stages = [s[6:] for s in selectors if s.startswith("stage:")]
    return [v for v in versions if str(v["version"]) in picked
            or any(fnmatch.fnmatchcase(v.get("current_stage") or "None", st) for st in stages)]


def canonical(record: dict) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode()


def copy_versions(x: "MlflowExporter", sink: ArtifactSink, registry: "ModelRegistry") -> None:
    o = x.options
    target = open_place(o.copy_to, o.copy_s3_endpoint_url or o.s3_endpoint_url)
    for model in registry.models:
        for v in selected(o.copy_only, model, registry.versions_of(model["name"])):
            where = registry.location(v)
            what = f"model {v['name']} version {v['version']}"
            if not where:
                continue  # exporting reported it (mlflow-source-unresolved)
            rel = f"{x.context.source}/{v['name']}/v{v['version']}"
            try:
                manifest, sha, copied = copy_one(x, registry, v, where, target, rel)
            except Exception as exc:  # one version's weights gone or unreadable: the rest go on
                x.context.finding("error", "mlflow-weights-copy-failed", f"{what}: weights at {redact(where)} "
                                  f"not copied: {type(exc).__name__}: {redact(str(exc))[:300]}",
                                  model=v["name"], version=v["version"])
                continue
            sink.transferred(copied)
            url = redact(target.url_of(rel))
            sink.write(KIND, f"{v['name']}/v{v['version']}", canonical(manifest),
                       sensitivity=x.context.sensitivity or Sensitivity.INTERNAL,
                       dependencies=[Dependency(KIND, url, f"DR copy of {what}'s weights")],
                       meta={"provides": [redact(where)], "copy": url, "manifest_sha256": sha,
                             "model": v["name"], "version": int(v["version"]),
                             "files": len(manifest["files"]), "bytes": sum(f["size"] for f in manifest["files"])},
                       change_token=f"{sha}:{url}")


def copy_one(x: "MlflowExporter", registry: "ModelRegistry", v: dict, where: str, target: WeightsPlace,
             rel: str) -> tuple[dict, str, int]:
    """(manifest, its sha256, bytes copied now): an existing complete copy is reused as it is."""
    marker, old = target.read(f"{rel}/{MARKER}"), target.read(f"{rel}/{MANIFEST}")
    if marker and old and hashlib.sha256(old).hexdigest() == marker.decode().strip():
        manifest = json.loads(old)
        if manifest.get("source") == redact(where):
            return manifest, marker.decode().strip(), 0
    source = open_place(where, x.options.s3_endpoint_url, registry.client)
    listed = sorted(source.files())
    if not listed:
        raise CopyFailed(f"nothing at {redact(where)}: the version's artifacts are gone")
    done = {f["path"]: f for f in (json.loads(old).get("files", []) if old else [])}
    files, copied = [], 0
    for path, size in listed:
        dest = f"{rel}/files/{path}" if path else f"{rel}/files/{where.rstrip('/').rsplit('/', 1)[-1]}"
        if path in done and done[path]["size"] == size and _digest_at(target, dest) == done[path]["sha256"]:
            files.append(done[path])
            continue
        with source.open(path) as stream:
            hashing = _Hashing(stream)
            read = target.put(dest, hashing, size)
        if read != size:
            raise CopyFailed(f"{path}: read {read} bytes, listed {size} (changed while copied)")
        files.append({"path": path, "size": size, "sha256": hashing.sha.hexdigest()})
        copied += size
    manifest = {"format": FORMAT, "version": 1, "model": v["name"], "model_version": int(v["version"]),
                "source": redact(where), "files": files}
    body = canonical(manifest)
    sha = hashlib.sha256(body).hexdigest()
    target.put_bytes(f"{rel}/{MANIFEST}", body)
    target.put_bytes(f"{rel}/{MARKER}", sha.encode())  # last: the copy is complete
    return manifest, sha, copied


class _Hashing(io.RawIOBase):
    """A read-only stream that hashes and counts what passes through it."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream, self.sha, self.size = stream, hashlib.sha256(), 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        data = self.stream.read(n if n and n > 0 else 8 << 20)
        self.sha.update(data)
        self.size += len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def _digest_at(place: WeightsPlace, rel: str) -> str | None:
    try:
        with place.open(rel) as stream:
            sha = hashlib.sha256()
            for piece in iter(lambda: stream.read(8 << 20), b""):
                sha.update(piece)
            return sha.hexdigest()
    except Exception:
        return None


# -- checking a recorded copy (dr verify, and restore before relying on it) ------------------------
def check(x: "MlflowExporter", artifact: Artifact, reader: ContentReader, read_data: bool) -> list[str]:
    """The problems of the copy this artifact records; [] when a restore may rely on it."""
    manifest_bytes = reader.read(artifact)
    sha = artifact.meta.get("manifest_sha256")
    url = str(artifact.meta.get("copy", ""))
    place = open_place(url, x.options.copy_s3_endpoint_url or x.options.s3_endpoint_url)
    problems = []
    marker, stored = place.read(MARKER), place.read(MANIFEST)
    if marker is None or marker.decode().strip() != sha:
        problems.append(f"{place.url_of(MARKER)}: missing or not the recorded manifest digest")
    if stored is None or hashlib.sha256(stored).hexdigest() != sha or hashlib.sha256(manifest_bytes).hexdigest() != sha:
        problems.append(f"{place.url_of(MANIFEST)}: missing or differs from the snapshot's record")
    manifest = json.loads(manifest_bytes)
    sizes = dict(place.files())
    for f in manifest["files"]:
        rel = f"files/{f['path']}" if f["path"] else next((k for k in sizes if k.startswith("files/")), "files/")
        if sizes.get(rel) != f["size"]:
            problems.append(f"{place.url_of(rel)}: {sizes.get(rel, 'missing')} bytes, recorded {f['size']}")
        elif read_data and _digest_at(place, rel) != f["sha256"]:
            problems.append(f"{place.url_of(rel)}: content differs from its recorded SHA-256")
    return problems


def verify_recorded(x: "MlflowExporter", artifacts: list[Artifact], reader: ContentReader,
                    read_data: bool) -> list[CopyReport]:
    reports = []
    for artifact in artifacts:
        what = f"weights of {artifact.meta.get('model')} version {artifact.meta.get('version')}"
        try:
            problems = check(x, artifact, reader, read_data)
        except Exception as exc:  # an unreachable place or a damaged record: a problem, not a crash
            problems = [f"{type(exc).__name__}: {redact(str(exc))[:300]}"]
        reports.append(CopyReport(str(artifact.meta.get("copy", artifact.identity)), what, problems,
                                  {"model": artifact.meta.get("model"), "version": artifact.meta.get("version")}))
    return reports


def restore_outcome(x: "MlflowExporter", artifact: Artifact, reader: ContentReader) -> Outcome:
    """A copy stays where it is (weights are loaded from it, not moved): checked, then skipped."""
    try:
        problems = check(x, artifact, reader, read_data=False)
    except Exception as exc:
        problems = [f"{type(exc).__name__}: {redact(str(exc))[:300]}"]
    if problems:
        return Outcome(artifact.identity, OutcomeStatus.FAILED, "DR copy unusable: " + "; ".join(problems))
    return Outcome(artifact.identity, OutcomeStatus.SKIPPED,
                   f"DR copy at {artifact.meta.get('copy')} checked ({artifact.meta.get('files')} files); it stays "
                   "there: --sources-from-copies points the restored version at it")
