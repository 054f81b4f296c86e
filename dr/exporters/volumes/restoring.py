"""Restore: each claim created in the destination cluster and filled by a mover, verified.

Per claim: the namespace if it is missing, the claim (its storage class remapped, its size at
least what the original held), a mover Job with the claim mounted read-write, every entry
streamed to it (wire.py /write, each file's digest in its trailer), the mover's digests of the
files as read back from the volume compared with the bytes read from the repository (each blob
verified as it was read), then /commit renames the staged tree into place. Only then is the
claim restored; the workloads that mount it come after (the restore's @provider rule: this
source provides the claims' `volume-data` references the kubernetes source depends on).

An existing claim is a conflict (its data is someone's) unless --overwrite; with it, the staged
tree replaces the volume's top-level entries. A volume too small (ENOSPC) fails the claim with
nothing placed: the mover removes its staging directory.
"""

from __future__ import annotations

import collections
import hashlib
import json
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator
from urllib.parse import quote

from dr.contract import ContentReader, IntegrityError, Outcome, RestoreRequest
from dr.contract import OutcomeStatus as Status
from dr.exporters.volumes.cluster import Cluster, ClusterError, lines
from dr.exporters.volumes.exporting import CLAIM_KIND, ENTRY_KINDS
from dr.exporters.volumes.movertree import safe_parts
from dr.exporters.volumes.packing import PACK_KIND, members_of, split
from dr.exporters.volumes.temporaries import Mover, Run, VolumeError
from dr.exporters.volumes.wire import ANSWER_HEADER, MOVERS_OWN, PORT, TOKEN_HEADER, Entry, WireError, line
from dr.model.artifacts import Artifact

KIND_OF = {v: k for k, v in ENTRY_KINDS.items()}
UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def quantity(text: str | None) -> int:
    """Bytes of a Kubernetes quantity ("10Gi", "500M", "1073741824"); 0 when absent or odd."""
    if not text:
        return 0
    for suffix, factor in UNITS.items():
        if text.endswith(suffix) and text[:-len(suffix)].replace(".", "", 1).isdigit():
            return int(float(text[:-len(suffix)]) * factor)
    return int(text) if text.isdigit() else 0


def group(artifacts: list[Artifact]) -> dict[str, tuple[Artifact | None, list[Artifact]]]:
    """claim key -> (its `volume` artifact, its entries in catalog order)."""
    claims: dict[str, Artifact] = {}
    entries: dict[str, list[Artifact]] = defaultdict(list)
    for artifact in artifacts:
        if artifact.kind == CLAIM_KIND:
            claims[artifact.identity] = artifact
        elif artifact.kind in KIND_OF or artifact.kind == PACK_KIND:
            namespace, name, _ = (artifact.identity.split("/", 2) + ["", ""])[:3]
            entries[f"{namespace}/{name}"].append(artifact)
    return {key: (claims.get(key), entries.get(key, [])) for key in sorted(set(claims) | set(entries))}


def entry_of(artifact: Artifact) -> Entry:
    """The entry an artifact records; WireError when the catalog's facts are damaged or hostile."""
    path = artifact.identity.split("/", 2)[2] if artifact.identity.count("/") >= 2 else ""
    safe_parts(path)  # raises on '..', absolute or empty components
    meta = artifact.meta or {}
    try:
        entry = Entry(path, KIND_OF[artifact.kind], int(str(meta["mode"]), 8), int(meta["uid"]), int(meta["gid"]),
                      int(meta["mtime_ns"]), int(meta.get("size", artifact.size if artifact.kind == "volume-file" else 0)),
                      str(meta.get("target", "")), bool(meta.get("sparse", False)))
    except (KeyError, TypeError, ValueError) as exc:
        raise WireError(f"{artifact.identity}: catalog facts unusable: {exc}") from None
    if not 0 <= entry.mode <= 0o7777 or entry.size != artifact.size or (entry.kind == "symlink" and not entry.target):
        raise WireError(f"{artifact.identity}: catalog facts unusable (mode {entry.mode:o}, size {entry.size})")
    return entry


