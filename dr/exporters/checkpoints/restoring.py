"""Restoring checkpoints from their DR copies: choose, verify, write where the trainer looks.

RestoreRequest.remap keys (all optional):
    run    the training run (default: every run the snapshot holds copies of)
    step   a step number, or "latest" (default)
    tier   restore from this tier only (default: the plan's tier order; when a tier's copy is
           missing or damaged the next tier's copy of the same checkpoint is used, and the
           outcome says so)
    endpoint_url, region, profile   for an s3:// `to` on an endpoint the plan does not name

RestoreRequest.to is the trainer's checkpoint ROOT (`s3://bucket/prefix` or a directory): the
checkpoint is written at `<to>/<its path under the source root>` (run1/step-100), where the
trainer's resume logic looks. An S3 `to` uses the endpoint, region and profile of the plan's
root or tier in the same bucket, else the remap's endpoint_url/region/profile, else the
environment's (AWS_ENDPOINT_URL_S3 ...). With no `to`, nothing is copied: the
copy is verified and the outcome names it, so the trainer loads it in place.

Nothing unverified becomes visible: every file is hashed while it is written under a staging
name and checked against the manifest (whose own digest is checked against the snapshot's
record and the copy's marker); the checkpoint is published under its own name only when every
file verified (staging.py: one rename of the step directory; on S3, copies into place, index
files last). A restore that is refused, or killed, leaves nothing new under a final name, so
no trainer can mistake half a checkpoint for one. A mismatch fails the item, naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING, Iterator
from urllib.parse import urlsplit

from dr.exporters.checkpoints.copies.layout import Layout
from dr.exporters.checkpoints.exporting import KIND
from dr.exporters.checkpoints.options import PlaceSpec
from dr.kits.places.contract import Place
from dr.exporters.checkpoints.transfer.transferring import DigestMismatch, FileJob, Transfer, hash_file
from dr.exporters.checkpoints.formats.tree import parent_of
from dr.exporters.checkpoints.copies.verifying import check_copy
from dr.exporters.checkpoints.staging import Stage, open_stage
from dr.contract import ContentReader, Outcome, OutcomeStatus, RestoredContent, RestoreRequest
from dr.model.artifacts import Artifact

if TYPE_CHECKING:
    from dr.exporters.checkpoints import CheckpointsExporter

REMAP_KEYS = ("run", "step", "tier", "endpoint_url", "region", "profile")
_TO_KEYS = ("endpoint_url", "region", "profile")


def restore_copies(x: "CheckpointsExporter", artifacts: list[Artifact], reader: ContentReader,
                   request: RestoreRequest) -> Iterator[Outcome]:
    unknown = sorted(set(request.remap) - set(REMAP_KEYS))
    if unknown:
        yield Outcome("remap", OutcomeStatus.FAILED, f"unknown remap keys {unknown}; known: {list(REMAP_KEYS)}")
        return
    groups, problems = choose(x, [a for a in artifacts if a.kind == KIND], request.remap)
    for item, reason in problems:
        yield Outcome(item, OutcomeStatus.FAILED, reason)
    for group in groups:
        yield _restore_one(x, group, reader, request)


def choose(x: "CheckpointsExporter", copies: list[Artifact], remap: dict[str, str]
           ) -> tuple[list[list[Artifact]], list[tuple[str, str]]]:
    """Per chosen checkpoint, its copies in tier preference order; and what could not be found."""
    if remap.get("tier"):
        copies = [a for a in copies if a.meta.get("tier") == remap["tier"]]
    runs = sorted({str(a.meta.get("run")) for a in copies})
    wanted = [remap["run"]] if remap.get("run") else runs
    order = {t.name: i for i, t in enumerate(x.options.effective_tiers())}
    step = str(remap.get("step", "latest"))
    groups, problems = [], []
    for run in wanted:
        mine = [a for a in copies if str(a.meta.get("run")) == run]
        if not mine:
            problems.append((f"run {run}", f"the snapshot holds no DR copy of run {run!r} (runs: {runs})"))
            continue
        steps = sorted({int(a.meta["step"]) for a in mine})
        if step != "latest" and not step.isdigit():
            problems.append((f"run {run}", f"step must be a number or 'latest', not {step!r}"))
            continue
        target = steps[-1] if step == "latest" else int(step)
        group = sorted((a for a in mine if int(a.meta["step"]) == target),
                       key=lambda a: order.get(a.meta.get("tier"), len(order)))
        if not group:
            problems.append((f"run {run} step {target}", f"no DR copy of step {target} (steps held: {steps})"))
            continue
        groups.append(group)
    return groups, problems


def _restore_one(x: "CheckpointsExporter", group: list[Artifact], reader: ContentReader,
                 request: RestoreRequest) -> Outcome:
    item, tried = group[0].identity, []
    for artifact in group:
        record = json.loads(reader.read(artifact))
        try:
            outcome = _from_copy(x, artifact, record, request, tried)
        except Exception as exc:  # an unreachable tier: try the next one, say why
            tried.append(f"tier {artifact.meta.get('tier')} ({record.get('copy')}): {type(exc).__name__}: {exc}")
            continue
        if outcome is not None:
            return outcome
    return Outcome(item, OutcomeStatus.FAILED, "no intact DR copy: " + "; ".join(tried))


def _from_copy(x: "CheckpointsExporter", artifact: Artifact, record: dict, request: RestoreRequest,
               tried: list[str]) -> Outcome | None:
    """Restore from one tier's copy; None (and a reason in `tried`) if that copy is not intact."""
    item = artifact.identity
    place = copy_place(x, record)
    layout = Layout(record["layout"]["key"], bool(record["layout"]["is_dir"]))
    quick = request.dry_run or bool(request.to)  # a real restore verifies while writing
    state, check = check_copy(place, layout, read_data=not quick, expect_manifest=record["manifest"]["sha256"])
    if not check.ok:
        tried.append(f"tier {artifact.meta.get('tier')} ({check.url}): {'; '.join(check.problems)}")
        return None
    fallback = f" (after: {'; '.join(tried)})" if tried else ""
    if request.dry_run:
        where = _dest_url(record, request.to) if request.to else "nowhere (verify and load in place)"
        return Outcome(item, OutcomeStatus.PLANNED, f"would restore {check.files} files, {check.bytes} bytes "
                                                    f"from {check.url} to {where}{fallback}")
    if not request.to:
        return Outcome(item, OutcomeStatus.SKIPPED, f"verified in place, nothing copied: load the checkpoint "
                                                    f"from {_described(place, check.url)}{fallback}")
    return _write(x, item, place, layout, state.files(), record, request, tried)


