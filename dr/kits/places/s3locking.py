"""S3 Object Lock on an S3 place: the mechanisms, S3-only (like server-side copies, s3writing.py).

What is locked, for how long, and when a locked object may go is the caller's policy (the
repository's: dr/repository/stores/s3.py, docs/format.md section 23); this module only asks
S3. A retained put is the place's own put(..., retain=Retention(mode, until)); the rest is
here. Every function takes the bare S3Place (run under a RetryingPlace's policy with
retrying.call), makes one request (a listing pages), goes through botocore (the lean client
makes no Object Lock request), and raises the place contract's errors.
"""

from __future__ import annotations

from datetime import datetime

from dr.kits.places.contract import Retention
from dr.kits.places.s3 import S3Place, s3_errors
from dr.kits.s3.clients import error_code


def lock_enabled(place: S3Place) -> bool:
    """Whether the bucket has S3 Object Lock enabled."""
    with s3_errors(f"s3://{place.bucket}"):
        try:
            answer = place.client.get_object_lock_configuration(Bucket=place.bucket)
        except Exception as exc:
            if error_code(exc) == "ObjectLockConfigurationNotFoundError":
                return False
            raise
    return answer.get("ObjectLockConfiguration", {}).get("ObjectLockEnabled") == "Enabled"


def retained_until(place: S3Place, path: str, version: str | None = None) -> datetime | None:
    """When the object's (or one version's) retention ends; None without one."""
    extra = {"VersionId": version} if version else {}
    with s3_errors(place.url_of(path)):
        head = place.client.head_object(Bucket=place.bucket, Key=place.key(path), **extra)
    return head.get("ObjectLockRetainUntilDate") if head.get("ObjectLockMode") else None


def retain(place: S3Place, path: str, retention: Retention) -> None:
    """Set a stored object's retention (S3 refuses to shorten one: AccessDenied or InvalidRequest)."""
    with s3_errors(place.url_of(path)):
        place.client.put_object_retention(Bucket=place.bucket, Key=place.key(path), Retention={
            "Mode": retention.mode, "RetainUntilDate": retention.until})


def versions(place: S3Place, prefix: str) -> dict[str, list[dict]]:
    """Path -> its versions and delete markers ({"VersionId", "IsLatest", "marker"}), for every
    key that starts with `prefix` (a string prefix, as S3 lists)."""
    cut = len(place.prefix) + 1 if place.prefix else 0
    full = f"{place.prefix}/{prefix}" if place.prefix else prefix
    out: dict[str, list[dict]] = {}
    with s3_errors(f"{place.url}/{prefix}"):
        for page in place.client.get_paginator("list_object_versions").paginate(Bucket=place.bucket, Prefix=full):
            for kind, items in (("version", page.get("Versions", ())), ("marker", page.get("DeleteMarkers", ()))):
                for item in items:
                    out.setdefault(item["Key"][cut:], []).append(
                        {"VersionId": item["VersionId"], "IsLatest": item["IsLatest"], "marker": kind == "marker"})
    return out


def delete_version(place: S3Place, path: str, version: str) -> None:
    """Remove one version (or delete marker) for good; S3 refuses while it is retained."""
    with s3_errors(place.url_of(path)):
        place.client.delete_object(Bucket=place.bucket, Key=place.key(path), VersionId=version)
