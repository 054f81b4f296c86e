"""The export: discovery, CRDs, then every selected type listed in parallel into the sink.

Flow: discover the served types (preferred versions); list the CRDs first, in this thread,
because they decide which types are custom resources; select the types (selecting.py); list
the rest on a bounded thread pool, one unit per type (or per type and namespace when the plan
names namespaces). Workers hand finished batches through a bounded queue to this thread, the
only one that writes to the sink (the sink is not thread-safe, and the bound keeps memory
flat when uploads are slower than lists). A type the server refuses to list (403, 5xx after
retries) is an error finding naming it, and the others are kept; a server that does not answer
(a timeout) or an expired continue token cancels the others and fails the export with its
error. Every served type is accounted for at the end (inventory.py): a backup never silently
lacks a type.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from dr.contract import ArtifactSink, ExportContext
from dr.exporters.kubernetes import helm_releases
from dr.exporters.kubernetes.batches import FORMAT, Batch
from dr.exporters.kubernetes.discovering import served_types
from dr.exporters.kubernetes.inventory import Inventory
from dr.exporters.kubernetes.certmanager import cert_manager_check
from dr.exporters.kubernetes.classes import class_check, wanted_classes
from dr.exporters.kubernetes.kueue import kueue_check
from dr.exporters.kubernetes.listing import HelmItem, UnitLister
from dr.exporters.kubernetes.readiness import ReadinessCheck
from dr.exporters.kubernetes.refchecks import combined
from dr.exporters.kubernetes.requesting import Api, KubeError, RequestTimeout
from dr.exporters.kubernetes.sealedsecrets import SealedSecretsCheck
from dr.exporters.kubernetes.servicestate import SERVICES, ServiceState
from dr.exporters.kubernetes.resources import ResourceType
from dr.exporters.kubernetes.selecting import CRD_KEY, Selection, select
from dr.exporters.kubernetes import volumedata
from dr.model.artifacts import Sensitivity


def _fingerprint(options, kept_owner_kinds: set[tuple[str, str]]) -> str:
    shape = {"format": FORMAT, "status": options.include_status, "owners": sorted(kept_owner_kinds)}
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()


def _owner_rule(kinds: set[tuple[str, str]]) -> Callable[[dict], bool]:
    """Keep an ownerReference only when its owner's type is exported (the owner is then in the
    backup, unless it was deleted while the backup ran)."""
    def keep(ref: dict) -> bool:
        api_version = str(ref.get("apiVersion", ""))
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        return (group, ref.get("kind", "")) in kinds
    return keep


class Export:
    def __init__(self, api: Api, context: ExportContext, sink: ArtifactSink):
        self.api, self.context, self.sink = api, context, sink
        self.options = context.options
        # Kueue's and cert-manager's references, and the classes objects name
        self.references = combined(kueue_check(), cert_manager_check(), class_check())
        self.sealed = SealedSecretsCheck()  # every SealedSecret opens with a backed-up key
        # what lies behind each Service (servicestate.py): its batches are written last, with the facts
        self.service_state = ServiceState()
        self.services: list[Batch] = []
        self.readiness = ReadinessCheck(self.options.readiness)
        # where each claim's data lives (volumedata.py): listed and written once every list finished
        self.volumes = volumedata.VolumeData(api.server, [r.rule() for r in self.options.placement_rules],
                                             context.hosts)
        self.stop = threading.Event()
        self.selection: Selection | None = None
        self.written = 0
        self.scanned_counts: dict[tuple[str, str], int] = {}
        self.inventory = Inventory()

    def run(self) -> None:
        served = served_types(self.api, self.inventory.undiscovered)
        for finding in self.inventory.discovery_findings():
            self.context.finding(**finding)
        crd_type = next((t for t in served if t.key == CRD_KEY), None)
        crds = self._export_crds(crd_type) if crd_type else []
        self.selection = selection = select(served, crds, self.options)
        for kind in selection.unknown_kinds:
            self.context.finding("warning", "kubernetes-kind-unknown",
                                 f"workload_kinds names {kind!r}, which the cluster does not serve")
        lister = self._lister(self._queue_put, _owner_rule(selection.exported_kinds()))
        units = [(t, ns, False) for t in selection.types if t.key != CRD_KEY for ns in self._namespaces(t)]
        units += [(t, ns, True) for t in selection.scanned for ns in self._namespaces(t)]
        try:
            self._run_parallel(lister, units)
            self._write_services()
            self._write_volumes()
        finally:
            for batch in self.services:
                batch.close()
        self._report_scanned()
        for finding in [*self.references.findings(), *self.sealed.findings()]:
            self.context.finding(**finding)
        self._report_readiness()
        for reason, count in sorted(lister.skipped.items()):
            self.context.log(f"skipped {count} objects: {reason}")
        self._report_types(served)

    def _report_types(self, served: list[ResourceType]) -> None:
        lines, finding = self.inventory.report(served, self.selection)
        for line in lines:
            self.context.log(line)
        self.context.finding(**finding)

    # -- CRDs, first and in this thread ----------------------------------------------------------
    def _export_crds(self, crd_type: ResourceType) -> list[dict]:
        """Write the CRD artifact; return the exported CRDs (they define the custom types)."""
        crds: list[dict] = []
        lister = self._lister(self._write, lambda ref: False)
        lister.observers.append(lambda rtype, obj: crds.append(
            {"spec": {"group": obj["spec"]["group"], "names": {"plural": obj["spec"]["names"]["plural"]}}}))
        lister.run(crd_type)
        return crds

    def _namespaces(self, rtype: ResourceType) -> list[str | None]:
        if rtype.namespaced and self.selection.namespaces:
            return [ns for ns in self.selection.namespaces if self.selection.wants_namespace(ns)]
        return [None]

    def _lister(self, emit: Callable[[object], None], keep_owner: Callable[[dict], bool]) -> UnitLister:
        wants = self.selection.wants_namespace if self.selection else (lambda ns: True)
        kinds = self.selection.exported_kinds() if self.selection else set()
        return UnitLister(self.api, self.options, wants_namespace=wants, keep_owner=keep_owner,
                          fingerprint=_fingerprint(self.options, kinds),
                          observers=[self.references.observe, self.readiness.observe, self.sealed.observe,
                                     self.service_state.observe, self.volumes.observe],
                          emit=emit, stop=self.stop, hosts=self.context.hosts,
                          scanned=lambda found: self.references.want(wanted_classes(found)))

    # -- the parallel part -------------------------------------------------------------------------
    def _run_parallel(self, lister: UnitLister, units: list[tuple[ResourceType, str | None, bool]]) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=2 * self.options.parallelism)
        with ThreadPoolExecutor(self.options.parallelism, thread_name_prefix="kube-list") as pool:
            futures = [pool.submit(self._list, lister, rtype, ns, scanned) for rtype, ns, scanned in units]
            try:
                self._drain(futures)
            except BaseException:
                self.stop.set()
                self._discard_queued(futures)
                raise

    def _list(self, lister: UnitLister, rtype: ResourceType, namespace: str | None, scanned: bool) -> None:
        """One unit; a refusal of this type is a finding (on the writing thread), not the end."""
        try:
            lister.run(rtype, namespace, scanned)
        except KubeError as exc:
            if isinstance(exc, RequestTimeout) or exc.status in (0, 410):
                raise
            self._queue_put(self.inventory.list_failed(rtype, namespace, exc))

    def _drain(self, futures: list[Future]) -> None:
        while True:
            try:
                # a short wait: once the last list is done, this wait is all that is left
                # before the backup moves on (it was 50 ms, 25 on average, on every backup)
                self._write(self._queue.get(timeout=0.005))
                continue
            except queue.Empty:
                pass
            failed = next((f for f in futures if f.done() and f.exception()), None)
            if failed is not None:
                raise failed.exception()
            if all(f.done() for f in futures) and self._queue.empty():
                return

    def _discard_queued(self, futures: list[Future]) -> None:
        while not all(f.done() for f in futures) or not self._queue.empty():
            try:
                item = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(item, Batch):
                item.close()

    def _queue_put(self, item: object) -> None:
        """Block while the writer is behind (memory stays bounded); give up once cancelled."""
        while not self.stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        if isinstance(item, Batch):
            item.close()

    # -- writing (this thread only) ----------------------------------------------------------------
    def _write(self, item: object) -> None:
        if isinstance(item, Batch) and item.rtype.key == SERVICES and not item.scanned_only:
            self.services.append(item)  # written once every backend was seen (_write_services)
        elif isinstance(item, Batch):
            self._write_batch(item)
        elif isinstance(item, HelmItem):
            self._write_helm(item)
        elif isinstance(item, dict):
            self.context.finding(**item)

    def _report_readiness(self) -> None:
        found = list(self.readiness.findings())
        for finding in [*found, *self.readiness.facts()]:
            self.context.finding(**finding)
        checks = ", ".join(self.options.readiness.checks) or "none (readiness.checks is empty)"
        self.context.log(f"readiness checks ({checks}): {len(found)} finding(s)")

    def _report_scanned(self) -> None:
        """Name what the plan's workload_kinds leaves out (backup output and snapshot manifest)."""
        if not self.selection.scanned:
            return
        counts = ", ".join(f"{t.kind} ({self.scanned_counts.get(t.key, 0)})" for t in self.selection.scanned)
        message = (f"workload_kinds leaves out {counts}: these objects are not in the snapshot and a restore "
                   "will not bring them back; they were scanned, so the audit still sees what they depend on")
        self.context.log(message)
        self.context.finding("warning", "kubernetes-workloads-not-exported", message,
                             kinds=[t.kind for t in self.selection.scanned],
                             objects={t.kind: self.scanned_counts.get(t.key, 0) for t in self.selection.scanned})

    def _write_batch(self, batch: Batch) -> None:
        custom = self.selection is not None and batch.rtype.key in self.selection.custom
        if batch.scanned_only:
            self.scanned_counts[batch.rtype.key] = self.scanned_counts.get(batch.rtype.key, 0) + batch.count
        try:
            self.sink.write(batch.kind, batch.identity, batch.open, sensitivity=batch.sensitivity(self.context.sensitivity),
                            dependencies=list(batch.dependencies), meta=batch.meta(custom),
                            change_token=batch.change_token)
            self.written += 0 if batch.scanned_only else batch.count
            if not batch.scanned_only:
                self.inventory.count(batch.rtype, batch.count)
        finally:
            batch.close()

    def _write_services(self) -> None:
        """The Services' batches, each recording what lies behind its Services (servicestate.py)."""
        while self.services:
            batch = self.services.pop(0)
            batch.dependencies.update(dict.fromkeys(self.service_state.dependencies(batch.namespace)))
            self._write_batch(batch)

    def _write_volumes(self) -> None:
        """One kubernetes-volumes artifact per namespace with claims: where each claim's data lives."""
        namespaces = [ns for ns in self.selection.namespaces if self.selection.wants_namespace(ns)]
        claim_lists = ([(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", f"persistentvolumeclaims in {ns}")
                        for ns in namespaces] if self.selection.namespaces else [volumedata.CLAIMS])
        listed = [self._list_all(path, what) for path, what in [*claim_lists, *volumedata.LISTS]]
        if any(items is None for items in listed):
            return
        *claim_items, pvs, classes = listed
        pvcs = [p for items in claim_items for p in items
                if self.selection.wants_namespace((p.get("metadata") or {}).get("namespace"))]
        for namespace, claims in volumedata.by_namespace(self.volumes.claims(pvcs, pvs, classes)):
            if not self.selection.wants_namespace(namespace):
                continue
            data, token = volumedata.content(claims)
            self.sink.write(volumedata.KIND, namespace, data, sensitivity=Sensitivity.INTERNAL,
                            dependencies=[c.dependency() for c in claims],
                            meta={"namespace": namespace, "claims": len(claims)}, change_token=token)

    def _list_all(self, path: str, what: str) -> list[dict] | None:
        """Every item of a cluster-wide list; None (and a warning naming it) when it is refused."""
        try:
            return [item for page in self.api.pages(path, what=what, limit=self.options.page_size,
                                                    timeout=self.options.list_timeout_seconds)
                    for item in page.get("items") or []]
        except KubeError as exc:
            if isinstance(exc, RequestTimeout) or exc.status in (0, 410):
                raise
            self.context.finding("warning", "kubernetes-volumes-unlisted",
                                 f"listing {what} failed ({exc}): where the claims' volume data lives is not "
                                 f"recorded, so the audit cannot judge it", type=what, status=exc.status)
            return None

    def _write_helm(self, item: HelmItem) -> None:
        summary = item.summary
        content = json.dumps(summary, sort_keys=True, indent=1).encode()
        meta = {"name": summary["name"], "namespace": summary["namespace"], "revision": summary["revision"],
                "status": summary["status"], "chart": summary["chart"], "secret": summary["secret"],
                "provides": [f"helm-release:{summary['namespace']}/{summary['name']}"]}
        self.sink.write(helm_releases.KIND, helm_releases.identity(summary), content,
                        sensitivity=Sensitivity.SECRET, dependencies=helm_releases.dependencies(summary),
                        meta=meta, change_token=f"helm-{FORMAT}:{item.secret_version}")