def entries_of(artifact: Artifact) -> list[Entry]:
    """The entries an artifact records: a pack's files, or the one entry; WireError when damaged."""
    if artifact.kind == PACK_KIND:
        return members_of(artifact.identity, artifact.meta, artifact.size)
    return [entry_of(artifact)]


def items_of(artifact: Artifact) -> list[tuple[str, str | None]]:
    """(the item an outcome names, its path) for each file or entry the artifact records: a
    pack's files one by one, as their own artifacts would be (a damaged pack: the pack)."""
    claim_key = "/".join(artifact.identity.split("/", 2)[:2])
    try:
        return [(f"{claim_key}/{e.path}", e.path) for e in entries_of(artifact)]
    except WireError:
        return [(artifact.identity, None)]


def catalog_problems(artifacts: list[Artifact]) -> list[str]:
    """What restore() would refuse as damage, for dr verify: bad paths and facts, entries
    without their claim, a claim manifest missing."""
    problems = []
    for key, (claim, entries) in group(artifacts).items():
        if claim is None:
            problems.append(f"{key}: {len(entries)} entries but no `volume` artifact for the claim")
        seen: set[str] = set()
        for artifact in entries:
            try:
                recorded = entries_of(artifact)
            except WireError as exc:
                problems.append(str(exc))
                continue
            for entry in recorded:
                if entry.path in seen:
                    problems.append(f"{key}/{entry.path}: recorded twice")
                seen.add(entry.path)
    return problems


