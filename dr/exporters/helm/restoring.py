"""Restoring charts: into a directory that is a chart repository, or into an OCI registry.

`--to DIR`: each chart is written as `<name>-<version>.tgz` with its `.prov` beside it, and
`index.yaml` lists every chart of the directory (those already there kept), so the directory
can be served as a chart repository or read by `helm install DIR/<name>-<version>.tgz`.
Nothing of a chart is written before it verified (its digest, and a readable Chart.yaml);
each file goes to a `.dr-*` temporary name and is renamed into place, the `.prov` before the
`.tgz` and `index.yaml` after every chart, so a consumer never sees a chart without its
provenance nor an index entry without its chart, whatever is refused or killed.
`--to oci://HOST/PATH`: each chart is pushed to `HOST/PATH/<name>:<version>` with Helm's media
types (config, chart layer, provenance layer), as `helm push` does.

Before anything is written, the stored bytes are checked against the digest the source
published (meta `digest`): a chart whose stored bytes do not match is refused (`failed`), as
`dr verify` reports it. Outcomes: `planned` (dry run), `unchanged` (the destination holds the
same chart), `conflict` (it holds another; `--overwrite` replaces it), `restored`, `failed`.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import tempfile
from typing import TYPE_CHECKING, Iterator

import yaml

from dr.contract import ContentReader, Outcome, OutcomeStatus, RestoredContent, RestoreRequest
from dr.exporters.helm import records
from dr.exporters.helm.oci import CHART, CONFIG, MANIFEST, PROVENANCE, sha256
from dr.exporters.helm.references import OCI
from dr.exporters.helm.transport import ChartError, NotFound
from dr.model.artifacts import Artifact

if TYPE_CHECKING:
    from dr.exporters.helm.exporter import HelmExporter

PLAIN_HTTP = "plain-http"


class Stored:
    """A chart read back from the repository and checked against its published digest."""

    def __init__(self, artifact: Artifact, data: bytes) -> None:
        self.artifact, self.data = artifact, data
        self.meta = artifact.meta
        self.name, self.version = self.meta["name"], self.meta["version"]
        self.filename = f"{self.name}-{self.version}.tgz"
        prov = self.meta.get("provenance")
        self.provenance = prov.encode() if isinstance(prov, str) else None
        found = sha256(data)
        self.problem = "" if found == self.meta.get("digest") else (
            f"the stored chart's digest is {found}, not the {self.meta.get('digest')} its source published: refused")

    def chart_yaml(self) -> dict:
        with tarfile.open(fileobj=io.BytesIO(self.data), mode="r:gz") as tar:
            for member in tar.getmembers():
                if member.name.count("/") == 1 and member.name.endswith("/Chart.yaml"):
                    return yaml.safe_load(tar.extractfile(member).read()) or {}  # type: ignore[union-attr]
        raise ChartError(f"{self.filename}: no Chart.yaml in the chart")


def check_stored(artifact: Artifact, reader: ContentReader) -> Stored:
    return Stored(artifact, reader.read(artifact))


def restore_charts(exporter: "HelmExporter", artifacts: list[Artifact], reader: ContentReader,
                   request: RestoreRequest) -> Iterator[Outcome]:
    to = request.to or ""
    charts = [a for a in artifacts if a.kind == records.CHART]
    for artifact in artifacts:
        if artifact.kind == records.REPOSITORY:
            yield Outcome(artifact.identity, OutcomeStatus.SKIPPED, "the list of charts copied from this repository; "
                          "its charts are restored as items of their own")
    if not to:
        for artifact in charts:  # a whole-plan restore gets it from destinations(); --source needs --to
            yield Outcome(artifact.identity, OutcomeStatus.FAILED, "no destination: give --to DIR or --to "
                          "oci://HOST/PATH (a whole-plan restore uses the plan's chart-repository remap)")
    elif to.startswith(OCI):
        yield from OciRestore(exporter, to, request).run(charts, reader)
    else:
        yield from DirectoryRestore(to, request).run(charts, reader)


def install_hint(where: str, stored: "Stored", plain_http: bool = False) -> str:
    """The `helm upgrade --install` command from the DR copy: one per Helm release that runs the
    chart (meta `releases`), with that release's values as its restored Secret holds them
    (`helm get values`); placeholders for a chart no recorded release runs."""
    chart = f"{where} --version {stored.version}{' --plain-http' if plain_http else ''}" \
        if where.startswith(OCI) else where
    releases = [r for r in stored.meta.get("releases") or [] if isinstance(r, dict) and r.get("name")]
    if not releases:
        return (f"install with: helm upgrade --install RELEASE {chart} -n NAMESPACE -f VALUES (a release's "
                "values: its helm-release record in the kubernetes source)")
    commands = []
    for release in releases:
        name, namespace = release["name"], release.get("namespace") or "default"
        values = f"values-{namespace}-{name}.yaml"
        commands.append(f"helm get values {name} -n {namespace} -o yaml > {values} && "
                        f"helm upgrade --install {name} {chart} -n {namespace} -f {values}")
    return ("install with (each release's values from its Secret, restored by the kubernetes source): "
            + "; ".join(commands))


class DirectoryRestore:
    def __init__(self, to: str, request: RestoreRequest) -> None:
        self.to, self.request = to, request

    def run(self, artifacts: list[Artifact], reader: ContentReader) -> Iterator[Outcome]:
        restored: list[Stored] = []
        for artifact in artifacts:
            outcome, stored = self._one(artifact, reader)
            if stored is not None and outcome.status in (OutcomeStatus.RESTORED, OutcomeStatus.UNCHANGED):
                restored.append(stored)
            yield outcome
        if restored and not self.request.dry_run:
            write_index(self.to, restored)

    def _one(self, artifact: Artifact, reader: ContentReader) -> tuple[Outcome, Stored | None]:
        item = artifact.identity
        stored = check_stored(artifact, reader)
        if stored.problem:
            return Outcome(item, OutcomeStatus.FAILED, stored.problem), None
        try:
            stored.chart_yaml()  # the index entry needs it: a chart that has none is refused before any write
        except (ChartError, tarfile.TarError, OSError, yaml.YAMLError) as exc:
            return Outcome(item, OutcomeStatus.FAILED, f"{stored.filename}: not a readable chart ({exc}); "
                           "refused, nothing written"), None
        files = {}  # the .prov first, the chart last: a chart visible under its name has its provenance
        if stored.provenance is not None:
            files[stored.filename + ".prov"] = stored.provenance
        files[stored.filename] = stored.data
        present = {name: _read(os.path.join(self.to, name)) for name in files}
        where = os.path.join(self.to, stored.filename)
        if all(present[n] == data for n, data in files.items()):
            return Outcome(item, OutcomeStatus.UNCHANGED, f"{where} holds this chart already; "
                           + install_hint(where, stored)), stored
        differs = [n for n in files if present[n] is not None and present[n] != files[n]]
        if differs and not self.request.overwrite:
            return Outcome(item, OutcomeStatus.CONFLICT, f"{', '.join(differs)} in {self.to} differ from the "
                           "backup; --overwrite replaces them"), None
        if self.request.dry_run:
            return Outcome(item, OutcomeStatus.PLANNED, f"would write {where}" + (
                " and its .prov" if stored.provenance else "")), None
        os.makedirs(self.to, exist_ok=True)
        for name, data in files.items():
            _write_atomically(os.path.join(self.to, name), data)
        return Outcome(item, OutcomeStatus.RESTORED, f"{where} ({len(stored.data)} bytes, digest {stored.meta['digest']} "
                       f"checked{', with provenance' if stored.provenance else ''}); "
                       + install_hint(where, stored)), stored


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write_atomically(path: str, data: bytes) -> None:
    """A reader never sees half a file: a temporary name in the same folder, then a rename."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".dr-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # renamed only once on disk: a crash never leaves an empty chart
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_index(folder: str, charts: list[Stored]) -> None:
    """index.yaml over the directory's charts: the entries already there, with these charts'."""
    path = os.path.join(folder, "index.yaml")
    try:
        old = yaml.safe_load(_read(path) or b"") or {}
    except yaml.YAMLError:
        old = {}
    entries: dict[str, list[dict]] = {name: [e for e in versions if isinstance(e, dict)]
                                      for name, versions in (old.get("entries") or {}).items()
                                      if isinstance(versions, list)}
    for stored in charts:
        entry = {**stored.chart_yaml(), "urls": [stored.filename], "digest": stored.meta["digest"].split(":", 1)[1]}
        if stored.meta.get("created"):
            entry["created"] = stored.meta["created"]
        versions = [e for e in entries.get(stored.name, []) if str(e.get("version")) != stored.version]
        entries[stored.name] = versions + [entry]
    for name in entries:
        entries[name].sort(key=lambda e: str(e.get("version")), reverse=True)
    index = {"apiVersion": "v1", "entries": dict(sorted(entries.items()))}
    data = yaml.safe_dump(index, sort_keys=True).encode()
    if _read(path) != data:
        _write_atomically(path, data)


