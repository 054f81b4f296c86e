"""The `mlflow` source's options (validated when the plan loads; docs/exporters/mlflow.md)."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from dr.contract import ExporterOptions


class MlflowOptions(ExporterOptions):
    #: the tracking server (http[s]://host:port[/prefix]); credentials come from the environment
    tracking_uri: str
    #: where the server's backend database is (e.g. postgresql://db.internal/mlflow), recorded
    #: as a dependency of the registry so the audit can place it; dr never connects to it
    backend_store: str | None = None
    #: the server's --artifacts-destination (e.g. s3://mlflow-artifacts), so that
    #: `mlflow-artifacts:/...` sources are placed where the bytes are, not at the server
    artifacts_destination: str | None = None
    #: only models whose name matches one of these globs (default: every model)
    models: list[str] = Field(default_factory=lambda: ["*"])
    #: every logged value of each metric instead of the last one (one request per metric)
    metric_history: bool = False
    #: parallel requests while reading lineage
    parallel: int = Field(default=8, ge=1, le=64)
    #: copy each selected version's model artifacts to `copy_to`, verified by SHA-256
    copy_artifacts: bool = False
    #: the DR location of those copies: a directory or s3://bucket/prefix
    copy_to: str | None = None
    #: which versions are copied: "@alias", "stage:Production", "all" (default: every version)
    copy_only: list[str] = Field(default_factory=lambda: ["all"])
    #: S3 endpoint of the source artifact store (a MinIO, moto...); default AWS
    s3_endpoint_url: str | None = None
    #: S3 endpoint of copy_to when it is s3://; default: s3_endpoint_url
    copy_s3_endpoint_url: str | None = None
    #: seconds per request
    timeout_seconds: float = Field(default=30.0, gt=0)

    @field_validator("tracking_uri")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("tracking_uri must be an http:// or https:// URL of the tracking server")
        return value.rstrip("/")

    @field_validator("copy_only")
    @classmethod
    def _selectors(cls, value: list[str]) -> list[str]:
        for item in value:
            if item != "all" and not item.startswith(("@", "stage:")):
                raise ValueError(f"{item!r}: a selector is 'all', '@alias' or 'stage:NAME'")
        return value

    @model_validator(mode="after")
    def _copy_needs_a_place(self) -> "MlflowOptions":
        if self.copy_artifacts and not self.copy_to:
            raise ValueError("copy_artifacts needs copy_to (a directory or s3://bucket/prefix)")
        return self
