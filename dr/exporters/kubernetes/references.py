"""Recognising references inside any string of an object: the generic half of the scan.

Whatever field holds it (an env value, an arg, a ConfigMap entry, a custom resource's spec), a
string may name something a restore needs from outside the cluster:
  <scheme>://...              URLs and object-store URIs, classified by scheme (table below);
                              an http(s) URL ending in .git is a git remote
  git@host:org/repo           scp-like git remotes
  <svc>.<ns>.svc[.<domain>]   a Service's DNS name alone: recorded as `<svc>.<ns>.svc.cluster.local`,
                              the name a backed-up Service provides (listing._provides), so it
                              resolves to that object when the snapshot holds it; inside a URL,
                              the URL is the dependency (one problem, counted once), its
                              detail says which Service it resolves to, and the verdict engine
                              judges it as that Service (dr.model.recovery.services)
  arn:aws:<service>:<region>:...
                              an AWS resource's ARN in any field (a StorageClass's kmsKeyId, a
                              role, a secret): kms, secret-store (secretsmanager, ssm),
                              acm-certificate, else cloud-resource; the placer reads its region
  host[:port][/path]          a bare host name, only when the plan places it (a location's host
                              or prefix, a placement rule): otherwise every dotted word would count
  projects/<p>/locations/<l>/keyRings/<r>/cryptoKeys/<k>
                              a Google Cloud KMS key, kind `kms`
Patterns are compiled once; a string is searched only when a cheap substring test says it can
match (each pattern needs "://", "git@", ".svc", "arn:", "keyRings/" or, with plan hosts, "."; the scanner inlines
that test, since it runs for every string of every exported object).
"""

from __future__ import annotations

import fnmatch
import re
from typing import Iterable, Iterator
from urllib.parse import urlsplit

from dr.model.recovery.services import SERVICE_DNS, service_dns
from dr.model.redaction import redact

# Scheme -> dependency kind. Schemes not listed (and not ignored) are recorded as "endpoint".
SCHEME_KINDS = {
    "http": "http-endpoint", "https": "http-endpoint",
    "git": "git-remote", "ssh": "git-remote", "git+ssh": "git-remote", "git+https": "git-remote",
    "s3": "bucket", "s3a": "bucket", "s3n": "bucket", "gs": "bucket", "gcs": "bucket",
    "az": "bucket", "abfs": "bucket", "abfss": "bucket", "wasb": "bucket", "wasbs": "bucket",
    "hf": "bucket",
    "oci": "registry",
    "postgres": "database", "postgresql": "database", "mysql": "database", "mongodb": "database",
    "mongodb+srv": "database", "redis": "database", "rediss": "database",
}
# Not dependencies on another place: local files and sockets, or not addresses at all.
IGNORED_SCHEMES = frozenset({"file", "unix", "local", "data", "urn", "about", "mailto", "tcp", "udp"})

_URL = re.compile(r"(?<![\w+.-])([a-zA-Z][a-zA-Z0-9+.-]{0,15})://([^\s\"'<>`\\|{}^]+)")
_SCP_GIT = re.compile(r"(?<![\w.-])git@([\w.-]+\.[\w-]+|[\w-]+):([\w.~/-]+)")
_SERVICE_DNS = re.compile(rf"(?<![\w.-]){SERVICE_DNS}(?![\w-])")
_BARE_HOST = re.compile(r"(?<![\w.@/:-])([a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?(?:\.[-a-zA-Z0-9]+)+)"
                        r"(:\d{1,5})?(/[^\s\"'<>`\\,;]*)?")
_ARN = re.compile(r"(?<![\w-])arn:aws[\w-]*:([\w-]+):[\w-]*:(?:\d*|aws):[^\s\"'<>`\\,;]+")
ARN_KINDS = {"kms": "kms", "secretsmanager": "secret-store", "ssm": "secret-store", "acm": "acm-certificate"}
_GCP_KMS_KEY = re.compile(r"(?<![\w-])projects/[\w.:-]+/locations/[\w-]+/keyRings/[\w-]+/cryptoKeys/[\w-]+")
_TRAILING = ".,;:)]}'\""
_IMAGE_TAG = re.compile(r"/[^/]+(?::[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})$")


