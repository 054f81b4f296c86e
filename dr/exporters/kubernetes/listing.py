"""Listing one resource type (cluster-wide or in one namespace) into batches, page by page.

This runs in the export's worker threads. Each page (limit/continue) is turned into JSON Lines
as soon as it arrives and the parsed page is dropped, so memory stays flat whatever the number
of objects. A cluster-wide list comes back ordered by namespace, then name (etcd's key order),
so one batch is open at a time and is handed over (emit) when the namespace changes. Should a
namespace come round again, its objects go to a further part (`<identity>#2`): never lost,
never merged out of order.
"""

from __future__ import annotations

import json
import threading
from typing import Callable

from dr.exporters.kubernetes import helm_releases
from dr.exporters.kubernetes.batches import Batch
from dr.exporters.kubernetes.cleaning import strip_runtime
from dr.exporters.kubernetes.requesting import Api, KubeError
from dr.exporters.kubernetes.resources import ResourceType, provides_ref
from dr.exporters.kubernetes.scanning import Scanner
from dr.exporters.kubernetes.selecting import CRD_KEY, group_selected, skip_reason
from dr.model.artifacts import Dependency

_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # built once: per object


class Cancelled(Exception):
    """Another unit failed: stop listing (the export fails with that unit's error)."""


class HelmItem:
    """A decoded Helm release, to be written as its own secret-class artifact."""

    def __init__(self, summary: dict, secret_version: str):
        self.summary, self.secret_version = summary, secret_version


class UnitLister:
    """Lists units into batches and helm items, handing each finished one to `emit`."""

    def __init__(self, api: Api, options, *, wants_namespace: Callable[[str | None], bool],
                 keep_owner: Callable[[dict], bool], fingerprint: str,
                 observers: list[Callable[[ResourceType, dict], None]],
                 emit: Callable[[object], None], stop: threading.Event, hosts: tuple[str, ...] = (),
                 scanned: Callable[[list[Dependency]], None] | None = None):
        self.api, self.options = api, options
        self.wants_namespace, self.keep_owner = wants_namespace, keep_owner
        self.fingerprint, self.observers, self.emit, self.stop = fingerprint, list(observers), emit, stop
        self.scanner = Scanner(hosts)
        self.scanned = scanned  # told each object's dependencies (the class check, classes.py)
        self.skipped: dict[str, int] = {}
        self._lock = threading.Lock()  # one lister serves every listing thread

    def run(self, rtype: ResourceType, namespace: str | None = None, scanned_only: bool = False) -> None:
        where = f"list {rtype.qualified}" + (f" in namespace {namespace}" if namespace else "")
        state = _Open(rtype, self.fingerprint, scanned_only)
        try:
            for page in self._pages(rtype, namespace, where):
                if self.stop.is_set():
                    raise Cancelled(where)
                for obj in page.get("items") or []:
                    self._one(rtype, obj, state)
            state.finish(self.emit)
        finally:
            state.discard()

    def _pages(self, rtype: ResourceType, namespace: str | None, where: str):
        try:
            yield from self.api.pages(rtype.path(namespace), what=where, limit=self.options.page_size,
                                      timeout=self.options.list_timeout_seconds)
        except KubeError as exc:
            if exc.status == 410:
                raise KubeError(410, exc.reason, f"{exc} (the list took longer than the server keeps "
                                "continue tokens: lower page_size or raise parallelism)") from None
            raise

    def _one(self, rtype: ResourceType, obj: dict, state: "_Open") -> None:
        obj.setdefault("apiVersion", rtype.api_version)
        obj.setdefault("kind", rtype.kind)  # built-in list items carry neither
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("name") if rtype.key == ("", "namespaces") else meta.get("namespace")
        if not self.wants_namespace(namespace) or not self._wanted(rtype, obj):
            return
        for observe in self.observers:
            observe(rtype, obj)
        if rtype.key == ("", "secrets") and helm_releases.is_release_secret(obj):
            self._helm(obj)
        version_key = f"{meta.get('namespace', '')}/{meta.get('name')}@{meta.get('resourceVersion', '')}"
        member = (meta.get("name", ""), str(meta.get("resourceVersion") or "-"))  # before stripping
        keep = (lambda ref: False) if rtype.key == CRD_KEY else self.keep_owner
        strip_runtime(obj, include_status=self.options.include_status, keep_owner=keep)
        dependencies, workload = self.scanner.scan(obj)
        if self.scanned is not None:
            self.scanned(dependencies)
        if state.scanned_only:  # named, not stored: see batches.SCANNED_KIND
            obj = {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": {
                k: meta[k] for k in ("namespace", "name", "resourceVersion") if k in meta}}
        line = _ENCODE(obj).encode()  # the server's field order: stable from one backup to the next
        batch = state.batch_for(meta.get("namespace") if rtype.namespaced else None, self.emit)
        batch.add(line, version_key, dependencies, _provides(rtype, obj), workload, member)

    def _wanted(self, rtype: ResourceType, obj: dict) -> bool:
        if rtype.key == CRD_KEY and not group_selected((obj.get("spec") or {}).get("group", ""), self.options):
            return False
        reason = skip_reason(obj)
        if reason:
            with self._lock:
                self.skipped[reason] = self.skipped.get(reason, 0) + 1
            return False
        return True

    def _helm(self, secret: dict) -> None:
        meta = secret["metadata"]
        try:
            summary = helm_releases.summarize(secret)
        except helm_releases.ReleaseDecodeError as exc:
            self.emit({"severity": "warning", "code": "helm-release-undecodable",
                       "message": f"Secret {meta.get('namespace')}/{meta.get('name')}: {exc}; "
                                  "the Secret itself is backed up"})
            return
        self.emit(HelmItem(summary, f"{meta.get('namespace')}/{meta.get('name')}@{meta.get('resourceVersion')}"))


def _provides(rtype: ResourceType, obj: dict) -> list[str]:
    refs = [provides_ref(rtype.kind, obj)]
    if rtype.key == ("", "services"):
        meta = obj["metadata"]
        refs.append(f"{meta.get('name')}.{meta.get('namespace')}.svc.cluster.local")
    return refs


class _Open:
    """The batch being filled for one unit, and the namespaces already handed over."""

    def __init__(self, rtype: ResourceType, fingerprint: str, scanned_only: bool = False):
        self.rtype, self.fingerprint, self.scanned_only = rtype, fingerprint, scanned_only
        self.current: Batch | None = None
        self.parts: dict[str | None, int] = {}

    def batch_for(self, namespace: str | None, emit: Callable[[object], None]) -> Batch:
        if self.current is not None and self.current.namespace == namespace:
            return self.current
        self.finish(emit)
        self.parts[namespace] = self.parts.get(namespace, 0) + 1
        self.current = Batch(self.rtype, namespace, self.parts[namespace], self.fingerprint, self.scanned_only)
        return self.current

    def finish(self, emit: Callable[[object], None]) -> None:
        if self.current is not None:
            batch, self.current = self.current, None
            emit(batch)

    def discard(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None
