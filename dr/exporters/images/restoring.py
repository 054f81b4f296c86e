"""Restoring images: push the DR copies into a registry, one outcome per image with its reason.

`--to REGISTRY` (`http(s)://host[:port][/prefix]`): each image goes to
`<host>/<prefix>/<source path>:<tag>` (the source registry's host is left out: the new
registry replaces it). Its cosign tags and referrers follow. The bytes come from the first DR
registry copy that can be read, else from dr's repository when the image is kept there
(pushing.py). Without `--to` (a whole-plan restore) nothing moves: workloads are pointed at
the DR copies, so the step checks that each copy still holds the image (tag and top manifest
by digest) and says `unchanged`; an image kept only in the repository fails, saying to give
`--to` (destinations() refuses such a step before it starts).

Outcomes: `planned` (dry run), `unchanged` (the destination tag already names the digest),
`conflict` (it names another digest; `--overwrite` replaces it), `restored` (copied, every
digest verified on the way), `failed` (no DR copy could be read: each copy's reason, a damaged or missing repository blob named).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from dr.contract import (ContentReader, EncryptionError, IntegrityError, Outcome, OutcomeStatus, RestoredContent,
                         RestoreRequest)
from dr.exporters.images import records
from dr.kits.oci.client import RegistryError
from dr.exporters.images.copying import Copier, Endpoint
from dr.exporters.images.pushing import HERE, RepositoryImages, push, refusal
from dr.exporters.images.storing import BLOB_KIND
from dr.exporters.images.options import RegistryURL
from dr.exporters.images.references import parse
from dr.model.artifacts import Artifact

if TYPE_CHECKING:
    from dr.exporters.images.exporter import ImagesExporter


def restore_images(exporter: "ImagesExporter", artifacts: list[Artifact], reader: ContentReader,
                   request: RestoreRequest) -> Iterator[Outcome]:
    target = RegistryURL(request.to) if request.to else None
    copier = exporter.copier(count=lambda n: None, filtered=False)
    held = RepositoryImages(artifacts, reader)
    try:
        for artifact in artifacts:
            if artifact.kind == BLOB_KIND:  # pushed as part of the images that list them
                continue
            record = records.load(reader.read(artifact))
            if target is None:
                yield _check_in_place(exporter, artifact, record, request)
            else:
                yield _push(exporter, copier, held, artifact, record, target, request)
    finally:
        copier.close()


def _dr_endpoint(exporter: "ImagesExporter", copy: dict) -> Endpoint:
    url = RegistryURL(copy["registry"])
    return Endpoint(exporter.connections.get(url.host, url.scheme), copy["repository"][len(url.host) + 1:])


def _check_in_place(exporter: "ImagesExporter", artifact: Artifact, record: dict,
                    request: RestoreRequest) -> Outcome:
    item, problems = artifact.identity, []
    if not record["copies"]:
        return Outcome(item, OutcomeStatus.FAILED, f"kept only in {HERE}, in no registry workloads could pull "
                       "from: give --to REGISTRY to push it into one")
    for copy in record["copies"]:
        if request.dry_run:
            return Outcome(item, OutcomeStatus.PLANNED, f"would check the DR copy {copy['pinned']}")
        try:
            dst = _dr_endpoint(exporter, copy)
            found = dst.registry.head_manifest(dst.path, copy["dr_digest"])
        except RegistryError as exc:
            problems.append(f"{copy['pinned']}: {exc}")
            continue
        if found:
            return Outcome(item, OutcomeStatus.UNCHANGED, f"the DR copy {copy['pinned']} is in place; "
                           "workloads pull it from there")
        problems.append(f"{copy['pinned']}: the DR registry no longer holds it")
    return Outcome(item, OutcomeStatus.FAILED, "no DR copy found: " + "; ".join(problems))


def _push(exporter: "ImagesExporter", copier: Copier, held: RepositoryImages, artifact: Artifact, record: dict,
          target: RegistryURL, request: RestoreRequest) -> Outcome:
    item = artifact.identity
    ref = parse(record["source"])
    path = "/".join(p for p in (target.prefix, ref.path) if p)
    where = f"{target.host}/{path}" + (f":{ref.tag}" if ref.tag else "")
    dr_digest = record["copies"][0]["dr_digest"] if record["copies"] else record["repository"][0]["digest"]
    if request.dry_run:
        return Outcome(item, OutcomeStatus.PLANNED, f"would copy {dr_digest} to {where}")
    dst = Endpoint(exporter.connections.get(target.host, target.scheme), path)
    try:
        found = dst.registry.head_manifest(path, ref.tag or dr_digest)
    except RegistryError as exc:
        return Outcome(item, OutcomeStatus.FAILED, f"{where}: {exc}")
    if found and found[0] == dr_digest:
        return Outcome(item, OutcomeStatus.UNCHANGED, f"{where} already names {dr_digest}")
    if found and not request.overwrite:
        return Outcome(item, OutcomeStatus.CONFLICT, f"{where} names {found[0]}, not the backup's "
                       f"{dr_digest}; --overwrite replaces the tag")
    problems = []
    for copy in record["copies"]:
        try:
            src = _dr_endpoint(exporter, copy)
            copied = copier.copy(src, dst, dr_digest, [ref.tag] if ref.tag else [], backup=False,
                                 attached=bool(record.get("attached")), referrers=False)
            _referred(copier, src, dst, record)
        except RegistryError as exc:
            problems.append(f"from {copy['pinned']}: {exc}")
            continue
        return Outcome(item, OutcomeStatus.RESTORED,
                       f"{dr_digest} to {where} from {copy['pinned']} ({len(copied.blobs)} blobs, "
                       f"{copied.bytes_copied} bytes copied, digests verified)")
    if record.get("repository"):
        return _push_held(exporter, copier, held, item, record, dst, where, problems)
    return Outcome(item, OutcomeStatus.FAILED, "; ".join(problems))


def _push_held(exporter: "ImagesExporter", copier: Copier, held: RepositoryImages, item: str, record: dict,
               dst: Endpoint, where: str, problems: list[str]) -> Outcome:
    """Push the image from dr's repository: every blob and manifest verified on the way."""
    missing = held.missing(record)
    if missing:
        return Outcome(item, OutcomeStatus.FAILED, "; ".join([*problems, f"from {HERE}: " + "; ".join(missing)]))
    top = record["repository"][0]
    try:
        blobs, moved = push(exporter, copier, held, record, dst)
        if record.get("tag"):  # the tag last: it names a complete tree
            dst.registry.put_manifest(dst.path, record["tag"], held.manifest(*top["manifests"][-1]))
    except (RegistryError, IntegrityError, EncryptionError) as exc:
        return Outcome(item, OutcomeStatus.FAILED, "; ".join([*problems, f"from {HERE}: {refusal(exc)}"]))
    return Outcome(item, OutcomeStatus.RESTORED,
                   f"{top['digest']} to {where} from {HERE} ({blobs} blobs, {moved} bytes pushed, "
                   "digests verified)")


