"""The `images` exporter class: the contract's answers; the work is in the modules beside it."""

from __future__ import annotations

import os
import time
from typing import Callable, Iterator

from dr.contract import (AnyOf, ArtifactSink, ContentReader, CopyReport, DeployNeeds, Destination, Discovered,
                         DrillComparison, ExportContext, Exporter, NoDestination, Ordering, Outcome, OutsideCopies,
                         Planning, RestoreRequest, RestoredContent, Rewriter, RtoEstimates, RunNeeds, Sizing)
from dr.exporters.images.deploying import run_needs
from dr.kits.oci.credentials import Credentials
from dr.kits.oci.pull_secrets import read_pull_secrets
from dr.kits.oci.client import RegistryClient, RegistryError
from dr.exporters.images.copying import Copier
from dr.exporters.images.exporting import KIND, ExportRun, resolve, wanted_images
from dr.exporters.images.options import ImagesOptions, RegistryURL
from dr.exporters.images.restoring import restore_images, restored_images
from dr.exporters.images.verifying import ImageCheck, verify_copies
from dr.kits.tls import verify_setting
from dr.model.artifacts import Artifact, Sensitivity


class Connections:
    """One `RegistryClient` per host for the life of an exporter instance (tokens and pools shared)."""

    def __init__(self, options: ImagesOptions, credentials: Credentials, sleep: Callable[[float], None],
                 base_dir: str = ".") -> None:
        self.options, self.credentials, self.sleep = options, credentials, sleep
        self.ca_file = os.path.join(base_dir, options.ca_file) if options.ca_file else None
        self._registries: dict[tuple[str, str], RegistryClient] = {}

    def get(self, host: str, scheme: str | None = None) -> RegistryClient:
        scheme = scheme or self.options.scheme_for(host)
        key = (scheme, host)
        if key not in self._registries:
            api_host = "registry-1.docker.io" if host == "docker.io" else host
            self._registries[key] = self._registry(api_host, scheme, host)
        return self._registries[key]

    def source(self, host: str) -> RegistryClient:
        """The registry `host` names, reached where the plan's `endpoints` says (else at itself)."""
        endpoint = self.options.endpoints.get(host)
        if endpoint is None:
            return self.get(host)
        url = RegistryURL(endpoint)
        key = (url.scheme, f"{url.host} for {host}")
        if key not in self._registries:
            self._registries[key] = self._registry(url.host, url.scheme, host)
        return self._registries[key]

    def _registry(self, api_host: str, scheme: str, host: str) -> RegistryClient:
        o = self.options
        verify, cert = tls_for(api_host, self.ca_file, o.certs_dir, o.tls_verify)
        return RegistryClient(api_host, scheme=scheme, credential=self.credentials.for_host(host), verify_tls=verify,
                        cert=cert, timeout=o.timeout_seconds, retries=o.retries, backoff=o.retry_wait_seconds,
                        sleep=self.sleep)


def tls_for(host: str, ca_file: str | None, certs_dir: str, verify: bool) -> tuple[bool | str, tuple[str, str] | None]:
    """(verify, client certificate) for `host`: docker's certs.d convention, under `certs_dir`.

    The CA: the source's ca_file, else <certs_dir>/<host[:port]>/ca.crt, else the generic settings
    (REQUESTS_CA_BUNDLE, SSL_CERT_FILE...); a client certificate: client.cert + client.key there.
    """
    folder = os.path.join(certs_dir, host)
    host_ca = os.path.join(folder, "ca.crt")
    pair = (os.path.join(folder, "client.cert"), os.path.join(folder, "client.key"))
    return (verify_setting(ca_file or (host_ca if os.path.isfile(host_ca) else None), insecure=not verify),
            pair if all(os.path.isfile(p) for p in pair) else None)


