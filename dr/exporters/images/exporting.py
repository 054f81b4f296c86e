"""One backup run of the `images` exporter: which images, resolve, copy, record.

Which images: every `image` dependency the plan's other sources recorded (contract v2,
`ExportContext.plan_dependencies`), the plan's `images`, and every tag of every repository
matching the plan's `repositories` patterns; minus `exclude`. Two spellings of one image
(`nginx:1` and `docker.io/library/nginx:1`) are one image that provides both.

Each image's tag is resolved to a digest once (one HEAD at the source), then copied to every
DR registry in parallel (copying.Copier), and with `store: repository|both` into dr's
repository as `image-blob` artifacts (storing.py). One `image` artifact per image records
where the copies are (records.py); an image that cannot be copied is an error finding naming
it and the reason, and the other images still copy. The source fails (raises) only when no
DR registry answers (with `store: registries`), or when every image failed.
"""

from __future__ import annotations

import io
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from dr.contract import ArtifactSink
from dr.exporters.images import records
from dr.kits.oci.client import NotFound, RegistryClient, RegistryError
from dr.exporters.images.copying import Copied, Endpoint
from dr.exporters.images.references import BadReference, ImageRef, dr_path, parse, parse_pattern
from dr.exporters.images.options import RegistryURL
from dr.exporters.images.storing import RepositoryWriter, Stored

if TYPE_CHECKING:
    from dr.exporters.images.exporter import ImagesExporter

KIND = "image"


@dataclass
class Wanted:
    ref: ImageRef
    identity: str  # the first spelling met: the artifact's identity
    spellings: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)


def wanted_images(exporter: "ImagesExporter", *, from_plan: bool = True) -> tuple[list[Wanted], list[str]]:
    """The images to copy, and the problems met finding them (bad references, patterns that fail)."""
    o = exporter.options
    found: dict[str, Wanted] = {}
    problems: list[str] = []

    def add(text: str, why: str) -> None:
        if o.excluded(text):
            return
        try:
            ref = parse(text)
        except BadReference as exc:
            problems.append(str(exc))
            return
        if o.excluded(str(ref)):
            return
        item = found.setdefault(str(ref), Wanted(ref, text))
        for spelling in (text, str(ref)):
            if spelling not in item.spellings:
                item.spellings.append(spelling)
        item.why.append(why)

    if from_plan and o.from_plan:
        for dep in exporter.context.plan_dependencies():
            if dep.kind == "image":
                add(dep.reference, "needed by " + ", ".join(dep.sources))
    for text in o.images:
        add(text, "listed in the plan")
    for pattern in o.repositories:
        try:
            for text in expand(exporter, pattern):
                add(text, f"matches {pattern}")
        except RegistryError as exc:
            problems.append(f"repositories pattern {pattern}: {exc}")
    return list(found.values()), problems


def expand(exporter: "ImagesExporter", text: str) -> list[str]:
    """Every `host/path:tag` the registry holds that the pattern matches (catalog, tag lists)."""
    pattern = parse_pattern(text)
    registry = exporter.connections.source(pattern.host)
    out = []
    for path in sorted(registry.catalog()):
        if pattern.matches_path(path):
            out += [f"{pattern.host}/{path}:{tag}" for tag in sorted(registry.tags(path)) if pattern.matches_tag(tag)]
    return out


def resolve(exporter: "ImagesExporter", ref: ImageRef) -> ImageRef:
    """The reference with its digest: the pinned one, or the tag's, resolved now (one HEAD)."""
    if ref.digest:
        return ref
    found = exporter.connections.source(ref.host).head_manifest(ref.path, ref.tag or "latest")
    if found is None:
        raise NotFound(f"{ref}: no such tag in {ref.host}/{ref.path}")
    digest, _ = found
    if not digest:  # a registry that omits Docker-Content-Digest on HEAD
        digest = exporter.connections.source(ref.host).get_manifest(ref.path, ref.tag or "latest").digest
    return ref.with_digest(digest)


