"""The `etcd` exporter's plan options (documented in docs/exporters/etcd.md)."""

from __future__ import annotations

from pydantic import Field, field_validator

from dr.contract import ExporterOptions
from dr.kits.validators import listed_once, plain_name


class EtcdCluster(ExporterOptions):
    name: str = Field(description="the artifact's identity; the restored file is <name>.db")
    endpoints: list[str] = Field(min_length=1, description="client URLs, tried in order")
    ca_file: str | None = None  # CA bundle of the members' serving certificates (relative: the plan's folder)
    cert_file: str | None = None  # client certificate (kubeadm: apiserver-etcd-client.crt)
    key_file: str | None = None  # its private key (kubeadm: apiserver-etcd-client.key)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        return plain_name(value, "a file name")

    @field_validator("endpoints")
    @classmethod
    def _urls(cls, value: list[str]) -> list[str]:
        for url in value:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"{url!r}: a client URL starts with http:// or https://")
        return value


class EtcdOptions(ExporterOptions):
    clusters: list[EtcdCluster] = Field(min_length=1)  # the clusters to snapshot, one artifact each
    timeout_seconds: float = Field(30.0, gt=0, description="deadline of each status call; a snapshot stream whose keepalive pings go unanswered this long ends")

    @field_validator("clusters")
    @classmethod
    def _unique_names(cls, value: list[EtcdCluster]) -> list[EtcdCluster]:
        listed_once((c.name for c in value), "cluster names must be unique")
        return value