def url_kind(scheme: str, rest: str) -> str | None:
    scheme = scheme.lower()
    if scheme in IGNORED_SCHEMES:
        return None
    kind = SCHEME_KINDS.get(scheme, "endpoint")
    if kind == "http-endpoint" and rest.split("?", 1)[0].rstrip("/").endswith(".git"):
        return "git-remote"
    return kind


def service_ref(host: str) -> str | None:
    """`<name>.<ns>.svc.cluster.local` for a Service DNS name (`<name>.<ns>.svc[...]`), else None."""
    match = _SERVICE_DNS.fullmatch(host.lower())
    return service_dns(match) if match else None


class HostPatterns:
    """The plan's host globs (locations and placement rules), as one compiled regex."""

    def __init__(self, patterns: Iterable[str]):
        globs = sorted({p.lower() for p in patterns if p and p.strip("*.?")})
        self.regex = re.compile("|".join(fnmatch.translate(g) for g in globs)) if globs else None

    def __bool__(self) -> bool:
        return self.regex is not None

    def matches(self, host: str) -> bool:
        return self.regex is not None and self.regex.match(host.lower()) is not None


def find(text: str, hosts: HostPatterns) -> Iterator[tuple[str, str, str]]:
    """(kind, reference, note) for every reference in `text`; credentials in URLs are redacted.
    The note says which Service a URL's host resolves to, if any."""
    spans: list[tuple[int, int]] = []
    if "://" in text:
        for match in _URL.finditer(text):
            url = match.group(0).rstrip(_TRAILING)
            kind = url_kind(match.group(1), match.group(2))
            if kind is None:
                continue
            spans.append(match.span())
            yield kind, redact(url) if "@" in url else url, resolves_to(url)
    if "git@" in text:
        for match in _SCP_GIT.finditer(text):
            if _inside(match.start(), spans):
                continue
            spans.append(match.span())
            yield "git-remote", match.group(0).rstrip(_TRAILING), ""
    if ".svc" in text:
        for match in _SERVICE_DNS.finditer(text):
            if not _inside(match.start(), spans):
                yield "service", service_dns(match), ""
    if "arn:" in text or "keyRings/" in text:
        yield from _cloud_keys(text, spans)
    if hosts and "." in text:
        for match in _BARE_HOST.finditer(text):
            if not _inside(match.start(), spans) and hosts.matches(match.group(1)):
                token = match.group(0).rstrip(_TRAILING)
                yield _bare_kind(token), token, ""


def _cloud_keys(text: str, spans: list[tuple[int, int]]) -> Iterator[tuple[str, str, str]]:
    """ARNs and Google Cloud KMS keys outside the URLs already found; each span is taken once."""
    for match in _ARN.finditer(text):
        if not _inside(match.start(), spans):
            spans.append(match.span())
            yield ARN_KINDS.get(match.group(1), "cloud-resource"), match.group(0).rstrip(_TRAILING), ""
    for match in _GCP_KMS_KEY.finditer(text):
        if not _inside(match.start(), spans):
            yield "kms", match.group(0), ""


def resolves_to(url: str) -> str:
    """'resolves to <svc>.<ns>.svc.cluster.local' when the URL's host is a Service, else ''."""
    if ".svc" not in url or "://" not in url:
        return ""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:  # a malformed port or bracket: not a URL after all
        return ""
    service = service_ref(host)
    return f"resolves to Service {service}" if service else ""


def _bare_kind(token: str) -> str:
    """A placed host followed by a repository path and a tag or digest is an image."""
    if "/" not in token:
        return "host"
    return "image" if _IMAGE_TAG.search(token) else "registry"


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)