def _referred(copier: Copier, src: Endpoint, dst: Endpoint, record: dict) -> None:
    """Artifacts that came through the referrers API live in the DR copy by digest only."""
    for attached in record.get("attached") or []:
        if attached.get("via") == "referrers" and dst.registry.head_manifest(dst.path, attached["digest"]) is None:
            tree = copier.read_tree(src, attached["digest"], filter_platforms=False)
            copier.copy_tree(src, dst, tree, attached["digest"])


def restored_images(exporter: "ImagesExporter", artifacts: list[Artifact], reader: ContentReader,
                    request: RestoreRequest) -> Iterator[RestoredContent]:
    """What the destination of restore_images(artifacts, reader, request) holds of each image
    (Exporter.restored_content): with `--to`, the manifest the pushed tag names (its digest
    by pinned reference, when the image had no tag); without, the first DR copy that holds the
    image's digest, as the in-place check finds it. Its digest is the sha256 of the bytes the
    registry serves, against the backed-up digest; and every manifest and blob its tree names
    must be there (a blob with its size): the digest names the tree, not that it is whole."""
    target = RegistryURL(request.to) if request.to else None
    copier = exporter.copier_for_reading()
    try:
        for artifact in artifacts:
            if artifact.kind == BLOB_KIND:
                continue
            record = records.load(reader.read(artifact))
            dr_digest = record["copies"][0]["dr_digest"] if record["copies"] else record["repository"][0]["digest"]
            backed_up = f"complete {dr_digest}"
            if target is not None:
                ref = parse(record["source"])
                path = "/".join(p for p in (target.prefix, ref.path) if p)
                dst = Endpoint(exporter.connections.get(target.host, target.scheme), path)
                yield RestoredContent(artifact.identity, backed_up=backed_up,
                                      restored=_held_tree(copier, dst, ref.tag or dr_digest, _attached(record)))
            elif record["copies"]:  # an image held only in the repository: restore failed it
                yield RestoredContent(artifact.identity, restored=_in_place(exporter, copier, record, dr_digest),
                                      backed_up=backed_up)
    finally:
        copier.close()


def _in_place(exporter: "ImagesExporter", copier: Copier, record: dict, dr_digest: str) -> str:
    for copy in record["copies"]:
        try:
            dst = _dr_endpoint(exporter, copy)
            if dst.registry.head_manifest(dst.path, dr_digest):
                return _held_tree(copier, dst, dr_digest, _attached(record))
        except RegistryError:
            continue
    return ""


def _attached(record: dict) -> list[str]:
    """The digests of what travels with the image (cosign signatures, attestations, referrers)."""
    return sorted({a["digest"] for a in record.get("attached") or [] if a.get("digest")})


def _held_tree(copier: Copier, dst: Endpoint, reference: str, attached: list[str]) -> str:
    """"complete DIGEST" when `reference` names a manifest whose bytes hash to DIGEST and every
    manifest and blob of its tree is there, and the manifest of everything `attached` to it;
    "N missing DIGEST" else; "" when nothing is there."""
    if dst.registry.head_manifest(dst.path, reference) is None:
        return ""
    try:
        tree = copier.read_tree(dst, reference, filter_platforms=False)
    except RegistryError as exc:  # a manifest of the tree is missing or not the bytes its digest names
        return f"damaged: {exc}"
    missing = [digest for digest, size in sorted(tree.blobs.items()) if dst.registry.has_blob(dst.path, digest) != size]
    missing += [digest for digest in attached if dst.registry.head_manifest(dst.path, digest) is None]
    return f"{len(missing)} missing {tree.top.digest}" if missing else f"complete {tree.top.digest}"