class OciRestore:
    def __init__(self, exporter: "HelmExporter", to: str, request: RestoreRequest) -> None:
        self.to, self.request = to.rstrip("/"), request
        host, _, self.prefix = self.to[len(OCI):].partition("/")
        self.plain = request.remap.get(PLAIN_HTTP) == "true"
        scheme = "http" if self.plain else exporter.options.scheme_for(host)
        self.registry = exporter.registry(host, scheme)
        self.plain = scheme == "http"

    def run(self, artifacts: list[Artifact], reader: ContentReader) -> Iterator[Outcome]:
        for artifact in artifacts:
            try:
                yield self._one(artifact, reader)
            except ChartError as exc:
                yield Outcome(artifact.identity, OutcomeStatus.FAILED, str(exc))

    def _one(self, artifact: Artifact, reader: ContentReader) -> Outcome:
        item = artifact.identity
        stored = check_stored(artifact, reader)
        if stored.problem:
            return Outcome(item, OutcomeStatus.FAILED, stored.problem)
        path = "/".join(p for p in (self.prefix, stored.name) if p)
        where = f"{OCI}{self.registry.host}/{path}"
        hint = install_hint(where, stored, self.plain)
        present = self._present(path, stored.version)
        if present == stored.meta["digest"] and (stored.provenance is None or self._has_prov(path, stored)):
            return Outcome(item, OutcomeStatus.UNCHANGED, f"{where}:{stored.version} holds this chart already; {hint}")
        if present is not None and not self.request.overwrite:
            return Outcome(item, OutcomeStatus.CONFLICT, f"{where}:{stored.version} holds another chart "
                           f"({present}); --overwrite replaces the tag")
        if self.request.dry_run:
            return Outcome(item, OutcomeStatus.PLANNED, f"would push {where}:{stored.version}")
        self._push(path, stored)
        return Outcome(item, OutcomeStatus.RESTORED, f"{where}:{stored.version} ({len(stored.data)} bytes, digest "
                       f"{stored.meta['digest']} checked{', with provenance' if stored.provenance else ''}); {hint}")

    def _present(self, path: str, version: str) -> str | None:
        """The chart layer digest the tag names now, or None."""
        try:
            return self.registry.chart_manifest(path, version).chart["digest"]
        except NotFound:
            return None

    def _has_prov(self, path: str, stored: Stored) -> bool:
        manifest = self.registry.chart_manifest(path, stored.version)
        return manifest.provenance is not None and manifest.provenance["digest"] == sha256(stored.provenance or b"")

    def _push(self, path: str, stored: Stored) -> None:
        """Bottom-up, as `helm push`: the blobs, then the manifest that names them."""
        config = json.dumps(stored.chart_yaml(), sort_keys=True, separators=(",", ":")).encode()
        layers = [{"mediaType": CHART, **self.registry.push_blob(path, stored.data)}]
        if stored.provenance is not None:
            layers.append({"mediaType": PROVENANCE, **self.registry.push_blob(path, stored.provenance)})
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST,
                    "config": {"mediaType": CONFIG, **self.registry.push_blob(path, config)}, "layers": layers,
                    "annotations": {"org.opencontainers.image.title": stored.name,
                                    "org.opencontainers.image.version": stored.version}}
        self.registry.push_manifest(path, stored.version, json.dumps(manifest, sort_keys=True).encode())