class ClaimRestore:
    def __init__(self, cluster: Cluster, run: Run, reader: ContentReader, request: RequestView):
        self.cluster, self.run, self.reader, self.request = cluster, run, reader, request
        self.empty = False  # the existing claim holds nothing (a workload's new claim, a killed restore's)

    def restore(self, key: str, claim: Artifact, entries: list[Artifact]) -> Iterator[Outcome]:
        manifest = json.loads(self.reader.read(claim))
        body = self.request.claim_body(manifest)
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        target = f"{namespace}/{name}"
        existing = self.cluster.get(f"/api/v1/namespaces/{quote(namespace)}/persistentvolumeclaims/{quote(name)}")
        differing: dict[str, str] | None = None  # None: a new claim, everything differs
        if existing is not None:
            differing = self._difference(namespace, name, target, entries)
            if not differing:
                yield from self._all(claim, entries, Status.UNCHANGED, f"claim {target} holds the backup's files")
                return
            if not self.request.overwrite and not self.empty:
                yield from self._split(claim, entries, differing, Status.CONFLICT,
                                       f"claim {target}: --overwrite replaces it with the backup's")
                return
        if self.request.dry_run:
            if differing is not None:
                yield from self._split(claim, entries, differing, Status.PLANNED, f"would be replaced in claim {target}")
                return
            yield from self._all(claim, entries, Status.PLANNED, f"would create claim {target} and fill it "
                                 f"({manifest.get('files', 0)} files, {manifest.get('bytes', 0)} bytes)")
            return
        if existing is None:
            self._namespace(namespace)
            self.cluster.create(f"/api/v1/namespaces/{quote(namespace)}/persistentvolumeclaims", body)
        mover = self.run.mover(namespace, name, write=True, for_claim=target)
        try:
            placed = self._fill(mover, entries)
        finally:
            self._exit(mover)
            self.run.remove_for(target)
        if differing is not None:
            yield from self._split(claim, entries, differing, Status.RESTORED,
                                   f"written to claim {target}, read back and verified")
            return
        yield from (Outcome(item, Status.RESTORED, f"written to claim {target}, read back and verified")
                    for a in entries for item, _ in items_of(a))
        yield Outcome(claim.identity, Status.RESTORED, f"claim {target}: {placed} files written and verified")

    @staticmethod
    def _split(claim: Artifact, entries: list[Artifact], differing: dict[str, str], status: Status,
               reason: str) -> Iterator[Outcome]:
        """`status` for the entries (and the claim record) that differ, unchanged for the others."""
        for item, path in [*(i for a in entries for i in items_of(a)), (claim.identity, "")]:
            why = differing.get(path)
            yield Outcome(item, status if why else Status.UNCHANGED, f"{why}: {reason}" if why else "already held")

    def _difference(self, namespace: str, name: str, target: str, entries: list[Artifact]) -> dict[str, str]:
        """How the existing claim's tree differs from the backup's (empty: it does not), read by
        a read-only mover: the entries' facts, then each file's digest against the repository's bytes."""
        mover = self.run.mover(namespace, name, write=False, for_claim=target)
        try:
            return self._compare(mover, [(a, entries_of(a)) for a in entries])
        finally:
            self._exit(mover)
            self.run.remove_for(target)

    def _compare(self, mover: Mover, units: list[tuple[Artifact, list[Entry]]]) -> dict[str, str]:
        """Path -> how it differs, for each backed-up entry the claim does not hold as backed up
        ("" stands for the claim itself: entries it holds that the backup has not)."""
        headers = {TOKEN_HEADER: mover.token}
        response = self.cluster.proxy(mover.namespace, mover.pod, PORT, "GET", "/entries", headers=headers)
        found = {}
        for raw in lines(response):
            item = json.loads(raw)
            if "kind" in item:
                found[item["path"]] = Entry.from_json(item).to_json()
        response.release_conn()
        for name in MOVERS_OWN:
            found.pop(name, None)
        self.empty = set(found) <= {".", "lost+found"}
        mine = {e.path: e.to_json() for _, recorded in units for e in recorded}
        differing = {p: "missing from the claim" for p in mine.keys() - found.keys()}
        extra = sorted(found.keys() - mine.keys())
        if extra:
            differing[""] = f"the claim holds {len(extra)} entries the backup has not (first: {extra[0]})"
        differing |= {p: "other mode, owner, time, size or target" for p in mine.keys() & found.keys()
                      if mine[p] != found[p] and not (p == "." and _root_only(mine[p], found[p]))}
        # a pack is read when any of its files has still to be compared (its others' facts may differ)
        units = [(a, recorded) for a, recorded in units
                 if any(e.kind == "file" and e.path not in differing for e in recorded)]
        body = b"".join(line({"path": e.path}) for _, recorded in units for e in recorded
                        if e.path not in differing)
        response = self.cluster.proxy(mover.namespace, mover.pod, PORT, "POST", "/digests", body=body, headers=headers)
        digests = {item["path"]: item.get("sha256") for item in map(json.loads, lines(response))}
        response.release_conn()
        for artifact, recorded in units:
            if artifact.kind == PACK_KIND:
                found_digests = [hashlib.sha256(p).hexdigest() for p in split(self._pack_bytes(artifact), recorded)]
            else:
                digest = hashlib.sha256()
                with self.reader.open(artifact) as stream:
                    while data := stream.read(1 << 20):
                        digest.update(data)
                found_digests = [digest.hexdigest()]
            for entry, found_digest in zip(recorded, found_digests):
                if entry.path not in differing and digests.get(entry.path) != found_digest:
                    differing[entry.path] = "other bytes"
        return differing

    def _pack_bytes(self, artifact: Artifact) -> bytes:
        data = self.reader.read(artifact)
        if len(data) != artifact.size:
            raise WireError(f"{artifact.identity}: the pack holds {len(data)} bytes, its line says {artifact.size}")
        return data

    def _namespace(self, namespace: str) -> None:
        if self.cluster.get(f"/api/v1/namespaces/{quote(namespace)}") is None:
            try:
                self.cluster.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                           "metadata": {"name": namespace}})
            except ClusterError as exc:
                if exc.status != 409:
                    raise

    def _fill(self, mover: Mover, artifacts: list[Artifact]) -> int:
        """Every entry streamed to the mover and staged, read back, compared, then committed.
        The entries are worked out as they are sent (a pack's files held one pack at a time),
        after one pass that refuses damaged facts before anything is written."""
        for artifact in artifacts:
            entries_of(artifact)
        sent: list[bytes] = []  # each file's digest, in the order sent (not keyed: 100,000 paths again)

        def frames() -> Iterator[bytes]:
            for artifact, recorded, ahead in read_ahead(self.reader, artifacts):
                if artifact.kind == PACK_KIND:
                    data = ahead.result() if ahead is not None else self._pack_bytes(artifact)
                    if len(data) != artifact.size:
                        raise WireError(f"{artifact.identity}: the pack holds {len(data)} bytes, "
                                        f"its line says {artifact.size}")
                    frames = []  # the pack's frames sent as one piece: a write per file cost more
                    for entry, piece in zip(recorded, split(data, recorded)):
                        sent.append(hashlib.sha256(piece).digest())
                        frames += [line(entry.to_json()), piece, line({"ok": True, "sha256": sent[-1].hex()})]
                    yield b"".join(frames)
                    continue
                (entry,) = recorded
                yield line(entry.to_json())
                if entry.kind != "file":
                    continue
                # a recorded plaintext digest is checked by the reader before the last bytes come:
                # it is the trailer; a secret's (none recorded) is computed on the way
                digest = None if artifact.digest else hashlib.sha256()
                if ahead is not None:
                    data = ahead.result()
                    if digest is not None:
                        digest.update(data)
                    yield data
                else:
                    for data in self.reader.pieces(artifact):  # views of the chunks, not copies
                        if digest is not None:
                            digest.update(data)
                        yield data
                sent.append(bytes.fromhex(artifact.digest) if artifact.digest else digest.digest())
                yield line({"ok": True, "sha256": sent[-1].hex()})

        try:
            response = self.cluster.proxy(mover.namespace, mover.pod, PORT, "PUT", "/write", body=frames(),
                                          headers={TOKEN_HEADER: mover.token, ANSWER_HEADER: "differing"},
                                          timeout=self.run.job_seconds)
        except ClusterError as exc:
            raise VolumeError(_write_refusal(exc)) from None
        answer = json.loads(response.read() or b"{}")
        response.release_conn()
        wrong = _differing(answer, sent, artifacts)
        if wrong:
            self._post(mover, "/abort")
            raise VolumeError(f"{len(wrong)} files read back from the volume differ from the backup "
                              f"(first: {wrong[0]}): nothing was placed")
        self._post(mover, "/commit")
        return len(sent)

    def _post(self, mover: Mover, path: str) -> dict:
        response = self.cluster.proxy(mover.namespace, mover.pod, PORT, "POST", path, body=b"",
                                      headers={TOKEN_HEADER: mover.token})
        data = json.loads(response.read() or b"{}")
        response.release_conn()
        return data

    def _exit(self, mover: Mover) -> None:
        try:
            self._post(mover, "/exit")
        except (ClusterError, ValueError):
            pass  # the Job is deleted next in any case

    @staticmethod
    def _all(claim: Artifact, entries: list[Artifact], status: Status, reason: str,
             damaged: bool = False) -> Iterator[Outcome]:
        yield from (Outcome(item, status, reason, damaged) for a in entries for item, _ in items_of(a))
        yield Outcome(claim.identity, status, reason, damaged)


