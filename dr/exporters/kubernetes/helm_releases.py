"""Helm releases, read from the Secrets Helm 3 and 4 keep them in (`sh.helm.release.v1.*`).

The encoding, as Helm writes it: release JSON, gzip, base64; that string is the Secret's
`data.release`, which the API base64-encodes once more. Older releases may skip the gzip
(Helm's own decoder checks the magic bytes, and so does this one).

The decoded view is a separate, secret-class artifact (values often hold passwords): name,
namespace, revision, status, chart name/version/appVersion, where the chart came from when
that is known, and the user-supplied values. The Secret itself is backed up like any Secret;
restoring it is what brings the release back (`helm list`, `helm upgrade` and `helm rollback`
work from it), so the decoded artifact is for reading and for the audit, and restore skips it.

Helm does not record the repository a chart was installed from. The chart's own metadata is
the best evidence there is: a `dr.io/chart-repo` or `artifacthub.io/repository` annotation if
the chart carries one, else its first `sources` URL, else its `home`.

What a release needs (docs/exporters/kubernetes.md, "Helm releases"): the exact chart it runs, as a
`helm-chart` dependency pinned to name and version, `<repository>/<name>:<version>`
(`https://charts.example.com/stable/web:1.0.0`, `oci://registry.example.com/charts/web:1.0.0`),
so a chart copier copies that chart and not the whole repository, and the reference still
starts with the repository URL for the audit's location prefixes. Its detail names the
release: `helm release <namespace>/<name> v<revision>`. A release whose chart cannot be pinned
(no name or version, or a source that is no http(s):// or oci:// URL) records the source as a
`helm-chart-repo` dependency instead, as before.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any
from urllib.parse import urlsplit

from dr.model.artifacts import Dependency

RELEASE_TYPE = "helm.sh/release.v1"
NAME_PREFIX = "sh.helm.release.v1."
KIND = "helm-release"
_GZIP_MAGIC = b"\x1f\x8b"
_REPO_ANNOTATIONS = ("dr.io/chart-repo", "artifacthub.io/repository")


class ReleaseDecodeError(Exception):
    pass


def is_release_secret(obj: dict) -> bool:
    name = (obj.get("metadata") or {}).get("name", "")
    return obj.get("type") == RELEASE_TYPE or name.startswith(NAME_PREFIX)


def decode_release(secret: dict) -> dict[str, Any]:
    """The release JSON inside a Helm release Secret (as the API returns it: data base64-encoded)."""
    raw = ((secret.get("data") or {}).get("release"))
    if not raw:
        raise ReleaseDecodeError("no data.release")
    try:
        inner = base64.b64decode(base64.b64decode(raw))
        if inner[:2] == _GZIP_MAGIC:
            inner = gzip.decompress(inner)
        return json.loads(inner)
    except (ValueError, OSError, EOFError) as exc:
        raise ReleaseDecodeError(f"not a Helm release encoding: {exc}") from None


def encode_release(release: dict[str, Any]) -> str:
    """Helm's encoding of a release as it sits in `data.release` of the API object (for tests)."""
    helm_string = base64.b64encode(gzip.compress(json.dumps(release).encode())).decode()
    return base64.b64encode(helm_string.encode()).decode()


def chart_source(chart_meta: dict[str, Any]) -> str:
    annotations = chart_meta.get("annotations") or {}
    for key in _REPO_ANNOTATIONS:
        if annotations.get(key):
            return str(annotations[key])
    sources = [s for s in chart_meta.get("sources") or [] if s]
    return str(sources[0]) if sources else str(chart_meta.get("home") or "")


def summarize(secret: dict) -> dict[str, Any]:
    """The decoded view of one release Secret (see the module docstring)."""
    release = decode_release(secret)
    chart_meta = (release.get("chart") or {}).get("metadata") or {}
    secret_meta = secret.get("metadata") or {}
    return {
        "name": release.get("name") or (secret_meta.get("labels") or {}).get("name", ""),
        "namespace": release.get("namespace") or secret_meta.get("namespace", ""),
        "revision": int(release.get("version") or 0),
        "status": (release.get("info") or {}).get("status", ""),
        "chart": {"name": chart_meta.get("name", ""), "version": chart_meta.get("version", ""),
                  "appVersion": chart_meta.get("appVersion", ""), "source": chart_source(chart_meta)},
        "values": release.get("config") or {},
        "secret": secret_meta.get("name", ""),
    }


def identity(summary: dict[str, Any]) -> str:
    return f"{summary['namespace']}/{summary['name']}/v{summary['revision']}"


def pinned_chart(source: str, name: str, version: str) -> str | None:
    """`<repository>/<name>:<version>`, or None when the chart cannot be pinned. An OCI source
    may name the chart itself (`oci://host/charts/web`) or its parent (`oci://host/charts`)."""
    repository = source.strip().rstrip("/")
    if not (name and version and "/" not in name and ":" not in name):
        return None
    if repository.startswith("oci://"):
        parent, _, last = repository.rpartition("/")
        if last.split(":", 1)[0] == name and parent != "oci:/":
            repository = parent
        return f"{repository}/{name}:{version}" if repository != "oci:/" else None
    parts = urlsplit(repository)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        return None
    return f"{repository}/{name}:{version}"


def dependencies(summary: dict[str, Any]) -> list[Dependency]:
    chart = summary["chart"]
    if not chart["source"]:
        return []
    release = f"helm release {summary['namespace']}/{summary['name']} v{summary['revision']}"
    pinned = pinned_chart(str(chart["source"]), str(chart["name"] or ""), str(chart["version"] or ""))
    if pinned:  # the chart itself: the repository is needed only for it (module docstring)
        return [Dependency("helm-chart", pinned, release)]
    return [Dependency("helm-chart-repo", chart["source"], f"{release} chart {chart['name']}-{chart['version']}")]
