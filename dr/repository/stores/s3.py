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
- The client is configured, and its errors classified, in s3_clients.py, shared with the
  checkpoint places: botocore's own retries are off; retries live in RetryingStore, where
  they are bounded, visible and the same for every store.
- Without s3:ListBucket permission S3 answers 403, not 404, for a missing key; that stays a
  StoreError (exists() cannot tell "missing" from "forbidden" then, and must not guess).
- Error messages name the bucket and key, the S3 error code and HTTP status, never
  credentials (which this module never reads; botocore resolves them).
"""

from __future__ import annotations

import base64
import hashlib
import io
from typing import BinaryIO, Iterator
from urllib.parse import urlsplit

import boto3
import botocore.exceptions

from dr.repository.stores.base import (
    ObjectExists,
    ObjectMissing,
    Store,
    StoreError,
    TransientStoreError,
    check_key,
)
from dr.repository.stores.s3_clients import (
    describe,
    error_code,
    http_status,
    is_missing,
    is_transient,
    new_client,
    safe_url,
)


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
            client = new_client(boto3.session.Session(profile_name=profile, region_name=region), endpoint_url)
        self._client = client
        # Flipped off once if the server answers 501 to If-None-Match (see module docstring).
        self._conditional_put = True
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
        }
        if self._conditional_put:
            try:
                self._client.put_object(Bucket=self.bucket, Key=name, Body=data, IfNoneMatch="*", **digests)
                return
            except botocore.exceptions.ClientError as exc:
                if error_code(exc) in ("PreconditionFailed", "412"):
                    raise ObjectExists(key) from None
                if error_code(exc) != "NotImplemented" and http_status(exc) != 501:
                    raise self._error("put", key, exc) from exc
                self._conditional_put = False
            except Exception as exc:
                raise self._error("put", key, exc) from exc
        if self.exists(key):  # fallback: racy, see module docstring
            raise ObjectExists(key)
        try:
            self._client.put_object(Bucket=self.bucket, Key=name, Body=data, **digests)
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
        except botocore.exceptions.ClientError as exc:
            if is_missing(exc):
                return False
            raise self._error("head", key, exc) from exc
        except Exception as exc:
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
        name = self._full(key)
        try:
            self._client.delete_object(Bucket=self.bucket, Key=name)
        except botocore.exceptions.ClientError as exc:
            if not is_missing(exc):  # S3 answers 204 anyway; others may 404
                raise self._error("delete", key, exc) from exc
        except Exception as exc:
            raise self._error("delete", key, exc) from exc

    def close(self) -> None:
        self._client.close()

    def object_lock_enabled(self) -> bool:
        """Whether the bucket has S3 Object Lock enabled (not part of the store contract: the
        backup asks it of a target whose plan says `object_lock: true`)."""
        try:
            answer = self._client.get_object_lock_configuration(Bucket=self.bucket)
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) == "ObjectLockConfigurationNotFoundError":
                return False
            raise self._error("get object lock configuration of", "", exc) from exc
        except Exception as exc:
            raise self._error("get object lock configuration of", "", exc) from exc
        return answer.get("ObjectLockConfiguration", {}).get("ObjectLockEnabled") == "Enabled"

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
