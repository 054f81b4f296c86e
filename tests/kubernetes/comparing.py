"""Comparing two clusters object by object, after removing what a server assigns (written
independently of the exporter's own cleaning, so the test does not grade itself)."""

from __future__ import annotations

import copy

EXCLUDED_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease"}
_ASSIGNED = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")


def comparable(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    for key in _ASSIGNED:
        meta.pop(key, None)
    (meta.get("annotations") or {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
    for ref in meta.get("ownerReferences") or []:
        ref.pop("uid")
    obj.pop("status", None)
    return obj


def objects(cluster, api_version: str, kind: str) -> dict[tuple[str, str], dict]:
    out = {}
    for obj in cluster.list_objects(api_version, kind):
        meta = obj["metadata"]
        namespace = meta.get("namespace", "")
        if namespace in EXCLUDED_NAMESPACES or meta["name"] in EXCLUDED_NAMESPACES:
            continue
        if kind == "ConfigMap" and meta["name"] == "kube-root-ca.crt":
            continue
        out[(namespace, meta["name"])] = comparable(obj)
    return out


def differences(source, dest, types: list[tuple[str, str]]) -> list[str]:
    """Every (apiVersion, kind) compared; a list of human-readable differences (empty: equal)."""
    problems = []
    for api_version, kind in types:
        left, right = objects(source, api_version, kind), objects(dest, api_version, kind)
        for key in sorted(set(left) | set(right)):
            if key not in right:
                problems.append(f"{kind} {key} missing in the destination")
            elif key not in left:
                problems.append(f"{kind} {key} only in the destination")
            elif left[key] != right[key]:
                problems.append(f"{kind} {key} differs:\n  {left[key]}\n  {right[key]}")
    return problems
