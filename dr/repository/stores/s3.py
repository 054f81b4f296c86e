"""A repository in an S3 bucket (AWS or any S3-compatible server), under an optional prefix.

Why it looks the way it does:
- Write-once put uses a conditional write (PutObject with If-None-Match: *). S3 then refuses
  to replace an existing object atomically, server-side: two writers racing for one key get
  one success and one 412 PreconditionFailed (-> ObjectExists), or a 409
  ConditionalRequestConflict (-> TransientStoreError; retrying then gives 412). It also works
  on a bucket with Object Lock, where an overwrite would otherwise quietly add a new version.
- A server that answers 501 NotImplemented to the condition is switched to HEAD-then-PUT for
  the life of this store. That fallback has a race: two writers can both see no object and
  both PUT, and the later one wins (on a versioned/locked bucket both versions are kept).
  Repository objects are content-addressed, so the racers write the same bytes; the rest
  (manifests) are named uniquely by their writer. A server that silently IGNORES the header
  cannot be detected here; such a server overwrites.
- Every PUT carries Content-MD5 and a SHA-256 checksum, so the server rejects an upload that
  was corrupted on the way (MD5 is what every S3-compatible server verifies; SHA-256 is the
  stronger AWS one and also satisfies Object Lock's "checksum required" rule). GETs ask for
  the stored checksum back, and botocore verifies it.
- The client is configured, and its errors classified, in dr/kits/s3/clients.py, shared with the
  checkpoint places: botocore's own retries are off; retries live in RetryingStore, where
  they are bounded, visible and the same for every store.
- Without s3:ListBucket permission S3 answers 403, not 404, for a missing key; that stays a
  StoreError (exists() cannot tell "missing" from "forbidden" then, and must not guess).
- Error messages name the bucket and key, the S3 error code and HTTP status, never
  credentials (which this module never reads; botocore or dr.kits.s3.signing resolves them).
- The hot requests (put, get, head, list, delete) go through the lean client (dr/kits/s3/lean.py)
  when the credentials are static keys in the environment: importing botocore and building
  its client cost more than an unchanged backup's own work. Object Lock calls, and puts with
  retention, always go through botocore (`_botocore()`), built on first need.
"""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import BinaryIO, Iterator
from urllib.parse import urlsplit

from dr.model import clock
from dr.repository.stores.base import (
    ObjectExists,
    ObjectMissing,
    Store,
    StoreError,
    TransientStoreError,
    check_key,
)
from dr.kits.s3.clients import (
    describe,
    error_code,
    http_status,
    is_missing,
    is_transient,
    new_client,
    safe_url,
)
from dr.kits.s3.lean import LeanS3Client
from dr.kits.s3.signing import static_setup


@dataclass(frozen=True)
class ObjectRetention:
    """Object Lock retention for every object this store writes (docs/format.md section 23)."""

    mode: str  # "GOVERNANCE" or "COMPLIANCE", as S3 spells it
    days: int
    # Keys written without retention: lock objects, which their holder deletes within minutes.
    unretained: tuple[str, ...] = ("locks/",)

    def until(self) -> datetime:
        return clock.now() + timedelta(days=self.days)