class ImagesExporter(Exporter, Planning, OutsideCopies, DeployNeeds, RtoEstimates, DrillComparison):
    type_name = "images"
    summary = ("Container images by digest (every platform, signatures, attestations), copied to DR "
               "registries; the images the plan's other sources run")
    contract_version = 2
    sizing = Sizing(146, "Image copies registry to registry, first copy into dr's repository "
                         "(store: repository)")
    Options = ImagesOptions
    reads_plan_dependencies = True
    # image copies are restored before the workloads that pull them (the core's @images rule)
    ordering = Ordering(frozenset({"images"}))

    def __init__(self, context: ExportContext) -> None:
        super().__init__(context)
        self.sleep: Callable[[float], None] = time.sleep  # replaceable by tests
        self._connections: Connections | None = None

    @property
    def connections(self) -> Connections:
        if self._connections is None:
            o = self.options
            kubeconfig = os.path.join(self.context.base_dir, o.kubeconfig) if o.kubeconfig else None
            credentials = Credentials(self._auth_file(), ecr=o.ecr, pull_secrets=lambda: read_pull_secrets(
                o.pull_secrets, kubeconfig, o.context))
            self._connections = Connections(o, credentials, lambda s: self.sleep(s), self.context.base_dir)
        return self._connections

    def _auth_file(self) -> str | None:
        path = self.options.auth_file
        return os.path.join(self.context.base_dir, path) if path else None

    def copier(self, count: Callable[[int], None], filtered: bool = True) -> Copier:
        o = self.options
        return Copier(parallel_blobs=o.parallel_blobs, chunk=o.chunk_mib << 20,
                      platforms=o.platforms if filtered else [], count=count)

    def copier_for_reading(self) -> Copier:
        return Copier(parallel_blobs=1)

    def sensitivity(self) -> Sensitivity:
        return self.context.sensitivity or Sensitivity.INTERNAL

    # -- the contract -----------------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        """The images the plan lists and its patterns match, that resolve now (one HEAD each)."""
        wanted, _ = wanted_images(self, from_plan=False)
        for item in wanted:
            try:
                ref = resolve(self, item.ref)
            except RegistryError:
                continue
            yield Discovered(KIND, item.identity, ref.digest or "")

    def export(self, sink: ArtifactSink) -> None:
        ExportRun(self, sink).execute()

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        yield from restore_images(self, artifacts, reader, request)

    # -- contract v2: planning ---------------------------------------------------------------
    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        held = [a.identity for a in artifacts if a.kind == KIND and not a.meta.get("copies")]
        if held:
            raise NoDestination(f"{len(held)} images of source '{self.context.source}' ({', '.join(held[:3])}"
                                f"{', ...' if len(held) > 3 else ''}) are kept only in dr's repository, in no "
                                f"registry to point workloads at: give --to {self.context.source}=REGISTRY "
                                "(http(s)://host[:port][/prefix]) to push them into one")
        return [Destination(artifacts, None, "the DR copies themselves: workloads are pointed at them "
                            "(give --to REGISTRY to push the images into a new registry)")]

    def scratch_destination(self, folder: str) -> str | None:
        return None  # a folder cannot hold a registry

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each image's manifest at the destination (or its DR copy, in place), hashed, against
        the backed-up digest, its tree's manifests and blobs all present."""
        return restored_images(self, artifacts, reader, request)

    def run_needs(self) -> RunNeeds:
        return run_needs(self.options, self.context.base_dir)

    def restore_needs(self, artifacts: list[Artifact]) -> list[AnyOf]:
        needs = []
        for artifact in artifacts:
            registries = tuple(dict.fromkeys(d.reference for d in artifact.dependencies if d.kind == "registry"))
            if registries:  # one copy or several: the kind is judged only through these needs
                needs.append(AnyOf("registry", f"a DR copy of {artifact.identity}", registries))
        return needs

    def restore_bytes(self, artifacts: list[Artifact]) -> dict[str, int]:
        return {"image_warmup": sum(int(a.meta.get("bytes") or 0) for a in artifacts if a.kind == KIND)}

    # -- beyond the contract ----------------------------------------------------------------
    def verify(self, artifacts: list[Artifact], reader: ContentReader, read_data: bool = True) -> list[ImageCheck]:
        """Check every DR copy the artifacts record, by digest (see verifying.py)."""
        return verify_copies(self, artifacts, reader, read_data=read_data)

    def verify_copies(self, artifacts: list[Artifact], reader: ContentReader, read_data: bool) -> list[CopyReport]:
        """Contract v2: `dr verify` checks every DR registry copy as restore() would (by digest;
        with read_data every blob is streamed and hashed, else only HEADed)."""
        return [CopyReport(check.copy, f"image {check.item}", list(check.problems),
                           {"manifests": check.manifests, "blobs": check.blobs, "bytes_read": check.bytes_read,
                            "undecrypted": check.undecrypted})
                for check in self.verify(artifacts, reader, read_data)]
