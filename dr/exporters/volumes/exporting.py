"""One claim's backup: snapshot (or live volume), mover Job, the tree into the sink.

The mover lists the tree (wire.py /entries). Every directory, symlink and large file becomes an
artifact whose change token is its kind, size, mtime, mode, owner and link target; files under
`pack_below` go into packs (packing.py: one artifact for many small files of a directory, its
token their tokens'). The sink is asked which files and packs it already holds
(ArtifactSink.unchanged) and the mover streams the others in one request (/read), in that
order, so an unchanged volume moves nothing but its listing and uploads nothing.
Last comes the claim's own artifact (kind `volume`): the claim as restore creates it, and the
counts; it provides the claim's `volume-data` references (see provided_references), so the
audit counts on this copy when the volume's own place is lost.
"""

from __future__ import annotations

import fnmatch
import hashlib
import io
import json
from dataclasses import dataclass, field

from dr.contract import ArtifactSink, ExportContext
from dr.exporters.volumes.cluster import Cluster, lines
from dr.exporters.volumes.hooks import Hooks
from dr.exporters.volumes.packing import PACK_KIND, Pack, change_token, facts, packs_of
from dr.exporters.volumes.selecting import Claim
from dr.exporters.volumes.temporaries import ClaimGone, Mover, Run, VolumeError, path_of
from dr.exporters.volumes.wire import PORT, TOKEN_HEADER, Entry, FrameFailed, FrameReader, WireError, line, read_line
from dr.model.artifacts import Dependency, Sensitivity

CLAIM_KIND = "volume"
ENTRY_KINDS = {"file": "volume-file", "directory": "volume-directory", "symlink": "volume-symlink"}
DEPENDENCY_KIND = "volume-data"  # what the kubernetes exporter records for each claim
DROPPED_ANNOTATIONS = ("pv.kubernetes.io/", "volume.beta.kubernetes.io/", "volume.kubernetes.io/",
                       "kubectl.kubernetes.io/last-applied-configuration")


@dataclass
class Tally:
    entries: int = 0
    files: int = 0
    bytes: int = 0
    read: int = 0  # files the mover streamed (changed or new)
    unreadable: list[str] = field(default_factory=list)


def entry_identity(claim_key: str, path: str) -> str:
    return f"{claim_key}/{path}"


def claim_manifest(claim: Claim) -> dict:
    """The claim as restore creates it: no binding, no status, no server fields."""
    meta, spec = claim.obj["metadata"], claim.obj.get("spec") or {}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if not k.startswith(DROPPED_ANNOTATIONS)}
    capacity = ((claim.obj.get("status") or {}).get("capacity") or {}).get("storage")
    out = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                        **({"labels": meta["labels"]} if meta.get("labels") else {}),
                        **({"annotations": annotations} if annotations else {})},
           "spec": {k: spec[k] for k in ("accessModes", "resources", "storageClassName", "volumeMode")
                    if k in spec}}
    return {"claim": out, "capacity": capacity, "provisioner": claim.provisioner, "workloads": claim.workloads}


def provided_references(server: str, claim: Claim, context: ExportContext) -> list[str]:
    """The references this copy brings back: the claim's own API URL (how the kubernetes
    exporter records an in-cluster claim), and every `volume-data` reference another source of
    the plan recorded for the same namespace and name (a zone's `volume://zone/ns/name`)."""
    own = f"{server}/api/v1/namespaces/{claim.namespace}/persistentvolumeclaims/{claim.name}"
    refs = [own, f"volume:///{claim.namespace}/{claim.name}"]
    for dep in context.plan_dependencies():
        if dep.kind != DEPENDENCY_KIND or dep.reference in refs:
            continue
        if dep.reference.startswith("volume://") and dep.reference.endswith(f"/{claim.namespace}/{claim.name}") \
                and dep.reference.count("/") == 4:
            refs.append(dep.reference)
    return refs


