"""Reading AWS Secrets Manager: the client, the secrets a source selects, their metadata as data.

The metadata record of a secret is what `DescribeSecret` says, minus what changes on every
read (`LastAccessedDate`) and with dates as ISO text: name, ARN, description, the KMS key
that encrypts it, rotation, replication (each replica's region, KMS key and status), tags,
and the version ids with their stages. Never a value: values are read only by
`read_value`, and only when the source asks for them (`include_values`).
"""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime
from typing import Any, Iterator

from pydantic import Field

from dr.contract import ExporterOptions

DEFAULT_KEY = "alias/aws/secretsmanager"  # what encrypts a secret that names no key
_VOLATILE = ("LastAccessedDate", "ResponseMetadata")


class SecretsManagerOptions(ExporterOptions):
    region: str = Field(description="the region whose secrets are backed up")
    endpoint_url: str | None = None  # a VPC endpoint, or a test server
    names: list[str] | None = None  # only these secrets (names or ARNs); default: every secret
    name_prefix: str | None = None  # only secrets whose name starts with this
    include_values: bool = False  # also back up each secret's current value, secret-class
    timeout_seconds: float = Field(default=30, gt=0)  # connect and read timeout of each request


class SecretsManagerUnavailable(Exception):
    """Listing or reading secrets failed (credentials, permissions, the endpoint)."""


def client_error() -> type[BaseException]:
    """botocore's ClientError. boto3 and botocore are imported on first use, not with the
    exporter: validating a plan (`dr audit`, `dr plugins`) need not pay ~0.3 s for them."""
    import botocore.exceptions

    return botocore.exceptions.ClientError


def aws_errors() -> tuple[type[BaseException], ...]:
    """What a Secrets Manager call raises: the service's answer or botocore's own error."""
    import botocore.exceptions

    return (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError)


def client(options: SecretsManagerOptions, region: str | None = None):
    import boto3
    import botocore.config

    config = botocore.config.Config(connect_timeout=options.timeout_seconds, read_timeout=options.timeout_seconds,
                                    retries={"max_attempts": 3, "mode": "standard"})
    return boto3.session.Session().client("secretsmanager", region_name=region or options.region,
                                          endpoint_url=options.endpoint_url, config=config)


def selected(sm, options: SecretsManagerOptions) -> Iterator[dict[str, Any]]:
    """The DescribeSecret record of every selected secret, by name order."""
    try:
        if options.names is not None:
            for index, name in enumerate(options.names):
                yield _described(sm, name, f"names[{index}]")
            return
        found = []
        for page in sm.get_paginator("list_secrets").paginate():
            found += [s for s in page.get("SecretList", [])
                      if not options.name_prefix or s["Name"].startswith(options.name_prefix)]
        for entry in sorted(found, key=lambda s: s["Name"]):
            yield _described(sm, entry["ARN"], "a listed secret", entry["Name"])
    except aws_errors() as exc:
        raise SecretsManagerUnavailable(sealed_text(_why(exc))) from None


def _described(sm, secret_id: str, which: str, *named: str) -> dict[str, Any]:
    """DescribeSecret; its error names the secret by `which`: the message goes into the snapshot's
    manifest, where a secret's name or ARN must not (format.md 8.1)."""
    try:
        return sm.describe_secret(SecretId=secret_id)
    except aws_errors() as exc:
        raise SecretsManagerUnavailable(f"{which}: {sealed_text(_why(exc), secret_id, *named)}") from None


def _why(exc: BaseException) -> str:
    return _reason(exc) if isinstance(exc, client_error()) else f"{type(exc).__name__}: {exc}"


_SECRET_ARN = re.compile(r"arn:aws[a-z-]*:secretsmanager:[^\s'\",;]*")


def sealed_text(text: str, *named: str) -> str:
    """An error's text without a secret's ARN and without the names given (AWS's AccessDenied
    message names the resource): it is stored in the manifest and printed by `dr status`."""
    text = _SECRET_ARN.sub("arn:aws:secretsmanager:(withheld)", text)
    for name in named:
        if name:
            text = text.replace(name, "(a secret's name, withheld)")
    return text


def metadata(described: dict[str, Any]) -> dict[str, Any]:
    """The diffable record: no volatile field, dates as ISO text, tags and replicas sorted."""
    record = {k: _plain(v) for k, v in sorted(described.items()) if k not in _VOLATILE}
    record["Tags"] = sorted(record.get("Tags") or [], key=lambda t: t.get("Key", ""))
    record["ReplicationStatus"] = sorted(record.get("ReplicationStatus") or [], key=lambda r: r.get("Region", ""))
    record.setdefault("KmsKeyId", DEFAULT_KEY)
    return record


def render(record: dict[str, Any]) -> bytes:
    return json.dumps(record, sort_keys=True, indent=1).encode() + b"\n"


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def current_version(record: dict[str, Any]) -> str | None:
    return next((v for v, stages in (record.get("VersionIdsToStages") or {}).items() if "AWSCURRENT" in stages),
                None)


def read_value(sm, secret_id: str, version_id: str) -> bytes:
    """One version's value as the stored JSON: {"SecretString": ...} or {"SecretBinary": base64}."""
    try:
        answer = sm.get_secret_value(SecretId=secret_id, VersionId=version_id)
    except client_error() as exc:
        raise SecretsManagerUnavailable(f"reading a value: {sealed_text(_reason(exc), secret_id)}") from None
    return encode_value(answer)


def encode_value(answer: dict[str, Any]) -> bytes:
    if "SecretBinary" in answer:
        return json.dumps({"SecretBinary": base64.b64encode(answer["SecretBinary"]).decode()}).encode()
    return json.dumps({"SecretString": answer.get("SecretString", "")}).encode()


def value_arguments(stored: bytes) -> dict[str, Any]:
    """The SecretString/SecretBinary argument of CreateSecret or PutSecretValue from the stored JSON."""
    data = json.loads(stored)
    if "SecretBinary" in data:
        return {"SecretBinary": base64.b64decode(data["SecretBinary"])}
    return {"SecretString": data["SecretString"]}


def _reason(exc) -> str:
    """Code and message of a botocore ClientError."""
    error = exc.response.get("Error", {})
    return f"{error.get('Code', 'ClientError')}: {error.get('Message', '')}".strip()


def region_of(arn: str) -> str:
    parts = arn.split(":")
    return parts[3] if len(parts) > 3 else ""
