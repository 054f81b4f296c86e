"""Locations: every endpoint a plan touches, and how a reference is placed in a failure domain.

A reference (a URL, an image name, an s3:// URL, a git remote, a bare host, an ARN) is placed
by, in order: the plan's explicit locations (longest matching prefix or host pattern wins), then
the cloud zone its host is when the plan has that zone's domain (`volume://eu-central-1a/...`),
then the cloud region it names when the plan has that region's domain (dr.model.regions: an ARN,
a regional endpoint host, a host that is a region or a zone of it), then the plan's placement
rules (first match wins). A reference
nothing places is "unknown".
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from dr.model.regions import region_host_patterns, region_of, service_reference_host, zone_region

_SCP_LIKE = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?!//)(?P<path>.*)$")


def host_of(reference: str) -> str:
    """The host a reference points at, lower-cased; '' when it names no host.

    Handles URLs (https://h:443/x, s3://bucket/key where the bucket stands for the host),
    scp-like git remotes (git@h:org/repo), container images (h:5000/ns/img:tag; a first
    component without a dot, colon or 'localhost' means Docker Hub), bare hosts, and ARNs
    (arn:aws:kms:eu-west-1:...: the service's endpoint host, kms.eu-west-1.amazonaws.com).
    """
    ref = reference.strip()
    if ref.startswith(("arn:", "aws:")):
        service = service_reference_host(ref)
        if service:
            return service
    if "://" in ref:
        return (urlsplit(ref).hostname or "").lower()
    if ref.startswith("/") or ref.startswith("."):
        return ""
    first = ref.split("/", 1)[0]
    scp = _SCP_LIKE.match(ref)
    if scp and "/" not in first.split(":", 1)[0] and not _looks_like_image(ref):
        return scp.group("host").lower()
    if "/" in ref:
        if "." in first or ":" in first or first == "localhost":
            return first.split(":", 1)[0].lower()
        return "docker.io"
    return first.split(":", 1)[0].lower()


DOCKER_HUB = "docker.io"


def canonical_image(reference: str) -> str:
    """An image reference with its registry written out, as the container runtime reads it.

    A first component without a dot, a colon or 'localhost' is a Docker Hub repository, not a
    host: `busybox` is docker.io/library/busybox, `org/img:1` is docker.io/org/img:1. Anything
    else is returned unchanged (it names its registry already).
    """
    ref = reference.strip()
    first, slash, _ = ref.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return ref
    if not ref or "://" in ref or ref.startswith(("/", ".")):
        return ref
    return f"{DOCKER_HUB}/{ref}" if slash else f"{DOCKER_HUB}/library/{ref}"


def _looks_like_image(ref: str) -> bool:
    # registry:5000/ns/img has a port after the colon; git@h:org/repo has a path.
    first = ref.split("/", 1)[0]
    return bool(re.match(r"^[\w.-]+:\d+$", first)) and "/" in ref


@dataclass
class Location:
    """An endpoint named in the plan, placed in a failure domain.

    prefixes: references starting with one of these belong here (URLs, s3://bucket/, images)
    hosts:    glob patterns matched against the reference's host
    """

    name: str
    domain: str
    kind: str = ""
    prefixes: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)

    def match_strength(self, reference: str, host: str) -> int:
        """0 for no match; otherwise longer, more specific matches score higher."""
        best = 0
        for prefix in self.prefixes:
            if reference.startswith(prefix):
                best = max(best, 1000 + len(prefix))
        for pattern in self.hosts:
            if host and fnmatch.fnmatchcase(host, pattern.lower()):
                best = max(best, 1 + len(pattern.replace("*", "")))
        return best


@dataclass
class PlacementRule:
    """An inference rule: references whose host matches `match` live in `domain`, because `reason`."""

    match: str
    domain: str
    reason: str = ""

    def matches(self, host: str) -> bool:
        return bool(host) and fnmatch.fnmatchcase(host, self.match.lower())


@dataclass(frozen=True)
class Placement:
    """Where a reference lives. domain None means nothing placed it (verdict: unknown)."""

    reference: str
    host: str
    domain: str | None
    location: str | None = None
    rule: str | None = None


@dataclass
class Placer:
    """regions: cloud region name (eu-central-1) -> the plan's domain of that region; zones:
    cloud zone name (eu-central-1a) -> the plan's domain of that zone."""

    locations: list[Location] = field(default_factory=list)
    rules: list[PlacementRule] = field(default_factory=list)
    regions: dict[str, str] = field(default_factory=dict)
    zones: dict[str, str] = field(default_factory=dict)

    def host_patterns(self) -> list[str]:
        """Every host glob that places something: locations' hosts, their prefixes' hosts and
        the placement rules (an exporter records a bare host name only when one matches)."""
        patterns = [h for loc in self.locations for h in loc.hosts]
        patterns += [host_of(p) for loc in self.locations for p in loc.prefixes]
        patterns += [rule.match for rule in self.rules]
        patterns += [p for region in self.regions for p in region_host_patterns(region)]
        return [p for p in dict.fromkeys(patterns) if p and p != "docker.io"]

    def place(self, reference: str) -> Placement:
        host = host_of(reference)
        scored = [(loc.match_strength(reference, host), loc) for loc in self.locations]
        scored = [s for s in scored if s[0] > 0]
        if scored:
            _, loc = max(scored, key=lambda s: s[0])
            return Placement(reference, host, loc.domain, location=loc.name)
        if host in self.zones:
            return Placement(reference, host, self.zones[host], rule=f"zone {host}")
        region = self._region(reference, host) if self.regions else None
        if region in self.regions:
            return Placement(reference, host, self.regions[region], rule=f"region {region}")
        for rule in self.rules:
            if rule.matches(host):
                return Placement(reference, host, rule.domain, rule=rule.match)
        return Placement(reference, host, None)

    def _region(self, reference: str, host: str) -> str | None:
        """The region a reference names; a host that is a region's or a zone's name is in it."""
        if host in self.regions:
            return host
        return region_of(reference, host) or zone_region(host)
