"""Chart references: a chart in an HTTP chart repository or an OCI registry, and the references
other sources record (`helm-chart` and `helm-chart-repo` dependencies).

A chart is (where, name, version). Its identity, the artifact's identity, reads like Helm's
own OCI reference for both kinds: `oci://host/path/name:1.2.3`, `https://host/repo/name:1.2.3`.
A `helm-chart` reference is that identity (the kubernetes exporter pins each Helm release's
chart so). A `helm-chart-repo` reference is a repository (`https://host/repo`,
`oci://host/path`), or a whole chart when it names one (`oci://host/path/name:1.2.3`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

OCI = "oci://"
_VERSION = re.compile(r"^[0-9A-Za-z.+_-]+$")


class BadReference(ValueError):
    pass


@dataclass(frozen=True)
class ChartRef:
    repo: str  # https://host/repo or oci://host/path (the chart's parent)
    name: str
    version: str

    @property
    def oci(self) -> bool:
        return self.repo.startswith(OCI)

    @property
    def identity(self) -> str:
        return f"{self.repo}/{self.name}:{self.version}"

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}.tgz"

    def oci_parts(self) -> tuple[str, str]:
        """(host, repository path) of an OCI chart: `oci://h/p/name` is repository `p/name` at `h`."""
        host, _, path = self.repo[len(OCI):].partition("/")
        return host, "/".join(p for p in (path, self.name) if p)


def check_url(url: str, *, what: str) -> str:
    """A repository URL without credentials or a trailing slash; raises BadReference."""
    text = url.strip().rstrip("/")
    if text.startswith(OCI):
        host = text[len(OCI):].split("/", 1)[0]
        if not host:
            raise BadReference(f"{url!r}: {what} is oci://host[:port]/path")
        if "@" in host:
            raise BadReference(f"{url!r}: no credentials in the URL")
        return text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadReference(f"{url!r}: {what} is http(s)://host[/path] or oci://host/path")
    if "@" in parts.netloc:
        raise BadReference(f"{url!r}: no credentials in the URL")
    return text


def check_version(version: str) -> str:
    if not _VERSION.match(version):
        raise BadReference(f"{version!r}: a chart version is like 1.2.3 (SemVer)")
    return version


def oci_chart(reference: str, version: str | None = None) -> ChartRef:
    """`oci://host/path/name:1.2.3` (or `oci://host/path/name` with `version`)."""
    text = check_url(reference, what="an OCI chart")
    parent, _, last = text.rpartition("/")
    if parent.endswith(":/") or "/" not in text[len(OCI):]:
        raise BadReference(f"{reference!r}: an OCI chart is oci://host/path/name")
    name, _, tag = last.partition(":")
    if tag and version and tag != version:
        raise BadReference(f"{reference!r}: the tag {tag} and the version {version} differ")
    if not (tag or version):
        raise BadReference(f"{reference!r}: give the chart's version (oci://host/path/name:1.2.3)")
    return ChartRef(parent, name, check_version(tag or version or ""))


def from_dependency(reference: str) -> ChartRef | str:
    """A `helm-chart-repo` reference: one chart (an OCI reference with a tag) or a repository."""
    text = check_url(reference, what="a chart repository")
    if text.startswith(OCI) and ":" in text.rsplit("/", 1)[-1]:
        return oci_chart(text)
    return text


def pinned(reference: str) -> ChartRef:
    """A `helm-chart` reference, `<repository>/<name>:<version>`: the chart it pins."""
    text = check_url(reference, what="a pinned chart")
    if text.startswith(OCI):
        return oci_chart(text)
    parent, _, last = text.rpartition("/")
    name, sep, version = last.partition(":")
    if not sep or not name or "//" not in parent or parent.endswith("/"):
        raise BadReference(f"{reference!r}: a pinned chart is <repository URL>/<name>:<version>")
    return ChartRef(check_url(parent, what="a chart repository"), name, check_version(version))
