"""The `dns` exporter's plan options (documented in docs/exporters/dns.md)."""

from __future__ import annotations

import os

from pydantic import Field, field_validator, model_validator

from dr.contract import ExporterOptions
from dr.kits.validators import listed_once


def absolute(name: str) -> str:
    """A zone or host name with its trailing dot, lower-cased (DNS names compare so)."""
    return name.strip().lower().rstrip(".") + "."


class Tsig(ExporterOptions):
    name: str = Field(description="the key's name, as the server knows it")
    secret_env: str | None = Field(None, description="environment variable holding the base64 secret")
    secret_file: str | None = Field(None, description="file holding the base64 secret (relative: the plan's folder)")
    algorithm: str = "hmac-sha256"  # the TSIG algorithm

    @model_validator(mode="after")
    def _one_secret(self) -> "Tsig":
        if (self.secret_env is None) == (self.secret_file is None):
            raise ValueError("give exactly one of secret_env and secret_file (never the secret itself)")
        return self

    def secret(self, base_dir: str) -> str:
        if self.secret_env is not None:
            value = os.environ.get(self.secret_env)
            if not value:
                raise LookupError(f"TSIG key {self.name}: environment variable {self.secret_env} is not set")
            return value.strip()
        with open(os.path.join(base_dir, self.secret_file), encoding="ascii") as handle:
            return handle.read().strip()


class Axfr(ExporterOptions):
    server: str = Field(description="the authoritative server's address (IP or host)")
    port: int = Field(53, ge=1, le=65535)  # the server's DNS port
    tsig: Tsig | None = None  # a TSIG key for the transfer, the SOA query and restores


class Route53(ExporterOptions):
    hosted_zone_id: str | None = Field(None, description="pins the zone when several share its name")
    private: bool | None = None  # with no id: only the private (true) or public (false) zone of that name


class Zone(ExporterOptions):
    zone: str = Field(description="the zone's name, e.g. example.com")
    axfr: Axfr | None = None  # read the zone by AXFR from an authoritative server
    route53: Route53 | None = None  # read the zone from Route53 (exactly one of axfr and route53)

    @field_validator("zone")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.strip().rstrip("."):
            raise ValueError("must not be empty")
        return absolute(value)

    @model_validator(mode="after")
    def _one_source(self) -> "Zone":
        if (self.axfr is None) == (self.route53 is None):
            raise ValueError(f"{self.zone}: give exactly one of axfr and route53")
        return self


class Aws(ExporterOptions):
    region: str | None = None  # the Route53 client's region (default us-east-1)
    endpoint_url: str | None = Field(None, description="another Route53 endpoint (a test server)")
    max_attempts: int = Field(8, ge=1, description="attempts per call, throttling included (botocore standard mode)")


class DnsOptions(ExporterOptions):
    zones: list[Zone] = Field(min_length=1)  # the zones, one artifact each
    aws: Aws = Field(default_factory=Aws)  # Route53 client settings (credentials: the usual AWS chain)
    timeout_seconds: float = Field(15.0, gt=0)  # per DNS query or transfer
    transfer_attempts: int = Field(3, ge=1, description="AXFR attempts while the zone's serial keeps moving")

    @field_validator("zones")
    @classmethod
    def _unique(cls, value: list[Zone]) -> list[Zone]:
        listed_once(((z.zone, bool(z.route53)) for z in value), "zones listed twice", shown=lambda key: key[0])
        return value
