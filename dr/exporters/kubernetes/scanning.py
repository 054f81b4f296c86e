"""Finding what restoring an object depends on, without knowing its kind: one pass per object.

Three passes share one walk of the object (metadata and status excepted: they hold no
dependency, only links and runtime state):
  shapes    a pod template looks the same wherever it sits: a dict with a `containers` list of
            dicts that carry `image`. Walking every object for that shape finds the workloads
            of Deployments, Jobs, CronJobs, Pods and of custom resources nobody told dr about
            (LeaderWorkerSet, JobSet, RayCluster, PyTorchJob ...), and inside each pod spec the
            Secrets and ConfigMaps it mounts or reads (volumes, projected volumes, envFrom, env
            valueFrom, imagePullSecrets). Other shapes:
              storageClassName  anywhere (PVCs, volumeClaimTemplates, ephemeral volumes)  storage-class
              priorityClassName, runtimeClassName  in a pod spec   priority-class, runtime-class
              ingressClassName  an Ingress's (or its kubernetes.io/ingress.class annotation) ingress-class
              clientConfig      admission webhooks, CRD conversion webhooks               webhook-service
              image, *Image     any string under such a key                               image
  fields    fields whose meaning is known exactly, per API group (wellknown.py): Argo CD, Flux,
            cert-manager, External Secrets, ServiceAccounts
  strings   every other string: URLs, object-store URIs, git remotes, Service DNS names, AWS
            ARNs, Google Cloud KMS keys and the plan's own host names (references.py), except the
            names an object asserts or serves (a Certificate's dnsNames, an Ingress's or a
            Gateway's hosts): not dependencies
Each dependency's detail names the object and the JSON path where it was found
(`Deployment/ns/name .spec.template.spec.containers[0].env[2].value`). Image references are
recorded with their registry written out (dr.model.locations.canonical_image): `busybox` is
docker.io/library/busybox, so that placement sees the registry, not a host named busybox.
Object references are written the way artifacts declare what they provide (`secret:<ns>/<name>`),
so the audit can tell which ones the snapshot itself restores.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterable, Iterator

from dr.exporters.kubernetes import references
from dr.exporters.kubernetes.classes import CLASSES
from dr.exporters.kubernetes.wellknown import known_fields
from dr.model.artifacts import Dependency
from dr.model.locations import canonical_image

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
# Class names a pod spec holds, as classes.py declares them (which also checks them).
POD_CLASSES = tuple((known.pod_field, kind, known) for kind, known in CLASSES.items() if known.pod_field)
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
# Where the walk does not go, and why: Secret values are secret (and base64), binaryData is not
# text, and a CRD's schema is documentation (its conversion webhook is read apart).
_NOT_WALKED = {"Secret": ("data", "stringData"), "ConfigMap": ("binaryData",),
               "CustomResourceDefinition": ("spec",)}
# Names an object asserts or serves, not names it needs: a certificate is issued for its names and
# an Ingress, Gateway or route serves its hosts in whatever cluster runs it (recovery reissues and
# re-serves them), so the walk leaves these fields out. (group, kind) -> paths; `*` is every item.
_GW = "gateway.networking.k8s.io"
_ASSERTED_NAMES: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("cert-manager.io", "Certificate"): tuple(("spec", f) for f in (
        "dnsNames", "commonName", "uris", "ipAddresses", "emailAddresses")),
    ("networking.k8s.io", "Ingress"): (("spec", "rules", "*", "host"), ("spec", "tls", "*", "hosts")),
    (_GW, "Gateway"): (("spec", "listeners", "*", "hostname"),),
    **{(_GW, route): (("spec", "hostnames"),) for route in ("HTTPRoute", "GRPCRoute", "TLSRoute")},
}
# Object metadata and status never hold a pod spec or a reference worth recording (labels and
# annotations are links and selectors, status is runtime state); nor do these pod-spec parts,
# which repeat in every pod template (quantities, ports, selectors, scheduling).
_NEVER_REFERENCES = frozenset({"metadata", "status", "resources", "ports", "securityContext", "selector",
                               "matchLabels", "matchExpressions", "affinity", "tolerations", "nodeSelector",
                               "labels"})
_NEVER_BUT_METADATA = _NEVER_REFERENCES - {"metadata"}


@lru_cache(maxsize=4096)  # objects of one type repeat the same few paths
def _path(parts: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def walk(value: Any, parts: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    """Every dict inside `value` with its path (iterative: objects can nest deeply)."""
    stack = [(parts, value)]
    while stack:
        here, node = stack.pop()
        if isinstance(node, dict):
            yield here, node
            stack.extend((here + (k,), v) for k, v in node.items() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((here + (i,), v) for i, v in enumerate(node) if isinstance(v, (dict, list)))


def is_pod_spec(node: dict) -> bool:
    containers = node.get("containers")
    return (isinstance(containers, list) and bool(containers)
            and all(isinstance(c, dict) and "image" in c for c in containers))


def pod_specs(obj: dict) -> Iterator[tuple[tuple, dict]]:
    for parts, node in walk(obj):
        if is_pod_spec(node):
            yield parts, node


def containers(spec: dict) -> Iterator[tuple[tuple, dict]]:
    for field in CONTAINER_LISTS:
        for index, container in enumerate(spec.get(field) or []):
            if isinstance(container, dict):
                yield (field, index), container


class _State:
    """What one scan collects (a Scanner is shared by the listing threads; this is not)."""

    def __init__(self, obj: dict):
        kind = obj.get("kind", "")
        meta = obj.get("metadata") or {}
        self.obj, self.kind = obj, kind
        self.namespace = meta.get("namespace") or ""
        name = meta.get("name", "")
        self.where = f"{kind}/{self.namespace}/{name}" if self.namespace else f"{kind}/{name}"
        self.found: dict[Dependency, None] = {}
        self.references: set[str] = set()  # what the exact passes found: the string pass skips it
        self.workload = False

    def add(self, kind: str, reference: str, at: tuple) -> None:
        self.references.add(reference)
        note = references.resolves_to(reference)
        self.found[Dependency(kind, reference, f"{self.where} {_path(at)}" + (f" ({note})" if note else ""))] = None

    def add_found(self, kind: str, reference: str, path: list, key: Any, note: str = "") -> None:
        """From the string pass: once per (kind, reference) and object, at its first path."""
        if reference not in self.references:
            self.references.add(reference)
            detail = f"{self.where} {_path(tuple(path) + (key,))}" + (f" ({note})" if note else "")
            self.found[Dependency(kind, reference, detail)] = None


class Scanner:
    """The dependencies of one object: call scan(obj) for each exported object (thread-safe).

    hosts: the host globs the plan places (locations, placement rules); a bare host name in a
    string is recorded only when it matches one.
    """

    def __init__(self, hosts: Iterable[str] = ()):
        self.hosts = references.HostPatterns(hosts)
        self._with_hosts = bool(self.hosts)

    def scan(self, obj: dict) -> tuple[list[Dependency], bool]:
        """(dependencies, has a pod template). Order is stable; duplicates removed."""
        state = _State(obj)
        for kind, reference, at in known_fields(obj, state.namespace):
            state.add(kind, reference, at)
        skipped = _NOT_WALKED.get(state.kind, ())
        walked = without_asserted_names(obj)
        self._visit({k: v for k, v in walked.items() if k not in skipped} if skipped else walked, [], state)
        if state.kind == "CustomResourceDefinition":
            state.found.update(dict.fromkeys(self._conversion(obj, state.where)))
        elif state.kind == "Ingress":
            state.found.update(dict.fromkeys(_ingress_class(obj, state.where)))
        return list(state.found), state.workload

    def _visit(self, node: Any, path: list, state: _State) -> None:
        """Depth-first over dicts and lists; the path is built only where something is found
        (this runs for every exported object, so it avoids per-node allocations)."""
        if type(node) is dict:
            if "containers" in node and is_pod_spec(node):
                state.workload = True
                state.found.update(dict.fromkeys(self._pod(node, tuple(path), state.namespace, state.where)))
            if "storageClassName" in node or "clientConfig" in node:
                state.found.update(dict.fromkeys(self._shapes(node, tuple(path), state.where)))
            children = node.items()
            # `metadata` is an object's (or a template's, beside its `spec`): links, not references;
            # elsewhere (a KEDA trigger's metadata) it is configuration like any other field
            never = _NEVER_REFERENCES if not path or "spec" in node else _NEVER_BUT_METADATA
        elif type(node) is list:
            children, never = enumerate(node), _NEVER_REFERENCES
        else:
            return
        with_hosts = self._with_hosts
        for key, value in children:
            kind = type(value)
            if kind is str:
                # the literals references.find needs, tested inline: this runs for every string
                if key == "image" or (type(key) is str and key[-5:] == "Image"):
                    if value:
                        state.add_found("image", canonical_image(value), path, key)
                elif "://" in value or "git@" in value or ".svc" in value or "arn:" in value \
                        or "keyRings/" in value or (with_hosts and "." in value):
                    for found_kind, reference, note in references.find(value, self.hosts):
                        state.add_found(found_kind, reference, path, key, note)
            elif (kind is dict and key not in never) or kind is list:
                path.append(key)
                self._visit(value, path, state)
                path.pop()

    def _pod(self, spec: dict, parts: tuple, namespace: str, where: str) -> Iterator[Dependency]:
        """The object references of one pod spec (its images are found by the `image` key)."""
        for cparts, container in containers(spec):
            yield from self._container_refs(container, parts + cparts, namespace, where)
        for index, secret in enumerate(spec.get("imagePullSecrets") or []):
            if isinstance(secret, dict) and secret.get("name"):
                yield _ref("secret", namespace, secret["name"], where, parts + ("imagePullSecrets", index))
        for index, volume in enumerate(spec.get("volumes") or []):
            if isinstance(volume, dict):
                yield from self._volume_refs(volume, parts + ("volumes", index), namespace, where)
        for field, kind, known in POD_CLASSES:
            name = spec.get(field)
            if isinstance(name, str) and name and name not in known.built_in:
                yield Dependency(kind, known.reference(name), f"{where} {_path(parts + (field,))}")

    @staticmethod
    def _container_refs(container: dict, at: tuple, namespace: str, where: str) -> Iterator[Dependency]:
        for index, source in enumerate(container.get("envFrom") or []):
            for field, kind in (("secretRef", "secret"), ("configMapRef", "configmap")):
                name = ((source or {}).get(field) or {}).get("name")
                if name:
                    yield _ref(kind, namespace, name, where, at + ("envFrom", index, field))
        for index, env in enumerate(container.get("env") or []):
            value_from = (env or {}).get("valueFrom") or {}
            for field, kind in (("secretKeyRef", "secret"), ("configMapKeyRef", "configmap")):
                name = (value_from.get(field) or {}).get("name")
                if name:
                    yield _ref(kind, namespace, name, where, at + ("env", index, "valueFrom", field))

    @staticmethod
    def _volume_refs(volume: dict, at: tuple, namespace: str, where: str) -> Iterator[Dependency]:
        secret = (volume.get("secret") or {}).get("secretName")
        if secret:
            yield _ref("secret", namespace, secret, where, at + ("secret",))
        configmap = (volume.get("configMap") or {}).get("name")
        if configmap:
            yield _ref("configmap", namespace, configmap, where, at + ("configMap",))
        for index, source in enumerate((volume.get("projected") or {}).get("sources") or []):
            for field, kind in (("secret", "secret"), ("configMap", "configmap")):
                name = ((source or {}).get(field) or {}).get("name")
                if name:
                    yield _ref(kind, namespace, name, where, at + ("projected", "sources", index, field))

    @staticmethod
    def _shapes(node: dict, parts: tuple, where: str) -> Iterator[Dependency]:
        storage_class = node.get("storageClassName")
        if isinstance(storage_class, str) and storage_class:
            yield Dependency("storage-class", CLASSES["storage-class"].reference(storage_class),
                             f"{where} {_path(parts + ('storageClassName',))}")
        if isinstance(node.get("clientConfig"), dict):
            yield from _webhook(node["clientConfig"], parts + ("clientConfig",), where)

    @staticmethod
    def _conversion(obj: dict, where: str) -> Iterator[Dependency]:
        webhook = (((obj.get("spec") or {}).get("conversion") or {}).get("webhook") or {})
        if isinstance(webhook.get("clientConfig"), dict):
            yield from _webhook(webhook["clientConfig"], ("spec", "conversion", "webhook", "clientConfig"), where)


def without_asserted_names(obj: dict) -> dict:
    """The object without the names it asserts or serves (_ASSERTED_NAMES); copied only along them."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    for path in _ASSERTED_NAMES.get((group, obj.get("kind", "")), ()):
        obj = _without(obj, path)
    return obj


