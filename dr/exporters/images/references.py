"""Image references as people and pod templates write them, and where a copy of one goes.

A reference is `[host[:port]/]path[:tag][@sha256:<hex>]`, read the way the container runtimes
read it: the first component is a registry host when it holds a `.` or a `:` or is
`localhost`; otherwise the image is on Docker Hub (`docker.io`, served at
`registry-1.docker.io`) and a one-component path gets `library/` in front.

Patterns (the plan's `repositories`) are `host/path-glob[:tag-glob]`, globbed with fnmatch
(`registry.local/team/*:v*`); the path part is matched against the registry's catalog.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_PATH = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")


class BadReference(ValueError):
    pass


@dataclass(frozen=True)
class ImageRef:
    host: str  # as written (docker.io for Docker Hub)
    path: str  # the repository within the registry
    tag: str | None = None
    digest: str | None = None

    @property
    def repository(self) -> str:
        return f"{self.host}/{self.path}"

    @property
    def api_host(self) -> str:
        return DOCKER_HUB_API if self.host == DOCKER_HUB else self.host

    @property
    def reference(self) -> str:
        """What a manifest request names: the digest when pinned, else the tag."""
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        text = self.repository
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text

    def with_digest(self, digest: str) -> "ImageRef":
        return ImageRef(self.host, self.path, self.tag, digest)


def is_digest(text: str) -> bool:
    return bool(_DIGEST.match(text))


def split_host(text: str) -> tuple[str, str]:
    first, sep, rest = text.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return DOCKER_HUB, text


def parse(text: str) -> ImageRef:
    """An ImageRef, or BadReference saying what is wrong with `text`."""
    text = text.strip()
    name, _, digest = text.partition("@")
    if digest and not is_digest(digest):
        raise BadReference(f"{text!r}: the digest must be sha256:<64 hex digits>")
    host, rest = split_host(name)
    path, tag = rest, None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        path, tag = rest.rsplit(":", 1)
        if not _TAG.match(tag):
            raise BadReference(f"{text!r}: {tag!r} is not a valid tag")
    if host == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    if not _PATH.match(path):
        raise BadReference(f"{text!r}: {path!r} is not a valid repository path (lowercase, digits, . _ -)")
    if not tag and not digest:
        tag = "latest"
    return ImageRef(host, path, tag, digest or None)


@dataclass(frozen=True)
class Pattern:
    host: str
    path_glob: str
    tag_glob: str

    def matches_path(self, path: str) -> bool:
        return fnmatch.fnmatchcase(path, self.path_glob)

    def matches_tag(self, tag: str) -> bool:
        return fnmatch.fnmatchcase(tag, self.tag_glob)

    def __str__(self) -> str:
        return f"{self.host}/{self.path_glob}:{self.tag_glob}"


def parse_pattern(text: str) -> Pattern:
    host, rest = split_host(text.strip())
    last = rest.rsplit("/", 1)[-1]
    path, tag = (rest.rsplit(":", 1) if ":" in last else (rest, "*"))
    if not path:
        raise BadReference(f"{text!r}: a pattern needs a repository path (host/team/*)")
    return Pattern(host, path, tag or "*")


def host_component(host: str) -> str:
    """A registry host as one repository path component: `reg.local:5000` -> `reg.local-5000`."""
    return host.lower().replace(":", "-")


def dr_path(ref: ImageRef, prefix: str) -> str:
    """The repository a copy goes to in a DR registry: `<prefix>/<source host>/<source path>`.

    The source host stays in the path so that two registries holding the same path never
    share a DR repository, and so that moving an image to its copy is one prefix rewrite.
    """
    parts = [p for p in (prefix.strip("/"), host_component(ref.host), ref.path) if p]
    return "/".join(parts)


def backup_tag(digest: str) -> str:
    """The immutable tag a copy also gets: `dr-<first 12 hex digits of the digest>`."""
    return "dr-" + digest.split(":", 1)[1][:12]


def cosign_tags(digest: str) -> list[str]:
    """The tags cosign attaches to an image: signature, attestations, SBOM."""
    stem = digest.replace(":", "-")
    return [f"{stem}.sig", f"{stem}.att", f"{stem}.sbom"]
