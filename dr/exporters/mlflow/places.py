"""Where weights are read from and copied to: a directory, an S3 prefix, the server's artifact proxy.

Small on purpose: the copies of model weights need list, read, write and exists; the
checkpoints exporter has a richer place layer, but exporters are independent plugins and do not
import one another (.importlinter).
"""

from __future__ import annotations

import os
import secrets
import shutil
from typing import BinaryIO, Iterator
from urllib.parse import quote, urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from dr.exporters.mlflow.requesting import Client

PROXY = "/api/2.0/mlflow-artifacts/artifacts"


class WeightsPlace:
    url: str

    def files(self) -> Iterator[tuple[str, int]]:
        """(relative path, size) of every file under the place; nothing when it is missing."""
        raise NotImplementedError

    def open(self, rel: str) -> BinaryIO:
        raise NotImplementedError

    def put(self, rel: str, stream: BinaryIO) -> None:
        raise NotImplementedError

    def read(self, rel: str) -> bytes | None:
        """The whole file, or None when it does not exist."""
        raise NotImplementedError

    def url_of(self, rel: str) -> str:
        return self.url.rstrip("/") + "/" + rel


class Directory(WeightsPlace):
    def __init__(self, url: str) -> None:
        self.url = url
        self.root = urlsplit(url).path if url.startswith("file:") else url

    def files(self) -> Iterator[tuple[str, int]]:
        if os.path.isfile(self.root):
            yield "", os.path.getsize(self.root)
            return
        for folder, _, names in os.walk(self.root):
            for name in sorted(names):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, self.root), os.path.getsize(path)

    def _path(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    def open(self, rel: str) -> BinaryIO:
        return open(self._path(rel), "rb")

    def put(self, rel: str, stream: BinaryIO) -> None:
        path = self._path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # a name of its own: two backups of one source may copy the same version at once (same
        # bytes: the version's source never changes), and a shared partial would mix them
        partial = f"{path}.{secrets.token_hex(8)}.dr-partial"
        try:
            with open(partial, "wb") as out:
                shutil.copyfileobj(stream, out, 8 << 20)
                out.flush()
                os.fsync(out.fileno())
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)

    def read(self, rel: str) -> bytes | None:
        try:
            with open(self._path(rel), "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None


class S3(WeightsPlace):
    def __init__(self, url: str, endpoint_url: str | None) -> None:
        parts = urlsplit(url)
        self.url, self.bucket, self.prefix = url.rstrip("/"), parts.netloc, parts.path.strip("/")
        self.s3 = boto3.client("s3", endpoint_url=endpoint_url,
                               config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 5}))

    def _key(self, rel: str) -> str:
        return "/".join(p for p in (self.prefix, rel) if p)

    def files(self) -> Iterator[tuple[str, int]]:
        base = self.prefix + "/" if self.prefix else ""
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base):
            for obj in page.get("Contents", []):
                yield obj["Key"][len(base):], obj["Size"]

    def open(self, rel: str) -> BinaryIO:
        return self.s3.get_object(Bucket=self.bucket, Key=self._key(rel))["Body"]

    def put(self, rel: str, stream: BinaryIO) -> None:
        self.s3.upload_fileobj(stream, self.bucket, self._key(rel))

    def read(self, rel: str) -> bytes | None:
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=self._key(rel))["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return None
            raise


class Proxy(WeightsPlace):
    """The tracking server's artifact proxy (mlflow-artifacts:), read only."""

    def __init__(self, url: str, client: Client) -> None:
        self.url, self.client = url.rstrip("/"), client
        self.path = self.url.split(PROXY, 1)[1].strip("/")

    def files(self) -> Iterator[tuple[str, int]]:
        pending = [self.path]
        while pending:
            here = pending.pop()
            for f in self.client.call("GET", PROXY, params={"path": here}).get("files", []):
                full = f"{here}/{f['path']}".strip("/") if not f["path"].startswith(here) else f["path"]
                if f.get("is_dir"):
                    pending.append(full)
                else:
                    yield full[len(self.path):].strip("/"), int(f.get("file_size", 0))

    def open(self, rel: str) -> BinaryIO:
        path = "/".join(p for p in (self.path, rel) if p)
        return self.client.call("GET", f"{PROXY}/{quote(path)}", raw=True).raw


def open_place(url: str, endpoint_url: str | None, client: Client | None = None) -> WeightsPlace:
    if url.startswith(("s3://", "s3a://")):
        return S3(url.replace("s3a://", "s3://", 1), endpoint_url)
    if PROXY in url and client is not None:
        return Proxy(url, client)
    if url.startswith(("file:", "/")) or "://" not in url:
        return Directory(url)
    raise ValueError(f"{url}: weights there cannot be read (dr copies from s3://, file:// and the "
                     "server's mlflow-artifacts proxy)")