READ_AHEAD_FILES = 16  # files read from the repository ahead of the stream to the mover
READ_AHEAD_BELOW = 4 << 20  # a file this small is read ahead whole: at most 64 MiB held


def read_ahead(reader: ContentReader, artifacts: list[Artifact]
               ) -> Iterator[tuple[Artifact, list[Entry], Future | None]]:
    """The artifacts in order, each small file's or pack's content already being read on a pool:
    the repository's latency per blob (an S3 GET) overlaps the stream instead of adding up. A
    large file is None here and streamed by the caller."""
    with ThreadPoolExecutor(4, thread_name_prefix="dr-volume-read") as pool:
        window: collections.deque = collections.deque()
        pending = iter(artifacts)
        try:
            while True:
                while len(window) < READ_AHEAD_FILES and (artifact := next(pending, None)) is not None:
                    recorded = entries_of(artifact)
                    # one chunk: the bytes held are bounded by the chunk size whatever a catalog says
                    small = (artifact.kind == PACK_KIND or recorded[0].kind == "file") \
                        and artifact.size <= READ_AHEAD_BELOW and len(artifact.chunks) <= 1
                    window.append((artifact, recorded, pool.submit(reader.read, artifact) if small else None))
                if not window:
                    return
                yield window.popleft()
        finally:
            for *_, future in window:
                if future is not None:
                    future.cancel()