def restored_charts(exporter: "HelmExporter", artifacts: list[Artifact], reader: ContentReader,
                    request: RestoreRequest) -> Iterator[RestoredContent]:
    """What the destination of restore_charts(artifacts, reader, request) holds of each chart
    (Exporter.restored_content): the chart's bytes hashed against the catalog's digest, its
    provenance against the one recorded, and where a directory's index.yaml names it."""
    to = request.to or ""
    charts = [a for a in artifacts if a.kind == records.CHART]
    if not to or not charts:
        return
    oci = OciRestore(exporter, to, request) if to.startswith(OCI) else None
    for artifact in charts:
        name, version = artifact.meta["name"], artifact.meta["version"]
        if oci is None:
            restored = _directory_fingerprint(to, name, version)
        else:
            restored = _registry_fingerprint(oci, "/".join(p for p in (oci.prefix, name) if p), version)
        yield RestoredContent(artifact.identity, restored=restored, backed_up=_backed_up(artifact, reader, oci is None))


def _fingerprint(chart: str, provenance: str | None, index: str | None = None) -> str:
    """One line naming the chart's sha256, its provenance's (or none) and, for a directory, the
    digest index.yaml lists for it (or none)."""
    line = f"chart {chart}; provenance {provenance or 'none'}"
    return line if index is None else f"{line}; index.yaml digest {index or 'none'}"


