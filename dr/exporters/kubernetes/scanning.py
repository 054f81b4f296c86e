"""Finding what restoring an object depends on, without knowing its kind.

A pod template looks the same wherever it sits: a dict with a `containers` list of dicts that
carry `image`. Walking every object for that shape finds the images of Deployments, Jobs,
CronJobs, Pods and of custom resources nobody told dr about (LeaderWorkerSet, JobSet,
RayCluster, PyTorchJob ...). The same walk finds the other shapes worth recording:
  storageClassName  anywhere (PVCs, volumeClaimTemplates, ephemeral volumes)   storage-class
  clientConfig      admission webhooks, CRD conversion webhooks                webhook-service
  spec.provider     external-secrets SecretStore / ClusterSecretStore          secret-store
and, inside each pod spec, the Secrets and ConfigMaps it mounts or reads (volumes, projected
volumes, envFrom, env valueFrom, imagePullSecrets). References to objects are written the way
artifacts declare what they provide (`secret:<ns>/<name>`), so the audit can tell which ones
the snapshot itself restores.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Iterator

from dr.model.artifacts import Dependency

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
# Where the walk does not go, and why: nothing there is a reference, and it is large.
_NOT_WALKED = {"Secret": "data", "ConfigMap": "data", "CustomResourceDefinition": "spec"}
# Object metadata and status never hold a pod spec or a reference worth recording.
_NEVER_REFERENCES = frozenset({"metadata", "status"})
# Keys of an external-secrets provider block that name the store's endpoint.
_STORE_ENDPOINT_KEYS = ("server", "url", "vaultUrl", "endpoint", "host", "address")


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
        self.workload = False


class Scanner:
    """The dependencies of one object: call scan(obj) for each exported object (thread-safe)."""

    def scan(self, obj: dict) -> tuple[list[Dependency], bool]:
        """(dependencies, has a pod template). Order is stable; duplicates removed."""
        state = _State(obj)
        skipped = _NOT_WALKED.get(state.kind)
        self._visit({k: v for k, v in obj.items() if k != skipped} if skipped else obj, [], state)
        if state.kind == "CustomResourceDefinition":
            state.found.update(dict.fromkeys(self._conversion(obj, state.where)))
        return list(state.found), state.workload

    def _visit(self, node: Any, path: list, state: _State) -> None:
        """Depth-first over dicts and lists; the path is built only where something is found
        (this runs for every exported object, so it avoids per-node allocations)."""
        if type(node) is dict:
            if "containers" in node and is_pod_spec(node):
                state.workload = True
                state.found.update(dict.fromkeys(self._pod(node, tuple(path), state.namespace, state.where)))
                # Containers hold nothing else of interest; ephemeral volumes may name a class.
                path.append("volumes")
                self._visit(node.get("volumes"), path, state)
                path.pop()
                return
            if "storageClassName" in node or "clientConfig" in node or "provider" in node \
                    or "secretStoreRef" in node:
                state.found.update(dict.fromkeys(self._shapes(node, tuple(path), state.obj, state.where)))
            children = node.items()
        elif type(node) is list:
            children = enumerate(node)
        else:
            return
        for key, value in children:
            if (type(value) is dict and key not in _NEVER_REFERENCES) or type(value) is list:
                path.append(key)
                self._visit(value, path, state)
                path.pop()

    def _pod(self, spec: dict, parts: tuple, namespace: str, where: str) -> Iterator[Dependency]:
        for cparts, container in containers(spec):
            at = parts + cparts
            yield Dependency("image", str(container["image"]), f"{where} {_path(at + ('image',))}")
            yield from self._container_refs(container, at, namespace, where)
        for index, secret in enumerate(spec.get("imagePullSecrets") or []):
            if isinstance(secret, dict) and secret.get("name"):
                yield _ref("secret", namespace, secret["name"], where, parts + ("imagePullSecrets", index))
        for index, volume in enumerate(spec.get("volumes") or []):
            if isinstance(volume, dict):
                yield from self._volume_refs(volume, parts + ("volumes", index), namespace, where)

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

    def _shapes(self, node: dict, parts: tuple, obj: dict, where: str) -> Iterator[Dependency]:
        storage_class = node.get("storageClassName")
        if isinstance(storage_class, str) and storage_class:
            yield Dependency("storage-class", f"storageclass:{storage_class}",
                             f"{where} {_path(parts + ('storageClassName',))}")
        if isinstance(node.get("clientConfig"), dict):
            yield from _webhook(node["clientConfig"], parts + ("clientConfig",), where)
        if parts == ("spec",) and isinstance(node.get("provider"), dict) and \
                str(obj.get("apiVersion", "")).startswith("external-secrets.io/"):
            yield from _secret_stores(node["provider"], where)
        if parts == ("spec",) and isinstance(node.get("secretStoreRef"), dict):
            yield from _store_ref(node["secretStoreRef"], obj, where)

    @staticmethod
    def _conversion(obj: dict, where: str) -> Iterator[Dependency]:
        webhook = (((obj.get("spec") or {}).get("conversion") or {}).get("webhook") or {})
        if isinstance(webhook.get("clientConfig"), dict):
            yield from _webhook(webhook["clientConfig"], ("spec", "conversion", "webhook", "clientConfig"), where)


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


def _secret_stores(provider: dict, where: str) -> Iterator[Dependency]:
    """One dependency per provider block: its endpoint, or `<provider>:<region>` for cloud ones."""
    for name, config in provider.items():
        if not isinstance(config, dict):
            continue
        endpoint = next((config[k] for k in _STORE_ENDPOINT_KEYS if isinstance(config.get(k), str)), None)
        if endpoint is None:
            region = config.get("region") or config.get("location") or config.get("projectID") or ""
            service = config.get("service", "")
            endpoint = ":".join(p for p in (name, str(service), str(region)) if p)
        yield Dependency("secret-store", endpoint, f"{where} .spec.provider.{name}")


def _store_ref(ref: dict, obj: dict, where: str) -> Iterator[Dependency]:
    """An ExternalSecret's store: covered when the snapshot holds that SecretStore object."""
    if not ref.get("name"):
        return
    kind = str(ref.get("kind") or "SecretStore").lower()
    namespace = (obj.get("metadata") or {}).get("namespace", "") if kind == "secretstore" else ""
    yield Dependency("secret-store", f"{kind}:{namespace}/{ref['name']}" if namespace else f"{kind}:{ref['name']}",
                     f"{where} .spec.secretStoreRef")
