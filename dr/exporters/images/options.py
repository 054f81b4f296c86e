"""The `images` exporter's plan options, validated when the plan is loaded (docs/exporters/images.md
describes each one; a test keeps the two equal).
"""

from __future__ import annotations

import fnmatch
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from dr.contract import ExporterOptions
from dr.exporters.images.references import parse, parse_pattern

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


class RegistryURL:
    """`http(s)://host[:port][/prefix]`: a registry and the repository prefix copies go under."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url if "://" in url else f"https://{url}")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{url!r}: a registry is http(s)://host[:port][/prefix]")
        if "@" in parts.netloc:
            raise ValueError(f"{url!r}: put credentials in the auth file, not in the URL")
        self.scheme, self.host, self.prefix = parts.scheme, parts.netloc, parts.path.strip("/")

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}" + (f"/{self.prefix}" if self.prefix else "")

    def __str__(self) -> str:
        return self.url


class ImagesOptions(ExporterOptions):
    to: list[str] = []  # DR registries: required unless store is `repository`
    # where the copies go: DR registries, dr's own repository (image-blob artifacts), or both
    store: Literal["registries", "repository", "both"] = "registries"
    images: list[str] = []  # image references to copy besides the plan's dependencies
    repositories: list[str] = []  # host/path-glob[:tag-glob] patterns, expanded through the registry
    from_plan: bool = True  # copy the images the other sources recorded as dependencies
    exclude: list[str] = []  # globs of references never to copy
    platforms: list[str] = []  # os/arch[/variant]: copy only these platforms of an index (default all)
    signatures: bool = True  # copy cosign's .sig, .att and .sbom tags with the image
    referrers: bool = True  # copy what the OCI referrers API lists for the image
    auth_file: str | None = None  # a docker config.json (relative: the plan's folder)
    pull_secrets: list[str] = []  # Kubernetes pull secrets namespace/name to take credentials from
    kubeconfig: str | None = None  # through which pull_secrets are read (kubectl's rules)
    context: str | None = None  # its context (default: the current one)
    plain_http: list[str] = []  # registry hosts spoken to over plain HTTP (loopback always is)
    # source registry host -> the URL it is reached at from where dr runs (a port-forward, an
    # Ingress, a mirror): references, identities and credentials keep the host as written
    endpoints: dict[str, str] = {}
    tls_verify: bool = True  # verify registries' TLS certificates
    # a PEM bundle of the CAs the registries' certificates are checked with (relative: the plan's
    # folder); per registry, docker's <certs_dir>/<host[:port]>/ca.crt (and client.cert/client.key)
    ca_file: str | None = None
    certs_dir: str = "/etc/docker/certs.d"  # docker's per-registry folder of CAs and client certificates
    ecr: bool = True  # get ECR tokens through boto3 for ECR hosts without credentials in the file
    parallel_images: int = Field(8, ge=1, le=64)  # images copied at once
    parallel_blobs: int = Field(8, ge=1, le=64)  # blobs copied at once, shared by all images
    chunk_mib: int = Field(32, ge=1, le=1024)  # blobs larger than this are uploaded in chunks of this size
    retries: int = Field(5, ge=0, le=20)  # retries after a 5xx, a 429 or a connection failure
    retry_wait_seconds: float = Field(0.5, ge=0)  # the first backoff; it doubles each retry
    timeout_seconds: float = Field(60.0, gt=0)  # per request (connect and each read)

    @field_validator("to")
    @classmethod
    def _registries(cls, urls: list[str]) -> list[str]:
        return [RegistryURL(u).url for u in urls]

    @model_validator(mode="after")
    def _somewhere(self) -> "ImagesOptions":
        if not self.to and self.store != "repository":
            raise ValueError(f"store: {self.store} needs at least one DR registry in `to` "
                             "(http(s)://host[:port][/prefix]); or set store: repository to keep the images "
                             "in dr's own repository only")
        if self.to and self.store == "repository":
            raise ValueError("store: repository keeps the images in dr's repository only, so `to` would be "
                             "ignored: remove `to`, or set store: both to copy to the registries as well")
        return self

    @field_validator("endpoints")
    @classmethod
    def _endpoints(cls, endpoints: dict[str, str]) -> dict[str, str]:
        for host, url in endpoints.items():
            if "/" in host or not host:
                raise ValueError(f"{host!r}: a key is a registry host[:port], as image references name it")
            if RegistryURL(url).prefix:
                raise ValueError(f"{url!r}: an endpoint is scheme://host[:port], with no path")
        return {host: RegistryURL(url).url for host, url in endpoints.items()}

    @field_validator("images")
    @classmethod
    def _images(cls, refs: list[str]) -> list[str]:
        for ref in refs:
            parse(ref)
        return refs

    @field_validator("repositories")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            parse_pattern(pattern)
        return patterns

    @field_validator("pull_secrets")
    @classmethod
    def _secrets(cls, names: list[str]) -> list[str]:
        for name in names:
            namespace, _, secret = name.partition("/")
            if not namespace or not secret or "/" in secret:
                raise ValueError(f"{name!r}: a pull secret is namespace/name")
        return names

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, platforms: list[str]) -> list[str]:
        for p in platforms:
            if not 2 <= len(p.split("/")) <= 3:
                raise ValueError(f"{p!r}: a platform is os/architecture[/variant] (linux/amd64)")
        return platforms

    def dr_registries(self) -> list[RegistryURL]:
        """The DR registries copies go to (none when the store is dr's repository alone)."""
        return [] if self.store == "repository" else [RegistryURL(u) for u in self.to]

    @property
    def in_repository(self) -> bool:
        return self.store in ("repository", "both")

    def scheme_for(self, host: str) -> str:
        """Plain HTTP for loopback (as docker does) and the hosts the plan lists; else HTTPS."""
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
        return "http" if name in LOOPBACK or host in self.plain_http or name in self.plain_http else "https"

    def excluded(self, reference: str) -> bool:
        return any(fnmatch.fnmatchcase(reference, glob) for glob in self.exclude)
