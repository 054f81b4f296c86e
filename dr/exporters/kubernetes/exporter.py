"""The KubernetesExporter class: the contract's three methods, wired to the modules beside it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from types import MappingProxyType
from typing import Iterator

from dr.contract import (ArtifactSink, AuditDeclarations, ContentReader, DeployNeeds, Destination, Discovered,
                         DrillComparison, Exporter, NoDestination, Ordering, Outcome, OutcomeStatus, Planning,
                         RestoreRequest, RestoredContent, Rewriter, RunNeeds, Sizing)
from dr.exporters.kubernetes.batches import KIND, SCANNED_KIND
from dr.exporters.kubernetes.classes import CLASSES
from dr.exporters.kubernetes.connecting import api_client, dynamic_client
from dr.exporters.kubernetes.deploying import run_needs
from dr.exporters.kubernetes.exporting import Export
from dr.exporters.kubernetes.options import KubernetesOptions
from dr.exporters.kubernetes.planning import REMAP_KINDS, RESTORE_OPTIONS
from dr.exporters.kubernetes.requesting import Api
from dr.exporters.kubernetes.restoring import Restore
from dr.exporters.kubernetes.sealedsecrets import KEY_MISSING
from dr.exporters.kubernetes.volumedata import DEPENDENCY_KIND as VOLUME_DATA, KIND as VOLUMES_KIND, VOLUME_DATA_LOST

PLAN_CONFIGMAP = "dr-plan"  # dr.deploy.objects.PLAN_CONFIGMAP (tests/cli/test_plan_in_snapshot.py holds them equal)
from dr.kits.kubeconfigs import parse_destination
from dr.model.artifacts import Artifact


class KubernetesExporter(Exporter, Planning, AuditDeclarations, DeployNeeds, DrillComparison):
    type_name = "kubernetes"
    summary = ("Kubernetes objects: CRDs and custom resources (Kueue, cert-manager ...), namespaces, "
               "config, Secrets (encrypted), RBAC, Helm releases, chosen workloads")
    Options = KubernetesOptions
    contract_version = 2
    sizing = Sizing(63, "Kubernetes backup and restore, backup of 50k objects")
    remap_kinds = REMAP_KINDS
    restore_options = RESTORE_OPTIONS
    checked_kinds = frozenset(CLASSES)  # the backup's class-missing finding reports them
    ordering = Ordering(frozenset({"cluster-objects"}))
    # its backup finding sealed-secret-unopenable is KEY_MISSING; a claim's lost data is VOLUME_DATA_LOST
    finding_codes = (KEY_MISSING, VOLUME_DATA_LOST)
    lost_kind_codes = MappingProxyType({VOLUME_DATA: VOLUME_DATA_LOST.code})

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """None by default: restoring into the cluster it came from is never assumed."""
        name = self.context.source
        raise NoDestination(f"no destination cluster: name one with --to {name}=CONTEXT or "
                            f"--to {name}=KUBECONFIG:CONTEXT")

    def scratch_destination(self, folder: str) -> str | None:
        return None  # a folder is not a cluster: a drill names a scratch cluster with SOURCE=CONTEXT

    def run_needs(self) -> RunNeeds:
        return run_needs(self.options, self.context.base_dir, self.context.source)

    def _kubeconfig(self) -> str | None:
        path = self.options.kubeconfig
        return os.path.join(self.context.base_dir, path) if path else None

    @contextlib.contextmanager
    def _api(self, kubeconfig: str | None, context: str | None) -> Iterator[Api]:
        client = api_client(kubeconfig, context, pool_size=self.options.parallelism + 2)
        with client, tempfile.TemporaryDirectory(prefix="dr-kube-") as cache:
            yield Api(dynamic_client(client, cache), attempts=self.options.retries,
                      timeout=self.options.request_timeout_seconds, log=self.context.log)

    def discover(self) -> Iterator[Discovered]:
        found = _Recorder()
        with self._api(self._kubeconfig(), self.options.context) as api:
            Export(api, self.context, found).run()
        yield from found.discovered

    def export(self, sink: ArtifactSink) -> None:
        with self._api(self._kubeconfig(), self.options.context) as api:
            export = Export(api, self.context, sink)
            export.run()
        self.context.log(f"{export.written} objects exported")

    def plan_copy(self, artifact: Artifact, plan_path: str) -> tuple[str, str] | None:
        """A batch holding the ConfigMap `dr deploy render` makes (configmaps/<ns>/dr-plan)."""
        members = artifact.meta.get("members")
        for member in members if isinstance(members, dict) else ():
            parts = member.split("/")
            if len(parts) == 3 and parts[0] == "configmaps" and parts[2] == PLAN_CONFIGMAP:
                return "the plan's ConfigMap, as dr deploy render makes it", member
        return None

    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        if not request.to and not request.dry_run:
            yield Outcome("destination", OutcomeStatus.FAILED,
                          "--to is required: a kubeconfig context, or PATH:CONTEXT")
            return
        kubeconfig, context = parse_destination(request.to, self._kubeconfig()) if request.to else (None, None)
        with contextlib.ExitStack() as stack:
            def connect() -> Api:
                return stack.enter_context(self._api(kubeconfig, context))
            yield from Restore(self.options, request, reader, connect, self.context.log).run(artifacts)

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each objects artifact: every object read back from the destination, normalised as the
        restore compares (server-set fields left out), against the backup's, remapped."""
        if not request.to:
            return
        kubeconfig, context = parse_destination(request.to, self._kubeconfig())
        with contextlib.ExitStack() as stack:
            def connect() -> Api:
                return stack.enter_context(self._api(kubeconfig, context))
            compare = RestoreRequest(to=request.to, remap=dict(request.remap))
            for identity, restored, backed_up in Restore(self.options, compare, reader, connect,
                                                         self.context.log).fingerprints(artifacts):
                yield RestoredContent(identity, restored=restored, backed_up=backed_up)


MEMBER_KIND = "kubernetes-object"  # one object of a kubernetes-objects artifact (Discovered.kind)


class _Recorder:
    """A sink that reads nothing: discover() lists what an export would write."""

    source = "discover"

    def __init__(self) -> None:
        self.discovered: list[Discovered] = []

    def write(self, kind, identity, content, *, sensitivity=None, dependencies=(), meta=None, change_token=""):
        """The artifact, and each object it holds with its resourceVersion (per-object coverage;
        objects only scanned are not held by design and named by the backup's finding)."""
        meta = meta or {}
        detail = (f"{meta.get('objects')} objects" if kind in (KIND, SCANNED_KIND)
                  else f"{meta.get('claims')} claims" if kind == VOLUMES_KIND else str(meta.get("status", "")))
        self.discovered.append(Discovered(kind, identity, detail))
        kind_name = meta.get("kind", "object")
        self.discovered += [Discovered(MEMBER_KIND, member, kind_name, version)
                            for member, version in (meta.get("members") or {}).items()]