class S3Store(Store):
    def __init__(self, bucket: str, prefix: str = "", region: str | None = None,
                 endpoint_url: str | None = None, profile: str | None = None, client=None):
        if not bucket or "/" in bucket:
            raise ValueError(f"invalid bucket name {bucket!r}")
        prefix = prefix.strip("/")
        if prefix:
            check_key(prefix)
        self.bucket = bucket
        self._prefix = f"{prefix}/" if prefix else ""
        if client is None:
            client = _new_client(region, endpoint_url, profile)
        self._client = client
        # Flipped off once if the server answers 501 to If-None-Match (see module docstring).
        self._conditional_put = True
        self.retention: ObjectRetention | None = None  # set by retain_objects()
        where = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
        self.description = where + (f" (endpoint {safe_url(endpoint_url)})" if endpoint_url else "")

    def _full(self, key: str) -> str:
        return self._prefix + check_key(key)

    def put(self, key: str, data: bytes) -> None:
        name = self._full(key)
        digests = {
            "ContentMD5": base64.b64encode(hashlib.md5(data).digest()).decode(),
            "ChecksumAlgorithm": "SHA256",
            "ChecksumSHA256": base64.b64encode(hashlib.sha256(data).digest()).decode(),
            **self._lock_headers(key),
        }
        client = self._botocore() if "ObjectLockMode" in digests else self._client
        if self._conditional_put:
            try:
                client.put_object(Bucket=self.bucket, Key=name, Body=data, IfNoneMatch="*", **digests)
                return
            except Exception as exc:
                if error_code(exc) in ("PreconditionFailed", "412"):
                    raise ObjectExists(key) from None
                if error_code(exc) != "NotImplemented" and http_status(exc) != 501:
                    raise self._error("put", key, exc) from exc
                self._conditional_put = False
        if self.exists(key):  # fallback: racy, see module docstring
            raise ObjectExists(key)
        try:
            client.put_object(Bucket=self.bucket, Key=name, Body=data, **digests)
        except Exception as exc:
            raise self._error("put", key, exc) from exc

    def get(self, key: str) -> bytes:
        with self.open(key) as handle:
            return handle.read()

    def open(self, key: str) -> BinaryIO:
        name = self._full(key)
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=name, ChecksumMode="ENABLED")
        except Exception as exc:
            raise self._error("get", key, exc) from exc
        body = _Body(response["Body"], lambda exc: self._error("get", key, exc))
        return io.BufferedReader(body, buffer_size=1 << 20)

    def exists(self, key: str) -> bool:
        name = self._full(key)
        try:
            self._client.head_object(Bucket=self.bucket, Key=name)
            return True
        except Exception as exc:
            if is_missing(exc):
                return False
            raise self._error("head", key, exc) from exc

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self._prefix + prefix):
                for item in page.get("Contents", ()):
                    yield item["Key"][len(self._prefix):], item["Size"]
        except Exception as exc:
            raise self._error("list", prefix, exc) from exc

    def delete(self, key: str) -> None:
        """With retention: every version of an object whose retention has passed is removed
        (space freed); a locked object is only hidden by a delete marker, never deleted."""
        if self.retention is not None:
            if self.purge(key) is not None:
                self.hide(key)
            return
        name = self._full(key)
        try:
            self._client.delete_object(Bucket=self.bucket, Key=name)
        except Exception as exc:
            if not is_missing(exc):  # S3 answers 204 anyway; others may 404
                raise self._error("delete", key, exc) from exc

    def close(self) -> None:
        self._client.close()

    def _botocore(self):
        """The botocore client: the lean client's (built on first need), or the only one."""
        return self._client.botocore() if isinstance(self._client, LeanS3Client) else self._client

    def object_lock_enabled(self) -> bool:
        """Whether the bucket has S3 Object Lock enabled (not part of the store contract: backup
        and prune ask it of a target whose plan sets `immutability`)."""
        try:
            answer = self._botocore().get_object_lock_configuration(Bucket=self.bucket)
        except Exception as exc:
            if error_code(exc) == "ObjectLockConfigurationNotFoundError":
                return False
            raise self._error("get object lock configuration of", "", exc) from exc
        return answer.get("ObjectLockConfiguration", {}).get("ObjectLockEnabled") == "Enabled"

    # -- Object Lock (not part of the store contract: dr.repository.immutability drives it) ---
    def retain_objects(self, retention: ObjectRetention) -> None:
        """From now on, every put gets this retention (except keys under retention.unretained)."""
        self.retention = retention

    def _lock_headers(self, key: str) -> dict:
        if self.retention is None or key.startswith(self.retention.unretained):
            return {}
        return {"ObjectLockMode": self.retention.mode, "ObjectLockRetainUntilDate": self.retention.until()}

    def retained_until(self, key: str, version: str | None = None) -> datetime | None:
        """When the object's (or version's) Object Lock retention ends; None without one."""
        extra = {"VersionId": version} if version else {}
        try:
            head = self._botocore().head_object(Bucket=self.bucket, Key=self._full(key), **extra)
        except Exception as exc:
            raise self._error("head", key, exc) from exc
        return head.get("ObjectLockRetainUntilDate") if head.get("ObjectLockMode") else None

    def extend_retention(self, key: str) -> None:
        """Lock an object written earlier (and now referenced again) for the full period from
        now. S3 refuses to shorten a retention; an object already locked longer is left so."""
        wanted = self.retention.until()
        try:
            self._botocore().put_object_retention(Bucket=self.bucket, Key=self._full(key), Retention={
                "Mode": self.retention.mode, "RetainUntilDate": wanted})
        except Exception as exc:
            until = self.retained_until(key)
            if until is None or until < wanted:
                raise self._error("extend the retention of", key, exc) from exc

    def versions(self, prefix: str) -> dict[str, list[dict]]:
        """Key -> its versions and delete markers ({"VersionId", "IsLatest", "marker"})."""
        out: dict[str, list[dict]] = {}
        paginator = self._botocore().get_paginator("list_object_versions")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self._prefix + prefix):
                for kind, items in (("version", page.get("Versions", ())), ("marker", page.get("DeleteMarkers", ()))):
                    for item in items:
                        out.setdefault(item["Key"][len(self._prefix):], []).append(
                            {"VersionId": item["VersionId"], "IsLatest": item["IsLatest"], "marker": kind == "marker"})
        except Exception as exc:
            raise self._error("list versions of", prefix, exc) from exc
        return out

    def purge(self, key: str, versions: list[dict] | None = None) -> datetime | None:
        """Remove every version and delete marker of `key`, unless a version is still locked:
        then remove nothing and return the latest retain-until date. Never asks S3 to delete
        a locked version (so it never meets AccessDenied for one)."""
        if versions is None:
            versions = self.versions(key).get(key, [])
        now = clock.now()
        locked = [until for v in versions if not v["marker"]
                  for until in [self.retained_until(key, v["VersionId"])] if until and until > now]
        if locked:
            return max(locked)
        for version in versions:
            try:
                self._botocore().delete_object(Bucket=self.bucket, Key=self._full(key), VersionId=version["VersionId"])
            except Exception as exc:
                raise self._error("delete", key, exc) from exc
        return None

    def hide(self, key: str) -> None:
        """A delete marker: the object leaves every listing; its locked version stays."""
        try:
            self._botocore().delete_object(Bucket=self.bucket, Key=self._full(key))
        except Exception as exc:
            raise self._error("delete", key, exc) from exc

    def _error(self, op: str, key: str, exc: Exception) -> StoreError:
        """Map a boto/network exception to the contract's errors, naming bucket/key only."""
        where = f"s3://{self.bucket}/{self._prefix}{key}"
        if isinstance(exc, StoreError):
            return exc
        if is_missing(exc):
            return ObjectMissing(key)
        message = f"{op} {where}: {describe(exc)}"
        return TransientStoreError(message) if is_transient(exc) else StoreError(message)


