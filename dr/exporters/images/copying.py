"""Copying one image, by digest, from one registry to another: what backup and restore share.

An image is a tree: an index (every platform, or those the plan's filter keeps), its platform
manifests, and their configs and layers (blobs). The copy goes bottom-up so that a registry
never holds a manifest whose blobs are missing: blobs, then platform manifests (by digest),
then the top manifest by digest, then the immutable backup tag, and the original tag last.
So a tag that already names the digest in the destination means the whole tree is there:
that one HEAD is all an unchanged image costs.

Blobs: HEAD before upload; a blob this run already put in another repository of the same
registry is mounted from there (one POST); otherwise it is streamed from the source into the
destination, hashed on the way (client.HashingReader), in PATCH chunks when large. A blob
shared by several images is copied once: one lock per (registry, digest), the others wait
(in their image's thread, not on the blob pool) and then mount it. Blobs copy in parallel in a bounded pool; a failed copy is retried from
its start with backoff (a stream cannot be resumed), a corrupt one is not retried.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import requests
import urllib3

from dr.kits.oci.client import Manifest, RegistryClient, RegistryError, TemporaryError, sha256
from dr.kits.oci.streams import HashingReader
from dr.exporters.images.references import backup_tag, cosign_tags

LAYER_KEYS = ("config", "layers", "blobs")


@dataclass
class Endpoint:
    """A repository in a registry."""

    registry: RegistryClient
    path: str

    @property
    def name(self) -> str:
        return f"{self.registry.host}/{self.path}"


@dataclass
class Tree:
    """An image's manifests (top first) and blobs, as read from the source."""

    top: Manifest
    children: list[Manifest] = field(default_factory=list)
    blobs: dict[str, int] = field(default_factory=dict)  # digest -> size
    platforms: list[str] = field(default_factory=list)
    filtered: bool = False

    def manifests(self) -> list[Manifest]:
        return [*self.children, self.top]


@dataclass
class Copied:
    """What one copy of one image put where: the facts the catalog records."""

    digest: str  # the source's digest
    dr_digest: str  # the digest in the destination (differs only with a platform filter)
    media_type: str
    platforms: list[str]
    manifests: list[str]
    blobs: dict[str, int]
    attached: list[dict] = field(default_factory=list)  # {"tag"?, "digest", "via"}
    unchanged: bool = False
    bytes_copied: int = 0


def platform_of(descriptor: dict) -> str:
    p = descriptor.get("platform") or {}
    text = "/".join(x for x in (p.get("os"), p.get("architecture"), p.get("variant")) if x)
    return text or "unknown"


def _wanted(platform: str, wanted: list[str]) -> bool:
    return not wanted or any(platform == w or platform.startswith(w + "/") for w in wanted)