class ExportRun:
    def __init__(self, exporter: "ImagesExporter", sink: ArtifactSink) -> None:
        self.exporter, self.sink = exporter, sink
        self.context = exporter.context
        self.copier = exporter.copier(count=sink.transferred)
        self.failed: list[str] = []
        self._lock = threading.Lock()
        self._sink_lock = threading.Lock()  # the sink is not thread-safe: one write at a time
        self.repository = (RepositoryWriter(exporter, sink, self._sink_lock, self.copier)
                           if exporter.options.in_repository else None)

    def execute(self) -> None:
        try:
            self._execute()
        finally:
            self.copier.close()

    def _execute(self) -> None:
        self.exporter.connections.credentials.load()  # pull secrets: read once, fail early
        wanted, problems = wanted_images(self.exporter)
        for problem in problems:
            self._fail("image-reference-invalid", problem)
        targets = self._targets()
        if not wanted:
            self.context.log("no images to copy")
            return
        written = 0
        with ThreadPoolExecutor(self.exporter.options.parallel_images, thread_name_prefix="dr-image") as pool:
            futures = {pool.submit(self._copy, item, targets): item for item in wanted}
            for future in as_completed(futures):
                item = futures[future]
                done = future.result()
                if done is not None:
                    self._write(item, *done)
                    written += 1
        if written == 0 and self.failed:
            raise RuntimeError(f"no image copied; {len(self.failed)} failed: " + "; ".join(self.failed[:5]))

    def _targets(self) -> list[tuple[RegistryURL, RegistryClient]]:
        """The DR registries that answer; each one that does not is an error finding."""
        up = []
        for url in self.exporter.options.dr_registries():
            registry = self.exporter.connections.get(url.host, url.scheme)
            try:
                registry.check()
            except RegistryError as exc:
                self._fail("dr-registry-unreachable", f"DR registry {url}: {exc}", registry=url.url)
                continue
            up.append((url, registry))
        if not up and self.exporter.options.store == "registries":
            raise RuntimeError("no DR registry answers: " + "; ".join(self.failed))
        return up

    def _copy(self, item: Wanted, targets) -> tuple[ImageRef, str, list, Stored | None] | None:
        try:
            ref = resolve(self.exporter, item.ref)
        except RegistryError as exc:
            self._fail("image-unavailable", f"{item.identity}: {exc}", image=item.identity)
            return None
        resolved_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        src = Endpoint(self.exporter.connections.source(ref.host), ref.path)
        copies = []
        for url, registry in targets:
            dst = Endpoint(registry, dr_path(ref, url.prefix))
            started = time.monotonic()
            try:
                copied = self._copy_one(src, dst, ref)
            except (RegistryError, OSError) as exc:
                self._fail("image-copy-failed", f"{item.identity} -> {url}: {exc}", image=item.identity,
                           registry=url.url)
                continue
            how = "unchanged" if copied.unchanged else f"{copied.bytes_copied} bytes copied"
            self.context.log(f"{ref} -> {dst.name} ({how}, {time.monotonic() - started:.1f} s)")
            copies.append((url, dst, copied))
        stored = self._store(item, src, ref) if self.repository is not None else None
        return (ref, resolved_at, copies, stored) if copies or stored else None

    def _store(self, item: Wanted, src: Endpoint, ref: ImageRef) -> Stored | None:
        started = time.monotonic()
        try:
            stored = self.repository.store(src, ref.digest)
        except (RegistryError, OSError) as exc:
            self._fail("image-store-failed", f"{item.identity} -> dr's repository: {exc}", image=item.identity)
            return None
        how = f"{stored.bytes_read} bytes read" if stored.bytes_read else "every blob already held"
        self.context.log(f"{ref} -> dr's repository ({how}, {time.monotonic() - started:.1f} s)")
        return stored

    def _copy_one(self, src: Endpoint, dst: Endpoint, ref: ImageRef) -> Copied:
        o = self.exporter.options
        return self.copier.copy(src, dst, ref.digest, [ref.tag] if ref.tag else [],
                                attached=o.signatures, referrers=o.referrers)

    def _write(self, item: Wanted, ref: ImageRef, resolved_at: str, copies: list, stored: Stored | None) -> None:
        def content() -> io.BytesIO:  # called only when the change token differs
            return io.BytesIO(records.content(self.exporter, ref, copies, stored))
        record = records.summary(ref, copies, stored)
        with self._sink_lock:
            self.sink.write(KIND, item.identity, content, sensitivity=self.exporter.sensitivity(),
                            dependencies=records.dependencies(ref, copies),
                            meta=records.meta(item, ref, resolved_at, copies, stored),
                            change_token=records.change_token(record, self.exporter.options.platforms))

    def _fail(self, code: str, message: str, **facts) -> None:
        with self._lock:
            self.failed.append(message)
            self.context.finding("error", code, message, **facts)
