"""Where a model version's bytes are: its source URI resolved to a placeable location.

Why: the audit places a dependency by its reference (a bucket, a host, a path prefix). A
version's `source` is often indirect (`runs:/<run>/model`, `models:/m-<id>`,
`mlflow-artifacts:/...`): recorded as it is, it would be placed nowhere ("unknown"). So each
source is followed to where the bytes live, and that location is the dependency; the detail
keeps the URI as the version holds it.

  s3://, gs://, wasbs://, abfss://, hdfs://, http(s)://, file://, /path   the location itself
  mlflow-artifacts:/p    the server's --artifacts-destination + /p when the plan names it
                         (option artifacts_destination); else the server's artifact proxy URL
  runs:/<run>/p          the run's artifact_uri + /p, then resolved again
  models:/m-<id>[/p]     the logged model's artifact_location (+ /p), then resolved again
  models:/<name>/<n>, models:/<name>@<alias>   that version's location (same registry)
MLflow 3 versions carry `storage_location` (the resolved place): it is used when present.
"""

from __future__ import annotations

from typing import Callable
from urllib.parse import urlsplit

DIRECT = ("s3://", "s3a://", "gs://", "wasbs://", "abfss://", "hdfs://", "http://", "https://", "file:/", "/")


class Lookups:
    """What resolving needs from the server, asked only for indirect URIs (cached by the caller)."""

    def __init__(self, run_artifact_uri: Callable[[str], str | None],
                 logged_model_location: Callable[[str], str | None],
                 version_source: Callable[[str, str], str | None]) -> None:
        self.run_artifact_uri = run_artifact_uri
        self.logged_model_location = logged_model_location
        self.version_source = version_source


def join(base: str, path: str) -> str:
    path = path.strip("/")
    return base.rstrip("/") + ("/" + path if path else "")


def resolve(uri: str, tracking_uri: str, artifacts_destination: str | None, lookups: Lookups,
            depth: int = 0) -> str | None:
    """The location of `uri`'s bytes, or None when it cannot be followed (a deleted run...)."""
    if not uri or depth > 5:
        return None
    if uri.startswith("mlflow-artifacts:"):
        path = _artifact_path(uri)
        if artifacts_destination:
            return join(artifacts_destination, path)
        return join(tracking_uri + "/api/2.0/mlflow-artifacts/artifacts", path)
    if uri.startswith("runs:/"):
        run_id, _, path = uri[len("runs:/"):].strip("/").partition("/")
        base = lookups.run_artifact_uri(run_id)
        return resolve(join(base, path), tracking_uri, artifacts_destination, lookups, depth + 1) if base else None
    if uri.startswith("models:/"):
        return _model_uri(uri, tracking_uri, artifacts_destination, lookups, depth)
    if uri.startswith(DIRECT):
        return uri
    return uri  # an unknown scheme: recorded as it is, so the audit still sees (and cannot place) it


def _artifact_path(uri: str) -> str:
    parts = urlsplit(uri)
    return parts.path  # mlflow-artifacts://host:port/path and mlflow-artifacts:/path alike


def _model_uri(uri: str, tracking_uri: str, dest: str | None, lookups: Lookups, depth: int) -> str | None:
    rest = uri[len("models:/"):].strip("/")
    head, _, path = rest.partition("/")
    if head.startswith("m-"):
        base = lookups.logged_model_location(head)
    elif "@" in head:
        name, _, alias = head.partition("@")
        base = lookups.version_source(name, "@" + alias)
        path = rest.partition("/")[2]
    else:
        version, _, path = path.partition("/")
        base = lookups.version_source(head, version)
    if not base:
        return None
    return resolve(join(base, path), tracking_uri, dest, lookups, depth + 1)


def rewrite_run(uri: str, runs: dict[str, str]) -> str:
    """`runs:/<old>/p` -> `runs:/<new>/p` when the run was recreated under a new id."""
    if uri.startswith("runs:/"):
        run_id, sep, path = uri[len("runs:/"):].partition("/")
        if run_id in runs:
            return f"runs:/{runs[run_id]}{sep}{path}"
    return uri