def _differing(answer: dict, sent: list[bytes], artifacts: list[Artifact]) -> list[str]:
    """The files the mover read back otherwise than sent. A mover of this version compared each
    file's read-back digest with its frame's trailer itself ("differing"); an older one answers
    every digest by path, compared here in the order sent."""
    if "differing" in answer:
        if answer.get("files") != len(sent):
            return [f"(the mover staged {answer.get('files')} files of {len(sent)} sent)"]
        return [str(p) for p in answer["differing"]]
    digests = answer.get("digests") or {}
    files = (e.path for a in artifacts for e in entries_of(a) if e.kind == "file")
    return sorted(path for path, digest in zip(files, sent) if digests.get(path) != digest.hex())


def _root_only(mine: dict, found: dict) -> bool:
    """The root's mtime moves when the commit renames entries into it: only its other facts count."""
    return {k: v for k, v in mine.items() if k != "mtime_ns"} == {k: v for k, v in found.items() if k != "mtime_ns"}


def _write_refusal(exc: ClusterError) -> str:
    if exc.status == 507:
        return (f"the volume is full ({exc}); nothing was placed (the mover wrote into a staging "
                "directory on the volume and removed it): give the claim a larger size or a class that can")
    return f"the mover refused the files: {exc}"


class RequestView:
    """The restore request as it applies to claims: namespace and storage-class remaps."""

    def __init__(self, request: RestoreRequest):
        self.dry_run, self.overwrite, self.remap = request.dry_run, request.overwrite, request.remap

    def claim_body(self, manifest: dict) -> dict:
        body = json.loads(json.dumps(manifest["claim"]))
        meta, spec = body["metadata"], body.setdefault("spec", {})
        meta["namespace"] = self.remap.get(f"namespace:{meta['namespace']}", meta["namespace"])
        if spec.get("storageClassName"):
            spec["storageClassName"] = self.remap.get(f"storage-class:{spec['storageClassName']}",
                                                      spec["storageClassName"])
        requests = spec.setdefault("resources", {}).setdefault("requests", {})
        held = manifest.get("capacity")
        if quantity(held) > quantity(requests.get("storage")):
            requests["storage"] = held  # at least what the original volume held
        return body


def restore_all(cluster: Cluster, run: Run, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
    view = RequestView(request)
    for key, (claim, entries) in group(artifacts).items():
        if claim is None:
            yield from (Outcome(a.identity, Status.FAILED, f"no `volume` artifact for claim {key}", damaged=True)
                        for a in entries)
            continue
        try:
            yield from ClaimRestore(cluster, run, reader, view).restore(key, claim, entries)
        except (WireError, IntegrityError) as exc:
            yield from ClaimRestore._all(claim, entries, Status.FAILED, f"{key}: {exc}", damaged=True)
        except (VolumeError, ClusterError) as exc:
            yield from ClaimRestore._all(claim, entries, Status.FAILED, str(exc))