def _without(node: Any, path: tuple[str, ...]) -> Any:
    head, rest = path[0], path[1:]
    if head == "*" and isinstance(node, list):
        return [_without(item, rest) for item in node]
    if not isinstance(node, dict) or head not in node:
        return node
    if not rest:
        return {k: v for k, v in node.items() if k != head}
    return {**node, head: _without(node[head], rest)}


def _ingress_class(ingress: dict, where: str) -> Iterator[Dependency]:
    """spec.ingressClassName, else the deprecated annotation (metadata is not walked)."""
    name = (ingress.get("spec") or {}).get("ingressClassName")
    at = ("spec", "ingressClassName")
    if not (isinstance(name, str) and name):
        name = ((ingress.get("metadata") or {}).get("annotations") or {}).get(INGRESS_CLASS_ANNOTATION)
        at = ("metadata", "annotations", INGRESS_CLASS_ANNOTATION)
    if isinstance(name, str) and name:
        yield Dependency("ingress-class", CLASSES["ingress-class"].reference(name), f"{where} {_path(at)}")


def _ref(kind: str, namespace: str, name: str, where: str, at: tuple) -> Dependency:
    return Dependency(kind, f"{kind}:{namespace}/{name}" if namespace else f"{kind}:{name}",
                      f"{where} {_path(at)}")


def _webhook(config: dict, at: tuple, where: str) -> Iterator[Dependency]:
    service = config.get("service")
    if isinstance(service, dict) and service.get("name"):
        dns = f"{service['name']}.{service.get('namespace', 'default')}.svc.cluster.local"
        yield Dependency("webhook-service", dns, f"{where} {_path(at + ('service',))}")
    elif isinstance(config.get("url"), str):
        yield Dependency("webhook-service", config["url"], f"{where} {_path(at + ('url',))}")