class Copier:
    """Copies images between registries; one per backup or restore run, shared by its threads."""

    def __init__(self, *, parallel_blobs: int = 8, chunk: int = 32 << 20, platforms: list[str] | None = None,
                 count: Callable[[int], None] = lambda n: None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max(1, parallel_blobs), thread_name_prefix="dr-blob")
        self.chunk = chunk
        self.platforms = list(platforms or [])
        self.count = count
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, ...], threading.Lock] = {}
        self._present: dict[tuple[str, str], set[str]] = {}
        self._claimed: set[tuple[str, str]] = set()  # (registry, digest) an image's tree already took on
        self._tags: dict[tuple[str, str], frozenset[str] | None] = {}  # a source repository's tags

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    # -- reading --------------------------------------------------------------------------------
    def read_tree(self, src: Endpoint, digest: str, *, filter_platforms: bool = True) -> Tree:
        top = src.registry.get_manifest(src.path, digest)
        tree = Tree(top)
        if not top.is_index:
            self._add_blobs(tree, top)
            return tree
        index = json.loads(top.body)
        keep = []
        for desc in index.get("manifests") or []:
            platform = platform_of(desc)
            if filter_platforms and not _wanted(platform, self.platforms):
                tree.filtered = True
                continue
            keep.append(desc)
            child = src.registry.get_manifest(src.path, desc["digest"])
            tree.children.append(child)
            tree.platforms.append(platform)
            if child.is_index:  # nested index: copy its manifests too, all of them
                sub = self.read_tree(src, child.digest, filter_platforms=False)
                tree.children[-1:] = sub.manifests()
                tree.blobs.update(sub.blobs)
                continue
            self._add_blobs(tree, child)
        if tree.filtered:
            index["manifests"] = keep
            body = json.dumps(index, separators=(",", ":")).encode()
            tree.top = Manifest(body, top.media_type, sha256(body))
        return tree

    @staticmethod
    def _add_blobs(tree: Tree, manifest: Manifest) -> None:
        data = json.loads(manifest.body)
        for key in LAYER_KEYS:
            value = data.get(key)
            for desc in ([value] if isinstance(value, dict) else value or []):
                if isinstance(desc, dict) and desc.get("digest"):
                    tree.blobs[desc["digest"]] = int(desc.get("size", 0))

    # -- copying --------------------------------------------------------------------------------
    def copy(self, src: Endpoint, dst: Endpoint, digest: str, tags: list[str], *,
             backup: bool = True, attached: bool = True, referrers: bool = True,
             overwrite: bool = True) -> Copied:
        """Copy the image `digest` and tag it `tags` (+ its backup tag); its cosign tags and
        referrers too when asked. An image whose last tag already names it costs one HEAD."""
        all_tags = ([backup_tag(digest)] if backup else []) + list(tags)
        if all_tags and not self.platforms:
            found = dst.registry.head_manifest(dst.path, all_tags[-1])
            if found and found[0] == digest:
                return self._unchanged(src, dst, digest, found[1], attached, referrers)
        tree = self.read_tree(src, digest)
        if all_tags and tree.filtered:  # the filtered index is ours: its digest is known only now
            found = dst.registry.head_manifest(dst.path, all_tags[-1])
            if found and found[0] == tree.top.digest:
                copied = self._unchanged(src, dst, digest, found[1], attached, referrers)
                copied.dr_digest = tree.top.digest
                return copied
        copied = self.copy_tree(src, dst, tree, digest)
        for tag in all_tags:
            dst.registry.put_manifest(dst.path, tag, tree.top)
        if attached:
            copied.attached += self._attached(src, dst, digest)
        if referrers:
            copied.attached += self._referrers(src, dst, digest)
        return copied

    def _unchanged(self, src: Endpoint, dst: Endpoint, digest: str, media_type: str,
                   attached: bool, referrers: bool) -> Copied:
        copied = Copied(digest, digest, media_type, [], [], {}, unchanged=True)
        if attached:
            copied.attached += self._attached(src, dst, digest)
        if referrers:
            copied.attached += self._referrers(src, dst, digest)
        return copied

    def copy_tree(self, src: Endpoint, dst: Endpoint, tree: Tree, digest: str) -> Copied:
        """The blobs (largest first: the longest transfer starts soonest), then the manifests.

        A blob another image of this run took on (in the same registry) is waited for here, in
        this image's thread, and then mounted or found: a pool worker never sits idle behind
        another's upload while blobs that could move wait in the queue."""
        mine, theirs = [], []
        with self._guard:
            for d, size in sorted(tree.blobs.items(), key=lambda item: -item[1]):
                key = (dst.registry.base, d)
                (theirs if key in self._claimed else mine).append((d, size))
                self._claimed.add(key)
        futures = [self._pool.submit(self.ensure_blob, src, dst, d, size) for d, size in mine]
        copied_bytes = sum(self.ensure_blob(src, dst, d, size) for d, size in theirs)
        copied_bytes += sum(f.result() for f in futures)
        for child in tree.children:
            dst.registry.put_manifest(dst.path, child.digest, child)
        dst.registry.put_manifest(dst.path, tree.top.digest, tree.top)
        return Copied(digest, tree.top.digest, tree.top.media_type, tree.platforms,
                      [m.digest for m in tree.manifests()], dict(tree.blobs), bytes_copied=copied_bytes)

    def cosign_heads(self, src: Endpoint, digest: str) -> list[tuple[str, str]]:
        """(tag, digest) of each of cosign's tags of `digest` that the source has.

        The repository's tag list is read once per run (one GET, cached) and only the cosign
        tags it holds are asked for (a HEAD each): an unsigned image costs no request here
        instead of three HEADs. Where the registry refuses the list, every tag gets its HEAD."""
        listed = self._tag_list(src)
        found = []
        for tag in cosign_tags(digest):
            if listed is not None and tag not in listed:
                continue
            head = src.registry.head_manifest(src.path, tag)
            if head is not None:
                found.append((tag, head[0]))
        return found

    def _tag_list(self, src: Endpoint) -> frozenset[str] | None:
        key = (src.registry.base, src.path)
        with self._guard:
            lock = self._locks.setdefault(("tags",) + key, threading.Lock())
        with lock:  # one listing per repository, however many of its images copy at once
            if key not in self._tags:
                try:
                    self._tags[key] = frozenset(src.registry.tags(src.path))
                except RegistryError:
                    self._tags[key] = None
            return self._tags[key]

    def _attached(self, src: Endpoint, dst: Endpoint, digest: str) -> list[dict]:
        """cosign's signature, attestation and SBOM tags of `digest`, when the source has them."""
        found = []
        for tag, signed in self.cosign_heads(src, digest):
            there = dst.registry.head_manifest(dst.path, tag)
            if not (there and there[0] == signed):
                tree = self.read_tree(src, signed, filter_platforms=False)
                self.copy_tree(src, dst, tree, signed)
                dst.registry.put_manifest(dst.path, tag, tree.top)
            found.append({"tag": tag, "digest": signed, "via": "cosign-tag"})
        return found

    def _referrers(self, src: Endpoint, dst: Endpoint, digest: str) -> list[dict]:
        """Artifacts whose `subject` is `digest`, through the referrers API where the source has
        one (distribution 2.8 answers 404: nothing to do, the cosign tags carry signatures there)."""
        found = []
        for desc in src.registry.referrers(src.path, digest) or []:
            ref = desc.get("digest")
            if not ref:
                continue
            if dst.registry.head_manifest(dst.path, ref) is None:
                self.copy_tree(src, dst, self.read_tree(src, ref, filter_platforms=False), ref)
            found.append({"digest": ref, "via": "referrers", "artifact_type": desc.get("artifactType", "")})
        return found

    # -- blobs --------------------------------------------------------------------------------
    def ensure_blob(self, src: Endpoint, dst: Endpoint, digest: str, size: int) -> int:
        """Make `digest` present in `dst`; the bytes this cost (0 when present or mounted)."""
        return self.place(dst, digest, lambda: src.registry.retrying(lambda: self._stream(src, dst, digest, size)))

    def place(self, dst: Endpoint, digest: str, transfer: Callable[[], int]) -> int:
        """Make `digest` present in `dst`: mounted from where this run put it, found (HEAD), or
        else `transfer()`ed (which returns the bytes it moved). One transfer per registry."""
        key = (dst.registry.base, digest)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            known = self._present.setdefault(key, set())
            if dst.path in known:
                return 0
            moved = self._place_blob(dst, digest, known, transfer)
            known.add(dst.path)
            return moved

    @staticmethod
    def _place_blob(dst: Endpoint, digest: str, known: set[str], transfer: Callable[[], int]) -> int:
        for other in sorted(known):
            if dst.registry.mount_blob(dst.path, digest, other):
                return 0
        if dst.registry.has_blob(dst.path, digest) is not None:
            return 0
        return transfer()

    def map(self, call: Callable, items) -> list:
        """`call(item)` for every item on the blob pool; the results, or the first error."""
        return [f.result() for f in [self._pool.submit(call, item) for item in items]]

    def _stream(self, src: Endpoint, dst: Endpoint, digest: str, size: int) -> int:
        response = src.registry.open_blob(src.path, digest)
        try:
            length = int(response.headers.get("Content-Length", size) or size)
            reader = HashingReader(response.raw, digest, length, f"{src.name}@{digest}")
            dst.registry.upload_blob(dst.path, digest, reader, length, self.chunk)
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as exc:
            # a connection that broke mid-stream: the copy starts over (the caller retries)
            raise TemporaryError(f"{src.name}@{digest}: the transfer broke ({exc.__class__.__name__})") from None
        finally:
            response.close()
        self.count(length)
        return length
