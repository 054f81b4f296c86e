"""What the volumes tests share: the claim objects, a one-source plan, the findings and outcomes
of a `--json` document, and a claim's tree as facts to compare."""

from __future__ import annotations

import os

import yaml

IMAGE = "registry.dr.example/platform/dr:0.9.0"


def claim(ns: str, name: str, size: str = "100Mi", labels: dict | None = None) -> list[dict]:
    """A namespace and a claim of the CSI stand-in's storage class in it."""
    metadata = {"name": name, "namespace": ns, **({"labels": labels} if labels else {})}
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata,
             "spec": {"storageClassName": "csi-hostpath-sc", "accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": size}}}}]


def volumes_plan(tmp_path, kubeconfig: str, context: str, **options) -> str:
    """A plan of one volumes source (site-a) and one repository (site-b); `options` are the source's."""
    plan = {"version": 1, "name": "vols", "protects_against": ["site-a"],
            "failure_domains": [{"name": "site-a", "kind": "site"}, {"name": "site-b", "kind": "site"}],
            "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "site-b"}],
            "sources": [{"name": "vols", "type": "volumes", "sensitivity": "internal", "kubeconfig": kubeconfig,
                         "context": context, "image": IMAGE, **options}]}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return str(path)


def nested(document, *keys: str) -> list[dict]:
    """Every dict in a `--json` document that has all of `keys`, wherever the results nest it."""
    found = []
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if all(key in value for key in keys):
                found.append(value)
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return found


def findings(document) -> list[dict]:
    return nested(document, "code", "message")


def outcomes(document) -> list[dict]:
    return nested(document, "status", "item")


def tree(folder: str) -> dict:
    """Each path under `folder` with its mode, owner, mtime (not a link's), and a link's target or a file's bytes."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            facts = (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns if not os.path.islink(path) else 0)
            if os.path.islink(path):
                facts += (os.readlink(path),)
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    facts += (handle.read(), st.st_size)
            out[os.path.relpath(path, folder)] = facts
    return out