def _write(x: "CheckpointsExporter", item: str, src: Place, layout: Layout, files: list[dict], record: dict,
           request: RestoreRequest, tried: list[str]) -> Outcome | None:
    """Copy and verify under a staging name, then publish (staging.py); None (reason in
    `tried`) when the copy itself turns out damaged, so the next tier is tried."""
    fallback = f" (after: {'; '.join(tried)})" if tried else ""
    dest, prefix = _destination(x, request, record["checkpoint"]["path"], layout.is_dir)
    same, differs = _existing(dest, prefix, files, layout.is_dir)
    if differs and not request.overwrite:
        return Outcome(item, OutcomeStatus.CONFLICT, f"{dest.url_of(prefix)} exists and differs ({differs}); "
                                                     "--overwrite replaces it")
    if len(same) == len(files):
        return Outcome(item, OutcomeStatus.UNCHANGED, f"{dest.url_of(prefix)} already holds this checkpoint")
    if layout.is_dir and not dest.is_s3:
        same = set()  # a step directory is published whole, by one rename
    todo = [f for f in files if f["path"] not in same]
    stage = open_stage(dest, prefix, record["checkpoint"]["path"], layout.is_dir)
    try:
        failed = _stage(x, src, stage, layout, todo)
        if not failed:
            stage.publish(todo, x.options.written_last)
    finally:
        stage.discard()
    if failed:
        names = "; ".join(f"{p.removeprefix(layout.base + '/')}: {e}" for p, e in sorted(failed.items()))
        if all(isinstance(e, (DigestMismatch, FileNotFoundError)) for e in failed.values()):
            tried.append(f"tier {record['tier']} ({record['copy']}): {names}")
            return None
        return Outcome(item, OutcomeStatus.FAILED, f"not restored (nothing written at {dest.url_of(prefix)}): "
                                                   f"{names}")
    total = sum(f["size"] for f in files)
    return Outcome(item, OutcomeStatus.RESTORED, f"{len(files)} files, {total} bytes from {record['copy']} to "
                                                 f"{dest.url_of(prefix)}; every SHA-256 verified{fallback}")


def _stage(x: "CheckpointsExporter", src: Place, stage: Stage, layout: Layout, files: list[dict]
           ) -> dict[str, BaseException]:
    """Copy every file under the staging name, each hashed while written; what failed."""
    inside = src.is_s3 and stage.place.is_s3 and _same_store(src, stage.place) and x.options.server_side_copy
    transfer = Transfer(src, stage.place, part_size=x.options.part_size,
                        max_buffer=x.options.max_buffer_mib << 20,
                        parallel_files=x.options.parallel_files, server_side=inside)
    try:
        _, failed = transfer.run([FileJob(layout.file(f["path"]), stage.target(f["path"]), f["size"],
                                          sha256=f["sha256"]) for f in files])
    finally:
        transfer.close()
    return failed


def _existing(dest: Place, prefix: str, files: list[dict], is_dir: bool) -> tuple[set[str], str]:
    """Files already at the destination with the manifest's bytes, and the first file that
    differs (''); in a step directory, a file the checkpoint does not have differs too."""
    listed = {f.path: f for f in dest.list_files(prefix)}
    same: set[str] = set()
    for f in files:
        got = listed.pop(_join(prefix, f["path"]), None)
        if got is None:
            continue
        if got.size != f["size"] or hash_file(dest, got.path)[0] != f["sha256"]:
            return same, f"{f['path']} has other content"
        same.add(f["path"])
    if is_dir and listed:
        return same, f"{min(listed).removeprefix(prefix + '/')} is not the checkpoint's"
    return same, ""


