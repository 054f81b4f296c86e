"""A repository in an S3 bucket (AWS or any S3-compatible server), under an optional prefix.

An S3 place (dr/kits/places/s3.py) seen through PlaceStore (placing.py); what the store needs
of S3 is the place's, stated there: write-once put as a conditional write (If-None-Match: *,
which also keeps a bucket with Object Lock from quietly adding versions), the HEAD-then-PUT
fallback for a server that answers 501 to the condition, Content-MD5 and SHA-256 on every
PUT, the stored checksum checked on every GET, errors that name bucket and key, never
credentials. This module adds only what is the repository's:
- The client. The hot requests (put, get, head, list, delete) go through the lean client
  (dr/kits/s3/lean.py) when the credentials are static keys in the environment: importing
  botocore and building its client cost more than an unchanged backup's own work. Object Lock
  calls, and puts with retention, go through botocore, built on first need. The botocore
  client is configured in dr/kits/s3/clients.py, shared with the checkpoint places: its own
  retries are off; retries are RetryingPlace's (open_store wraps the place in it).
- Without s3:ListBucket permission S3 answers 403, not 404, for a missing key; that stays a
  StoreError (exists() cannot tell "missing" from "forbidden" then, and must not guess).
- Object Lock policy (docs/format.md section 23; dr.repository.immutability drives it): which
  keys are retained and for how long (ObjectRetention), extending the retention of reused
  objects, and deleting (purge, hide) only what retention allows. The requests are the
  kit's (dr/kits/places/s3locking.py), each under the place's retry policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from dr.kits.places import s3locking
from dr.kits.places.contract import Retention
from dr.kits.places.retrying import RetryingPlace, unwrapped
from dr.kits.places.s3 import S3Place
from dr.kits.s3.clients import new_client, safe_url
from dr.kits.s3.lean import LeanS3Client
from dr.kits.s3.signing import static_setup
from dr.model import clock
from dr.repository.stores.base import StoreError, check_key
from dr.repository.stores.placing import PlaceStore


@dataclass(frozen=True)
class ObjectRetention:
    """Object Lock retention for every object this store writes (docs/format.md section 23)."""

    mode: str  # "GOVERNANCE" or "COMPLIANCE", as S3 spells it
    days: int
    # Keys written without retention: lock objects, which their holder deletes within minutes.
    unretained: tuple[str, ...] = ("locks/",)

    def until(self) -> datetime:
        return clock.now() + timedelta(days=self.days)


class S3Store(PlaceStore):
    """`s3://bucket/prefix` as a store; `retrying`: the place is wrapped in RetryingPlace."""

    def __init__(self, bucket: str, prefix: str = "", region: str | None = None,
                 endpoint_url: str | None = None, profile: str | None = None, client=None,
                 retrying: bool = False):
        if not bucket or "/" in bucket:
            raise ValueError(f"invalid bucket name {bucket!r}")
        prefix = prefix.strip("/")
        if prefix:
            check_key(prefix)
        self.bucket = bucket
        self._client = client if client is not None else _new_client(region, endpoint_url, profile)
        place = S3Place(bucket, prefix, endpoint_url=endpoint_url, region=region, profile=profile,
                        client=self._client, remember_versions=False, verify_streams=True)
        self.retention: ObjectRetention | None = None  # set by retain_objects()
        where = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
        super().__init__(RetryingPlace(place) if retrying else place,
                         where + (f" (endpoint {safe_url(endpoint_url)})" if endpoint_url else ""))

    @property
    def _bare(self) -> S3Place:
        return unwrapped(self.place)

    def put(self, key: str, data: bytes) -> None:
        if self.retention is None or key.startswith(self.retention.unretained):
            return self._put(key, data)
        self._put(key, data, retain=Retention(self.retention.mode, self.retention.until()))

    def delete(self, key: str) -> None:
        """With retention: every version of an object whose retention has passed is removed
        (space freed); a locked object is only hidden by a delete marker, never deleted."""
        if self.retention is None:
            return super().delete(key)
        if self.purge(key) is not None:
            self.hide(key)

    def object_lock_enabled(self) -> bool:
        """Whether the bucket has S3 Object Lock enabled (not part of the store contract: backup
        and prune ask it of a target whose plan sets `immutability`)."""
        return self.call(lambda: s3locking.lock_enabled(self._bare))

    # -- Object Lock (not part of the store contract: dr.repository.immutability drives it) ---
    def retain_objects(self, retention: ObjectRetention) -> None:
        """From now on, every put gets this retention (except keys under retention.unretained)."""
        self.retention = retention

    def retained_until(self, key: str, version: str | None = None) -> datetime | None:
        """When the object's (or version's) Object Lock retention ends; None without one."""
        return self.call(lambda: s3locking.retained_until(self._bare, check_key(key), version))

    def extend_retention(self, key: str) -> None:
        """Lock an object written earlier (and now referenced again) for the full period from
        now. S3 refuses to shorten a retention; an object already locked longer is left so."""
        wanted = self.retention.until()
        try:
            self.call(lambda: s3locking.retain(self._bare, check_key(key), Retention(self.retention.mode, wanted)))
        except StoreError as exc:
            until = self.retained_until(key)
            if until is None or until < wanted:
                raise StoreError(f"extend the retention of {exc}") from exc

    def versions(self, prefix: str) -> dict[str, list[dict]]:
        """Key -> its versions and delete markers ({"VersionId", "IsLatest", "marker"})."""
        return self.call(lambda: s3locking.versions(self._bare, prefix))

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
            self.call(lambda v=version: s3locking.delete_version(self._bare, key, v["VersionId"]))
        return None

    def hide(self, key: str) -> None:
        """A delete marker: the object leaves every listing; its locked version stays."""
        super().delete(key)


def _new_client(region: str | None, endpoint_url: str | None, profile: str | None):
    """The lean client when the setup is static (signing.static_setup), else botocore's."""

    def botocore_client():
        import boto3  # slow to import: only when botocore is what the store needs

        return new_client(boto3.session.Session(profile_name=profile, region_name=region), endpoint_url)

    setup = static_setup(region, endpoint_url, profile)
    return LeanS3Client(setup, botocore_client) if setup is not None else botocore_client()


def from_url(url: str, region: str | None = None, endpoint_url: str | None = None,
             profile: str | None = None, retrying: bool = False) -> S3Store:
    """An S3Store for `s3://bucket[/prefix]`. Credentials never go in the URL."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.hostname:
        raise ValueError("expected s3://bucket[/prefix]")
    if "@" in parts.netloc or parts.query or parts.fragment or parts.port:
        raise ValueError("an s3:// URL names a bucket and prefix only (no credentials, port or query)")
    return S3Store(parts.netloc, parts.path.strip("/"), region=region,
                   endpoint_url=endpoint_url, profile=profile, retrying=retrying)
