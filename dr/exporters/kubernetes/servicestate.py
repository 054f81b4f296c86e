"""What lies behind each backed-up Service: state in volumes, or nothing a restore cannot recreate.

A Service's DNS name (`db.ml.svc.cluster.local`) resolves in whatever cluster the pod runs in,
so restoring the Service and its workloads brings the name back. What it does not bring back is
data on the cluster's volumes: dr holds no volume data (the snapshot holds the claims' objects,
not what they store). So, once every list finished, each Service with a selector is matched
against the pod templates of the same namespace (StatefulSets, Deployments, DaemonSets,
ReplicaSets, standalone Pods) whose labels carry every selector pair, and its artifact records
one of two facts, as a dependency whose reference is the Service's DNS name:

  service-state      a matching backend keeps state in a PersistentVolumeClaim (a StatefulSet's
                     volumeClaimTemplates, a persistentVolumeClaim volume); the detail names it:
                     `Service/ml/db: PVC data-db-0 of StatefulSet ml/db`
  service-stateless  every matching backend has no such claim; the detail names them

A Service that selects nothing known (no selector, ExternalName, no matching template) gets
neither. The verdict engine (dr.model.recovery.services, for the audit and restore planning
alike) reads these facts to judge a reference to the Service: a blocker when the cluster
holding the state is lost, recreated by the restore when stateless.
Ephemeral volumes are per-pod scratch space, deleted with the pod: not state.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from dr.model.artifacts import Dependency
from dr.model.recovery.services import SERVICE_STATE as STATEFUL, SERVICE_STATELESS as STATELESS

SERVICES = ("", "services")
# (group, plural) -> where its pod template is: a path of keys ((): the object itself, a Pod).
TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "statefulsets"): ("spec", "template"), ("apps", "deployments"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"), ("apps", "replicasets"): ("spec", "template"),
    ("", "pods"): (),
}


@dataclass(frozen=True)
class Backend:
    who: str  # Kind/ns/name
    labels: frozenset[tuple[str, str]]
    claims: tuple[str, ...]  # the PVCs its pods mount


class ServiceState:
    """Observes Services and pod templates from the listing threads; dependencies() at the end."""

    def __init__(self):
        self._lock = threading.Lock()
        self._services: dict[str, list[tuple[str, frozenset[tuple[str, str]]]]] = {}  # ns -> (name, selector)
        self._backends: dict[str, list[Backend]] = {}  # ns -> backends

    def observe(self, rtype, obj: dict) -> None:
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name", "")
        if rtype.key == SERVICES:
            selector = (obj.get("spec") or {}).get("selector")
            if isinstance(selector, dict) and selector:
                with self._lock:
                    self._services.setdefault(namespace, []).append((name, _pairs(selector)))
        elif rtype.key in TEMPLATES:
            backend = _backend(f"{rtype.kind}/{namespace}/{name}", obj, TEMPLATES[rtype.key])
            if backend is not None:
                with self._lock:
                    self._backends.setdefault(namespace, []).append(backend)

    def dependencies(self, namespace: str | None) -> list[Dependency]:
        """The facts for the Services of one namespace (their batch's artifact records them)."""
        found = []
        for name, selector in self._services.get(namespace or "", []):
            chosen = [b for b in self._backends.get(namespace or "", []) if selector <= b.labels]
            if chosen:
                found.append(_fact(f"{name}.{namespace}.svc.cluster.local", f"Service/{namespace}/{name}", chosen))
        return found


def _pairs(labels: dict) -> frozenset[tuple[str, str]]:
    return frozenset((str(k), str(v)) for k, v in labels.items())


def _backend(who: str, obj: dict, path: tuple[str, ...]) -> Backend | None:
    template = obj
    for key in path:
        template = template.get(key) if isinstance(template.get(key), dict) else {}
    labels = (template.get("metadata") or {}).get("labels")
    if not isinstance(labels, dict) or not labels:
        return None
    return Backend(who, _pairs(labels), tuple(_claims(obj, template)))


def _claims(obj: dict, template: dict) -> list[str]:
    """The PVCs the pods mount: a StatefulSet's per-pod claims (the first ordinal's name), and
    claims named in the pod spec's volumes."""
    spec = obj.get("spec") or {}
    name = (obj.get("metadata") or {}).get("name", "")
    claims = []
    if "volumeClaimTemplates" in spec:
        replicas = spec.get("replicas", 1)
        more = f" (and {replicas - 1} more)" if isinstance(replicas, int) and replicas > 1 else ""
        claims += [f"{(t.get('metadata') or {}).get('name')}-{name}-0{more}"
                   for t in spec.get("volumeClaimTemplates") or [] if isinstance(t, dict)]
    for volume in (template.get("spec") or {}).get("volumes") or []:
        claim = ((volume or {}).get("persistentVolumeClaim") or {}).get("claimName")
        if isinstance(claim, str) and claim:
            claims.append(claim)
    return claims


def _fact(dns: str, service: str, backends: list[Backend]) -> Dependency:
    stateful = [b for b in backends if b.claims]
    if stateful:
        held = "; ".join(f"PVC {', '.join(b.claims)} of {b.who.replace('/', ' ', 1)}" for b in stateful)
        return Dependency(STATEFUL, dns, f"{service}: {held}")
    named = ", ".join(b.who.replace("/", " ", 1) for b in backends)
    return Dependency(STATELESS, dns, f"{service}: {named} (no PersistentVolumeClaim)")
