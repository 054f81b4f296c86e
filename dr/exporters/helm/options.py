"""The `helm` exporter's plan options, validated when the plan is loaded (docs/exporters/helm.md
describes each one; a test keeps the two equal).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dr.contract import ExporterOptions
from dr.exporters.helm.references import OCI, ChartRef, check_url, check_version, oci_chart

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


class ChartSpec(BaseModel):
    """One chart the plan lists: `{repo, name, version}` or `{oci, version}`."""

    model_config = ConfigDict(extra="forbid")
    repo: str | None = None  # an HTTP chart repository (index.yaml)
    oci: str | None = None  # oci://host/path/name, or with :version
    name: str | None = None  # the chart's name (with repo; with oci it is the reference's last part)
    version: str | None = None  # the exact version

    @model_validator(mode="after")
    def _one_place(self) -> "ChartSpec":
        if bool(self.repo) == bool(self.oci):
            raise ValueError("give either repo (with name and version) or oci (oci://host/path/name)")
        if self.repo:
            if self.repo.startswith(OCI):
                raise ValueError(f"{self.repo!r}: an OCI chart goes under oci:, not repo:")
            check_url(self.repo, what="a chart repository")
            if not self.name or not self.version:
                raise ValueError("a chart from repo needs name and version")
            check_version(self.version)
        else:
            if self.name:
                raise ValueError("with oci, the name is the reference's last part: leave name out")
            oci_chart(self.oci or "", self.version)
        return self

    def ref(self) -> ChartRef:
        if self.oci:
            return oci_chart(self.oci, self.version)
        return ChartRef(check_url(self.repo or "", what="a chart repository"), self.name or "", self.version or "")


class HelmOptions(ExporterOptions):
    charts: list[ChartSpec] = []  # charts to copy: repo with name and version, or oci
    from_plan: bool = True  # copy the charts the plan's other sources depend on
    #: for a dependency naming a whole chart repository: copy none of it, the newest version of
    #: each chart, or every version
    repositories: Literal["none", "latest", "all"] = "none"
    max_charts_per_repository: int = Field(200, ge=1)  # at most this many chart versions from one repository
    provenance: bool = True  # keep each chart's .prov when the source has one
    plain_http: list[str] = []  # registry hosts spoken to over plain HTTP (loopback always is)
    tls_verify: bool = True  # verify TLS certificates
    ca_file: str | None = None  # a PEM bundle, as helm's --ca-file (relative to the plan's folder)
    auth_file: str | None = None  # a docker config.json (relative to the plan's folder)
    timeout_seconds: float = Field(30.0, gt=0)  # per request

    @field_validator("plain_http")
    @classmethod
    def _hosts(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if "/" in host or "@" in host:
                raise ValueError(f"{host!r}: a host name (host or host:port), not a URL")
        return hosts

    def scheme_for(self, host: str) -> str:
        """Plain HTTP for loopback (as helm's --plain-http would be needed there) and listed hosts."""
        name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
        return "http" if name in LOOPBACK or host in self.plain_http or name in self.plain_http else "https"