def _backed_up(artifact: Artifact, reader: ContentReader, directory: bool) -> str:
    if artifact.digest:
        chart = f"sha256:{artifact.digest}"
    else:  # a secret artifact's catalog holds no plaintext digest: the plaintext as read
        chart = sha256(reader.read(artifact))
    prov = artifact.meta.get("provenance")
    provenance = sha256(prov.encode()) if isinstance(prov, str) else None
    return _fingerprint(chart, provenance, str(artifact.meta.get("digest") or "") if directory else None)


def _directory_fingerprint(to: str, name: str, version: str) -> str:
    filename = f"{name}-{version}.tgz"
    data = _read(os.path.join(to, filename))
    if data is None:
        return ""
    prov = _read(os.path.join(to, filename + ".prov"))
    return _fingerprint(sha256(data), sha256(prov) if prov is not None else None, _indexed(to, name, version))


def _indexed(to: str, name: str, version: str) -> str:
    """The digest the directory's index.yaml lists for name/version ("" when it lists none)."""
    try:
        index = yaml.safe_load(_read(os.path.join(to, "index.yaml")) or b"") or {}
    except yaml.YAMLError:
        return ""
    entries = (index.get("entries") or {}).get(name) if isinstance(index, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and str(entry.get("version")) == version and entry.get("digest"):
            return f"sha256:{entry['digest']}"
    return ""


def _registry_fingerprint(oci: "OciRestore", path: str, version: str) -> str:
    """The blobs the tag names now, read back and hashed (the registry's word is not taken)."""
    try:
        manifest = oci.registry.chart_manifest(path, version)
    except NotFound:
        return ""
    chart = sha256(oci.registry.blob(path, manifest.chart["digest"]))
    prov = manifest.provenance and sha256(oci.registry.blob(path, manifest.provenance["digest"]))
    return _fingerprint(chart, prov or None)
