"""`--namespace-map OLD=NEW` beyond metadata: every place an object names a mapped namespace.

Rewritten, because the value is a namespace name or a Service DNS name by definition:
  metadata.namespace; a Namespace's own name and its kubernetes.io/metadata.name label;
  label selectors on kubernetes.io/metadata.name wherever they sit (`matchLabels`, and the
  values of `matchExpressions`): a Kueue ClusterQueue's namespaceSelector, a webhook's, a
  NetworkPolicy peer's ... (without it, the ClusterQueue keeps selecting the old name and the
  LocalQueue in the new namespace is never admitted);
  ServiceAccount subjects of (Cluster)RoleBindings;
  Service DNS names `<svc>.<old>.svc[...]` (wildcards `*.<old>.svc...` too) in a pod template's
  container `env[].value`, `args` and `command`, and in a cert-manager Certificate's `dnsNames`
  and `commonName`.
Listed, not rewritten (a note per object, on its restore outcome and in the log): any other
string holding a Service DNS name of a mapped namespace (a ConfigMap's data, a custom
resource's spec, an annotation), and any other `namespace` field naming one: whether they
should follow the mapping is the owner's call (an Argo CD destination names a namespace in
another cluster).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from dr.exporters.kubernetes.scanning import walk

NAME_LABEL = "kubernetes.io/metadata.name"
CERTIFICATE_FIELDS = ("dnsNames", "commonName")
CONTAINER_FIELDS = ("args", "command")
_SERVICE_DNS = re.compile(r"(?<![\w.-])(\*|[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)\.([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)"
                          r"\.svc(?![\w-])")
_NOT_WALKED = {"Secret": ("data", "stringData"), "ConfigMap": ("binaryData",)}


def _path(parts: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


class NamespaceMap:
    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def __bool__(self) -> bool:
        return bool(self.mapping)

    def name(self, namespace: str | None) -> str | None:
        return self.mapping.get(namespace, namespace) if namespace else namespace

    def dns(self, text: str) -> str:
        """`text` with every Service DNS name of a mapped namespace moved to the new one."""
        if ".svc" not in text:
            return text
        return _SERVICE_DNS.sub(lambda m: f"{m.group(1)}.{self.mapping[m.group(2)]}.svc"
                                if m.group(2) in self.mapping else m.group(0), text)

    def apply(self, obj: dict, kind: str, notes: list[str]) -> None:
        """Rewrite `obj` outside metadata (see the module docstring); add a note per place left."""
        skipped = _NOT_WALKED.get(kind, ())
        rewritten: set[tuple[int, Any]] = set()  # (id of a dict or list, key; None: all of a list)
        for parts, node in _dicts(obj, skipped):
            self._selector(node)
            if kind == "Certificate" and parts == ("spec",):
                self._fields(node, CERTIFICATE_FIELDS, rewritten)
            if isinstance(node.get("containers"), list):
                for field in ("initContainers", "containers", "ephemeralContainers"):
                    for container in node.get(field) or []:
                        if isinstance(container, dict):
                            self._container(container, rewritten)
        notes += self._left(obj, skipped, rewritten)

    def _selector(self, node: dict) -> None:
        labels = node.get("matchLabels")
        if isinstance(labels, dict) and isinstance(labels.get(NAME_LABEL), str):
            labels[NAME_LABEL] = self.name(labels[NAME_LABEL])
        for expression in node.get("matchExpressions") or []:
            if isinstance(expression, dict) and expression.get("key") == NAME_LABEL:
                values = expression.get("values")
                if isinstance(values, list):
                    expression["values"] = [self.name(v) if isinstance(v, str) else v for v in values]

    def _container(self, container: dict, rewritten: set[tuple[int, Any]]) -> None:
        for variable in container.get("env") or []:
            if isinstance(variable, dict):
                self._fields(variable, ("value",), rewritten)
        self._fields(container, CONTAINER_FIELDS, rewritten)

    def _fields(self, node: dict, fields: tuple[str, ...], rewritten: set[tuple[int, Any]]) -> None:
        for field in fields:
            value = node.get(field)
            if isinstance(value, str):
                node[field] = self.dns(value)
                rewritten.add((id(node), field))
            elif isinstance(value, list):
                node[field] = [self.dns(v) if isinstance(v, str) else v for v in value]
                rewritten.add((id(node[field]), None))

    def _left(self, obj: dict, skipped: tuple[str, ...], rewritten: set[tuple[int, Any]]) -> list[str]:
        """Where a mapped namespace is still named after the rewrite: one note per path."""
        notes = []
        for parts, container, key, value in _strings(obj, skipped):
            if (id(container), key) in rewritten or (id(container), None) in rewritten:
                continue
            if key == "namespace" and value in self.mapping and parts[:1] != ("metadata",):
                notes.append(f"{_path(parts)} names namespace {value!r}")
            elif ".svc" in value and self.dns(value) != value:
                notes.append(f"{_path(parts)} names a Service in {self._old_in(value)}")
        return notes

    def _old_in(self, value: str) -> str:
        found = sorted({m.group(2) for m in _SERVICE_DNS.finditer(value) if m.group(2) in self.mapping})
        return ", ".join(f"namespace {n!r}" for n in found)


def _dicts(obj: dict, skipped: tuple[str, ...]) -> Iterator[tuple[tuple, dict]]:
    """Every dict below the top (metadata excepted) with its path."""
    for key, value in obj.items():
        if key != "metadata" and key not in skipped:
            yield from walk(value, (key,))


def _strings(obj: dict, skipped: tuple[str, ...]) -> Iterator[tuple[tuple, Any, Any, str]]:
    """(path, container, key, string) for every string, annotations included, labels not."""
    meta = obj.get("metadata") or {}
    stack: list[tuple[tuple, Any]] = [(("metadata", "annotations"), meta.get("annotations") or {})]
    stack += [((key,), value) for key, value in obj.items() if key != "metadata" and key not in skipped]
    while stack:
        parts, node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, str):
                yield parts + (key,), node, key, value
            elif isinstance(value, (dict, list)):
                stack.append((parts + (key,), value))