class ClaimBackup:
    """The copy of one claim into the sink, through a mover."""

    def __init__(self, exporter, cluster: Cluster, run: Run, sink: ArtifactSink, claim: Claim):
        self.exporter, self.cluster, self.run, self.sink, self.claim = exporter, cluster, run, sink, claim
        self.options = exporter.options
        self.sensitivity = exporter.context.sensitivity or Sensitivity.SECRET
        self.tally = Tally()

    def run_copy(self) -> Tally:
        if self.cluster.get(path_of(self.claim.namespace, "persistentvolumeclaims", self.claim.name)) is None:
            raise ClaimGone(f"{self.claim.key}: deleted during the backup, before its copy began")
        hooks = Hooks(self.cluster, self.claim, self.options.hooks, warn=self._hook_failed,
                      log=self.exporter.context.log)
        thawed = False
        try:
            hooks.pre()
            copy, mounted, snapshot_class = self._source()
            if copy == "snapshot":  # the snapshot is taken: the workload need not wait for the copy
                thawed = True
                hooks.post()
            node = self.claim.node if copy == "live" else None
            mover = self.run.mover(self.claim.namespace, mounted, write=False, for_claim=self.claim.key, node=node)
            entries = self.entries(mover)
            self._write_entries(mover, entries)
            self._write_claim(copy, snapshot_class)
            self.exit(mover)
        finally:
            if not thawed:
                hooks.post()
        return self.tally

    def _hook_failed(self, message: str) -> None:
        self.exporter.context.finding("warning", "volumes-hook-failed", message, claim=self.claim.key)

    def _source(self) -> tuple[str, str, str]:
        """("snapshot" or "live", the claim the mover mounts, the snapshot class used)."""
        snapshot_class = None if self.options.snapshot == "never" else self.exporter.snapshot_class(self.claim)
        if snapshot_class:
            snapshot = self.run.snapshot(self.claim.namespace, self.claim.name, snapshot_class,
                                         self.options.snapshot_timeout_seconds)
            return "snapshot", self.run.claim_from(snapshot, self.claim.obj), snapshot_class
        if self.options.snapshot == "always":
            raise VolumeError(f"{self.claim.key}: no VolumeSnapshotClass for its driver "
                              f"{self.claim.provisioner or '(none)'}, and options.snapshot is always")
        self.exporter.context.finding(
            "warning", "volumes-live-copy",
            f"{self.claim.key}: copied from the live volume (no VolumeSnapshotClass for driver "
            f"{self.claim.provisioner or '(none)'}): files written during the copy may be inconsistent; "
            "stop or quiesce the workload, or give its driver a VolumeSnapshotClass", claim=self.claim.key)
        return "live", self.claim.name, ""

    def _headers(self, mover: Mover) -> dict:
        return {TOKEN_HEADER: mover.token}

    def entries(self, mover: Mover) -> list[Entry]:
        response = self.cluster.proxy(mover.namespace, mover.pod, PORT, "GET", "/entries",
                                      headers=self._headers(mover), timeout=self.options.job_timeout_seconds)
        entries, ended = [], False
        try:
            for raw in lines(response):
                item = _json(raw)
                if item.get("end"):
                    ended = True
                elif "error" in item:
                    if self.sink is not None:  # discover() only lists
                        self._unreadable(str(item.get("path")), str(item["error"]))
                else:
                    entry = Entry.from_json(item)
                    if not self._excluded(entry.path):
                        entries.append(entry)
        finally:
            response.release_conn()
        if not ended:
            raise VolumeError(f"{self.claim.key}: the mover's listing ended early")
        return entries

    def _excluded(self, path: str) -> bool:
        if path == ".":
            return False
        name = path.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path.split("/")[0], p)
                   or ("/" not in p and fnmatch.fnmatchcase(name, p)) for p in self.options.exclude)

    def _unreadable(self, path: str, error: str) -> None:
        self.tally.unreadable.append(path)
        self.exporter.context.finding("error", "volumes-unreadable",
                                      f"{self.claim.key}: {path}: {error}: not backed up", claim=self.claim.key,
                                      path=path)

    def _write_entries(self, mover: Mover, entries: list[Entry]) -> None:
        units, _ = packs_of(entries, self.options.pack_below)
        wanted = [u for u in units if self._wanted(u)]
        response = stream = None
        if wanted:
            paths = [e.path for u in wanted for e in (u.members if isinstance(u, Pack) else [u])]
            body = b"".join(line({"path": p}) for p in paths)
            response = self.cluster.proxy(mover.namespace, mover.pod, PORT, "POST", "/read", body=body,
                                          headers=self._headers(mover), timeout=self.options.job_timeout_seconds)
            stream = io.BufferedReader(response, 1 << 20)  # header lines are read a line at a time
        read = {id(u) for u in wanted}
        try:
            for unit in units:
                if isinstance(unit, Pack):
                    self._write_pack(unit, stream if id(unit) in read else None)
                else:
                    self._write_entry(unit, stream if id(unit) in read else None)
        finally:
            if response is not None:
                response.release_conn()

    def _wanted(self, unit: Entry | Pack) -> bool:
        """A file or pack the sink does not hold as it is now (its content must be read)."""
        if isinstance(unit, Pack):
            return not self.sink.unchanged(PACK_KIND, entry_identity(self.claim.key, unit.path),
                                           change_token(unit.members), sensitivity=self.sensitivity)
        return unit.kind == "file" and not self.sink.unchanged(
            ENTRY_KINDS["file"], entry_identity(self.claim.key, unit.path), unit.change_token,
            sensitivity=self.sensitivity)

    def _write_pack(self, pack: Pack, stream) -> None:
        """The pack's files, read whole (at most PACK_BYTES), as one artifact; a file the mover
        could not read whole is named and left out (the pack's token then differs, so the next
        backup reads it again)."""
        members, content = pack.members, b""
        if stream is not None:
            members, parts = [], []
            for entry in pack.members:
                data = self._frame_bytes(stream, entry)
                if data is not None:
                    members.append(entry)
                    parts.append(data)
            if not members:
                return
            content = b"".join(parts)
        self.sink.write(PACK_KIND, entry_identity(self.claim.key, pack.path),
                        content if stream is not None else _not_read(pack.members[0]),
                        sensitivity=self.sensitivity, meta={"files": [facts(e) for e in members], "members": {
                            entry_identity(self.claim.key, e.path): e.change_token for e in members}},
                        change_token=change_token(members))
        self.tally.entries += len(members)
        self.tally.files += len(members)
        self.tally.bytes += sum(e.size for e in members)
        self.tally.read += len(members) if stream is not None else 0

    def _frame_bytes(self, stream, entry: Entry) -> bytes | None:
        """One small file's frame, whole; None (named unreadable) when its trailer says it failed."""
        reader = self._frame(stream, entry)
        if reader is None:
            return None
        pieces = []
        try:
            while piece := reader.read():
                pieces.append(piece)
        except FrameFailed as exc:
            self._unreadable(entry.path, str(exc).split(": ", 1)[-1])
            return None
        return b"".join(pieces)

    def _write_entry(self, entry: Entry, stream) -> None:
        meta = {"mode": f"{entry.mode:04o}", "uid": entry.uid, "gid": entry.gid, "mtime_ns": entry.mtime_ns}
        content: object = b""
        reader = None
        if entry.kind == "file":
            meta["size"] = entry.size
            if entry.sparse:
                meta["sparse"] = True
            if stream is not None:
                reader = self._frame(stream, entry)
                if reader is None:
                    return
            content = (lambda: reader) if reader else _not_read(entry)
        elif entry.kind == "symlink":
            meta["target"] = entry.target
        try:
            self.sink.write(ENTRY_KINDS[entry.kind], entry_identity(self.claim.key, entry.path), content,
                            sensitivity=self.sensitivity, meta=meta, change_token=entry.change_token)
        except FrameFailed as exc:
            self._unreadable(entry.path, str(exc).split(": ", 1)[-1])
            return
        finally:
            if reader is not None and not reader.done:
                reader.drain()
        self.tally.entries += 1
        if entry.kind == "file":
            self.tally.files += 1
            self.tally.bytes += entry.size
            self.tally.read += reader is not None

    def _frame(self, stream, entry: Entry) -> FrameReader | None:
        header = read_line(stream)
        if header is None or header.get("path") != entry.path:
            raise WireError(f"{self.claim.key}: the mover sent {header!r} where {entry.path!r} was due")
        if "error" in header:
            self._unreadable(entry.path, str(header["error"]))
            return None
        return FrameReader(stream, entry.path, int(header["size"]))

    def _write_claim(self, copy: str, snapshot_class: str) -> None:
        manifest = claim_manifest(self.claim) | {"copy": copy, "snapshot_class": snapshot_class,
                                                 "entries": self.tally.entries, "files": self.tally.files,
                                                 "bytes": self.tally.bytes, "unreadable": len(self.tally.unreadable)}
        content = json.dumps(manifest, sort_keys=True, indent=1).encode()
        deps = [Dependency("image", self.options.image, "the mover Job that fills the volume runs dr's image")]
        meta = {"provides": provided_references(self.cluster.server, self.claim, self.exporter.context),
                "storage_class": self.claim.storage_class, "copy": copy, "files": self.tally.files,
                "bytes": self.tally.bytes}
        # the content is the token: an unchanged claim and tree re-use the record, too
        token = "claim:" + hashlib.sha256(content + json.dumps(meta, sort_keys=True).encode()).hexdigest()
        self.sink.write(CLAIM_KIND, self.claim.key, content, sensitivity=self.sensitivity, meta=meta,
                        dependencies=deps, change_token=token)

    def exit(self, mover: Mover) -> None:
        try:
            self.cluster.proxy(mover.namespace, mover.pod, PORT, "POST", "/exit", body=b"",
                               headers=self._headers(mover)).release_conn()
        except Exception as exc:  # the Job is deleted next in any case
            self.exporter.context.log(f"{self.claim.key}: mover did not exit cleanly: {exc}")


def _not_read(entry: Entry):
    def fail():
        raise WireError(f"{entry.path}: the sink asked for content it said it held (a race with pruning?)")
    return fail


def _json(raw: bytes) -> dict:
    try:
        item = json.loads(raw)
    except ValueError:
        raise WireError(f"the mover sent a line that is not JSON: {raw[:80]!r}") from None
    if not isinstance(item, dict):
        raise WireError(f"the mover sent {raw[:80]!r}")
    return item
