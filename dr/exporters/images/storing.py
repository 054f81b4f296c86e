"""Images into dr's own repository (`store: repository` or `both`), for sites with no second
registry: every manifest, config and layer becomes an `image-blob` artifact, which the image's
record lists (records.py, its `repository` trees).

Granularity: one artifact per blob or manifest, identity its digest, change token its digest.
So a blob the newest snapshot already holds is reused without a read (the sink checks that its
chunks exist), a blob shared by many images (a base layer) is one artifact, written once per
run, and its chunks are stored once whatever the image (dr deduplicates chunks); it is
encrypted when the source is secret, like any content.

Streaming: the sink pulls the blob through a callable that opens the registry's response
(`Content`), in its own chunks, with its own bound on what is in flight; nothing is held whole
or written to disk. The bytes are hashed on the way (client.HashingReader): a registry that
serves bytes not matching their digest is refused before the sink's last read returns, so no
artifact records them (the chunks already uploaded stay unreferenced: prune reclaims them).

Threads: image trees are read in parallel (one ExportRun thread per image), but the sink is
not thread-safe, so every write goes through one lock: blob bytes flow one at a time, while
the repository writer uploads their chunks in parallel.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import requests
import urllib3

from dr.contract import ArtifactSink
from dr.kits.oci.client import Manifest, TemporaryError
from dr.kits.oci.streams import HashingReader
from dr.exporters.images.copying import Endpoint, Tree

if TYPE_CHECKING:
    from dr.exporters.images.copying import Copier
    from dr.exporters.images.exporter import ImagesExporter

BLOB_KIND = "image-blob"


@dataclass
class StoredTree:
    """One image tree held in the repository: what a push needs, in push order."""

    digest: str  # the top manifest's digest (dr's own under a platform filter)
    via: str  # "image", "cosign-tag" or "referrers"
    tags: list[str]  # tags it gets in a registry (the image's own tag is put last, by the caller)
    manifests: list[list[str]]  # [digest, media type], bottom-up: the top last
    blobs: dict[str, int] = field(default_factory=dict)  # digest -> size

    def to_json(self) -> dict:
        return {"digest": self.digest, "via": self.via, "tags": self.tags, "manifests": self.manifests,
                "blobs": self.blobs}

    @staticmethod
    def from_tree(tree: Tree, via: str, tags: list[str]) -> "StoredTree":
        return StoredTree(tree.top.digest, via, tags, [[m.digest, m.media_type] for m in tree.manifests()],
                          dict(tree.blobs))


@dataclass
class Stored:
    """An image and what travels with it, held in the repository."""

    image: Tree
    trees: list[StoredTree]
    bytes_read: int = 0  # blob bytes read from the source now (0 when every blob was reused)


class _BlobStream:
    """The sink's view of one blob download: hashed as it is read, the response closed after."""

    def __init__(self, response: requests.Response, reader: HashingReader) -> None:
        self._response, self._reader = response, reader

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._reader.read(n)
            if not data:
                self._reader.finish()  # the whole blob was read: its digest, and nothing beyond it
            return data
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as exc:
            raise TemporaryError(f"{self._reader.name}: the transfer broke ({exc.__class__.__name__})") from None

    def close(self) -> None:
        self._response.close()

    def __enter__(self) -> "_BlobStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RepositoryWriter:
    """Writes images into the repository through the sink; one per backup run."""

    def __init__(self, exporter: "ImagesExporter", sink: ArtifactSink, lock: threading.Lock,
                 copier: "Copier") -> None:
        self.exporter, self.sink, self.lock, self.copier = exporter, sink, lock, copier
        self._written: set[str] = set()  # digests written in this run (guarded by `lock`)

    def store(self, src: Endpoint, digest: str) -> Stored:
        """The image `digest`, with its cosign tags and referrers when the plan asks for them."""
        o = self.exporter.options
        image = self.copier.read_tree(src, digest)
        trees: list[tuple[Tree, str, list[str]]] = [(image, "image", [])]
        if o.signatures:
            for cosign, signed in self.copier.cosign_heads(src, digest):
                trees.append((self.copier.read_tree(src, signed, filter_platforms=False), "cosign-tag", [cosign]))
        if o.referrers:
            for desc in src.registry.referrers(src.path, digest) or []:
                if desc.get("digest"):
                    trees.append((self.copier.read_tree(src, desc["digest"], filter_platforms=False), "referrers", []))
        stored = Stored(image, [StoredTree.from_tree(tree, via, tags) for tree, via, tags in trees])
        for tree, _, _ in trees:  # bottom-up, as a registry copy: blobs, then the manifests naming them
            for blob, size in tree.blobs.items():
                stored.bytes_read += self._blob(src, blob, size)
            for manifest in tree.manifests():
                self._manifest(manifest)
        return stored

    def _write(self, digest: str, content, meta: dict) -> None:
        self.sink.write(BLOB_KIND, digest, content, sensitivity=self.exporter.sensitivity(), meta=meta,
                        change_token=digest)
        self._written.add(digest)

    def _manifest(self, manifest: Manifest) -> None:
        with self.lock:
            if manifest.digest not in self._written:  # its digest was checked when it was read
                self._write(manifest.digest, manifest.body, {"media_type": manifest.media_type})

    def _blob(self, src: Endpoint, digest: str, size: int) -> int:
        """Write one blob (streamed from `src`) unless this run did; the bytes read from `src`."""
        read = [0]

        def content() -> _BlobStream:  # called by the sink only when the blob is not reused
            response = src.registry.open_blob(src.path, digest)
            length = int(response.headers.get("Content-Length") or size)
            read[0] = length
            return _BlobStream(response, HashingReader(response.raw, digest, length, f"{src.name}@{digest}"))

        with self.lock:
            if digest not in self._written:
                src.registry.retrying(lambda: self._write(digest, content, {}))
        return read[0]