class _Body(io.RawIOBase):
    """The GetObject stream, with read failures mapped to store errors."""

    def __init__(self, body, map_error):
        self._body = body
        self._map_error = map_error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self._read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def readall(self) -> bytes:
        return self._read(None)  # one call, not RawIOBase's 8 KiB loop

    def _read(self, size: int | None) -> bytes:
        try:
            return self._body.read(size)
        except Exception as exc:
            raise self._map_error(exc) from exc

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


def _new_client(region: str | None, endpoint_url: str | None, profile: str | None):
    """The lean client when the setup is static (signing.static_setup), else botocore's."""

    def botocore_client():
        import boto3  # slow to import: only when botocore is what the store needs

        return new_client(boto3.session.Session(profile_name=profile, region_name=region), endpoint_url)

    setup = static_setup(region, endpoint_url, profile)
    return LeanS3Client(setup, botocore_client) if setup is not None else botocore_client()


def from_url(url: str, region: str | None = None, endpoint_url: str | None = None,
             profile: str | None = None) -> S3Store:
    """An S3Store for `s3://bucket[/prefix]`. Credentials never go in the URL."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.hostname:
        raise ValueError("expected s3://bucket[/prefix]")
    if "@" in parts.netloc or parts.query or parts.fragment or parts.port:
        raise ValueError("an s3:// URL names a bucket and prefix only (no credentials, port or query)")
    return S3Store(parts.netloc, parts.path.strip("/"), region=region,
                   endpoint_url=endpoint_url, profile=profile)
