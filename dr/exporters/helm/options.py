"""The `helm` exporter's plan options, validated when the plan is loaded (docs/exporters.md,
section "The `helm` exporter", describes each one; a test keeps the two equal).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dr.exporters.contract import ExporterOptions
from dr.exporters.helm.references import OCI, ChartRef, check_url, check_version, oci_chart

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


class ChartSpec(BaseModel):
    """One chart the plan lists: `{repo, name, version}` or `{oci, version}`."""

    model_config = ConfigDict(extra="forbid")
    repo: str | None = None  # an HTTP chart repository (index.yaml)
    oci: str | None = None  # oci://host/path/name, or with :version
    name: str | None = None
    version: str | None = None

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
    charts: list[ChartSpec] = []
    from_plan: bool = True
    repositories: Literal["none", "latest", "all"] = "none"
    max_charts_per_repository: int = Field(200, ge=1)
    provenance: bool = True
    plain_http: list[str] = []
    tls_verify: bool = True
    ca_file: str | None = None  # a PEM bundle, as helm's --ca-file (relative to the plan's folder)
    auth_file: str | None = None  # a docker config.json (relative to the plan's folder)
    timeout_seconds: float = Field(30.0, gt=0)

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