def restored_checkpoints(x: "CheckpointsExporter", artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
    """What `request.to` holds of each checkpoint restore_copies(artifacts, reader, request)
    chose (Exporter.restored_content): every file the copy's manifest lists, read back and
    hashed, against the manifest, whose own digest the snapshot's record checks (as restore
    reads it). A step directory holding a file the checkpoint lacks differs too. Nothing for a
    restore with no `to` (it verified the copy in place and wrote nothing)."""
    if not request.to or set(request.remap) - set(REMAP_KEYS):
        return
    groups, _ = choose(x, [a for a in artifacts if a.kind == KIND], request.remap)
    for group in groups:
        found = _manifest(x, group, reader)
        if found is None:  # no intact copy: restore failed the item, nothing was written
            continue
        record, files = found
        is_dir = bool(record["layout"]["is_dir"])
        dest, prefix = _destination(x, request, record["checkpoint"]["path"], is_dir)
        yield RestoredContent(group[0].identity, restored=_held(dest, prefix, files, is_dir),
                              backed_up=_fingerprint([[f["path"], f["size"], f["sha256"]] for f in files], len(files)))


def _manifest(x: "CheckpointsExporter", group: list[Artifact], reader: ContentReader
              ) -> tuple[dict, list[dict]] | None:
    """The record and manifest files of the first copy in the group whose manifest its record
    vouches for (check_copy, as restore checks it first), or None."""
    for artifact in group:
        record = json.loads(reader.read(artifact))
        try:
            layout = Layout(record["layout"]["key"], bool(record["layout"]["is_dir"]))
            state, check = check_copy(copy_place(x, record), layout, read_data=False,
                                      expect_manifest=record["manifest"]["sha256"])
        except Exception:  # an unreachable tier: the next one, as restore does
            continue
        if check.ok:
            return record, state.files()
    return None


def _held(dest: Place, prefix: str, files: list[dict], is_dir: bool) -> str:
    """The fingerprint of what `dest` holds where the manifest's files go ("": none of them)."""
    listed = {f.path: f for f in dest.list_files(prefix)}
    entries: list[list] = []
    present = 0
    for f in files:
        got = listed.pop(_join(prefix, f["path"]), None)
        if got is None:
            entries.append([f["path"], "missing"])
            continue
        sha, size = hash_file(dest, got.path)
        entries.append([f["path"], size, sha])
        present += 1
    if is_dir:  # as _existing judges it: a file in the step directory that the checkpoint lacks
        entries += [[path.removeprefix(prefix + "/"), "not the checkpoint's"] for path in sorted(listed)]
    if not present and len(entries) == len(files):
        return ""
    return _fingerprint(entries, present, len(files))


def _fingerprint(entries: list[list], present: int, total: int | None = None) -> str:
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()
    return f"{present}/{present if total is None else total} files, sha256 {digest}"


def copy_place(x: "CheckpointsExporter", record: dict) -> Place:
    """The copy's place as recorded; the plan's tier of the same URL wins (its endpoint may
    have been repointed for the recovery)."""
    for tier in x.options.effective_tiers():
        if tier.to is not None and tier.to.url.rstrip("/") == record["location"]["url"].rstrip("/"):
            return x.tier_place(tier)
    return x.open(record["location"])


def _destination(x: "CheckpointsExporter", request: RestoreRequest, path: str, is_dir: bool) -> tuple[Place, str]:
    """The place for `to`, and the checkpoint's directory in it (single files: their run's)."""
    to = request.to if request.to.startswith("s3://") else os.path.abspath(request.to)  # like --to elsewhere
    loc = PlaceSpec(url=to)
    given = {k: request.remap[k] for k in _TO_KEYS if request.remap.get(k)}
    if loc.is_s3 and given:
        loc = PlaceSpec(url=loc.url, **given)
    elif loc.is_s3:
        bucket = urlsplit(loc.url).netloc
        for known in [*x.options.roots, *(t.to for t in x.options.effective_tiers() if t.to)]:
            if known.is_s3 and urlsplit(known.url).netloc == bucket:
                loc = known.model_copy(update={"url": loc.url})
                break
    return x.open(loc), path if is_dir else parent_of(path)


def _dest_url(record: dict, to: str) -> str:
    return f"{to.rstrip('/')}/{record['checkpoint']['path']}"


def _described(place: Place, url: str) -> str:
    endpoint = getattr(place, "endpoint_url", None)
    return f"{url} (endpoint {endpoint})" if endpoint else url


def _same_store(a: Place, b: Place) -> bool:
    return (a.endpoint_url or "") == (b.endpoint_url or "") and a.profile == b.profile


def _join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel
