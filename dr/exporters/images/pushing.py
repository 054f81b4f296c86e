"""Pushing an image from dr's repository into a registry (`dr restore --source images --to
REGISTRY` of an image kept with `store: repository|both`), and checking it there (verify).

The order is the registry copy's: each tree's blobs (in parallel; HEAD first, so a blob the
target already has costs nothing, and a blob this run pushed into another repository of the
same registry is mounted), then its manifests bottom-up by digest, then its tags (a cosign
tag); the image's own tag is put last, by the caller. Every blob is read from the repository
through the ContentReader (each chunk verified) and hashed again on the way to the registry
against its OCI digest; every manifest is hashed before it is put. A blob or manifest whose
`image-blob` artifact the snapshot lacks, or whose bytes do not match, stops the image with
the digest named.
"""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING

from dr.contract import ContentReader, IntegrityError
from dr.kits.oci.client import DigestMismatch, Manifest, sha256
from dr.kits.oci.streams import HashingReader
from dr.exporters.images.copying import Copier, Endpoint
from dr.exporters.images.records import repository_digests
from dr.exporters.images.storing import BLOB_KIND
from dr.model.artifacts import Artifact

if TYPE_CHECKING:
    from dr.exporters.images.exporter import ImagesExporter

HERE = "dr's repository"


class RepositoryImages:
    """The `image-blob` artifacts of one snapshot of the source, by digest."""

    def __init__(self, artifacts: list[Artifact], reader: ContentReader) -> None:
        self.blobs = {a.identity: a for a in artifacts if a.kind == BLOB_KIND}
        self.reader = reader

    def missing(self, record: dict) -> list[str]:
        """The problems that stop a push before it starts: digests with no artifact, wrong sizes."""
        problems = []
        for digest, size in repository_digests(record).items():
            artifact = self.blobs.get(digest)
            if artifact is None:
                problems.append(f"{digest}: not in the snapshot ({HERE} lacks its image-blob artifact)")
            elif size is not None and artifact.size != size:
                problems.append(f"{digest}: {artifact.size} bytes in {HERE}, the image records {size}")
        return problems

    def open(self, digest: str, size: int) -> HashingReader:
        """The blob's bytes, each chunk verified by the reader and the whole by its OCI digest."""
        return HashingReader(self.reader.open(self.blobs[digest]), digest, size, f"{HERE}: blob {digest}")

    def manifest(self, digest: str, media_type: str) -> Manifest:
        body = self.reader.read(self.blobs[digest])
        if sha256(body) != digest:
            raise DigestMismatch(f"{HERE}: manifest {digest} holds bytes whose digest is {sha256(body)}")
        return Manifest(body, media_type, digest)

    def check(self, digest: str, size: int | None) -> int:
        """Read one blob (size given) or manifest (None) whole, as a push would; the bytes read."""
        if size is None:
            return len(self.manifest(digest, "").body)
        with closing(self.open(digest, size)) as body:
            while body.read(1 << 20):
                pass
            body.finish()
        return size


def push(exporter: "ImagesExporter", copier: Copier, held: RepositoryImages, record: dict,
         dst: Endpoint) -> tuple[int, int]:
    """Push every tree of the record into `dst` (not the image's own tag); (blobs, bytes moved)."""
    chunk = exporter.options.chunk_mib << 20
    blobs = moved = 0
    for tree in record["repository"]:
        items = list(tree["blobs"].items())
        moved += sum(copier.map(lambda item: copier.place(dst, item[0], lambda: _upload(held, dst, *item, chunk)),
                                items))
        blobs += len(items)
        for digest, media_type in tree["manifests"]:
            dst.registry.put_manifest(dst.path, digest, held.manifest(digest, media_type))
        top = held.manifest(*tree["manifests"][-1])
        for tag in tree["tags"]:
            dst.registry.put_manifest(dst.path, tag, top)
    return blobs, moved


def _upload(held: RepositoryImages, dst: Endpoint, digest: str, size: int, chunk: int) -> int:
    def once() -> int:  # a broken upload starts over, from the repository's first chunk
        with closing(held.open(digest, size)) as body:
            dst.registry.upload_blob(dst.path, digest, body, size, chunk)
        return size
    return dst.registry.retrying(once)


def refusal(exc: Exception) -> str:
    """Why the repository's copy cannot be pushed, for the outcome."""
    if isinstance(exc, IntegrityError):
        return f"{HERE} refused a damaged blob: {exc}"
    return str(exc)

