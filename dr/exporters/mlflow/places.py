"""Where weights are read from and copied to: a directory, an S3 prefix, the server's artifact proxy.

Directories and S3 prefixes are the kit's places (dr/kits/places/: LocalPlace, S3Place, each in
RetryingPlace), the same code the checkpoints exporter copies with. The artifact proxy is this
exporter's own place (proxy.py), since only MLflow serves it. WeightsPlace is what the copies
need of any of them (list, stream in and out, read a small file) under the URL the plan gave:
that URL, not the place's own spelling of it, is what snapshots record and messages name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO, Iterator
from urllib.parse import urlsplit

from dr.exporters.mlflow.proxy import PROXY, ProxyPlace
from dr.exporters.mlflow.requesting import Client
from dr.kits.places.contract import Place
from dr.kits.places.local import LocalPlace
from dr.kits.places.retrying import RetryingPlace
from dr.kits.places.s3 import S3Place
from dr.kits.places.streaming import ReaderStream, write_stream


@dataclass
class WeightsPlace:
    """A place under the URL it was named by; `single` is the file's name when the URL names
    one file (a version whose source is a file, not a directory), read as the path ''."""

    url: str
    place: Place
    single: str = ""

    def url_of(self, rel: str) -> str:
        return self.url.rstrip("/") + "/" + rel

    def files(self) -> Iterator[tuple[str, int]]:
        """(relative path, size) of every file under the place; nothing when it is missing."""
        if self.single:
            found = self.place.head(self.single)
            if found is not None:
                yield "", found[0]
            return
        for f in self.place.list_files():
            yield f.path, f.size

    def open(self, rel: str) -> BinaryIO:
        return ReaderStream(self.place.open_read(rel or self.single))

    def put(self, rel: str, stream: BinaryIO, size: int) -> int:
        """Write `size` bytes from `stream`; the bytes read (the file is published only if == size)."""
        return write_stream(self.place, rel, stream, size)

    def put_bytes(self, rel: str, data: bytes) -> None:
        self.place.put(rel, data)

    def read(self, rel: str) -> bytes | None:
        """The whole file, or None when it does not exist."""
        return self.place.get(rel)


def _directory(url: str) -> WeightsPlace:
    root = urlsplit(url).path if url.startswith("file:") else url
    if os.path.isfile(root):
        folder, name = os.path.split(root)
        return WeightsPlace(url, RetryingPlace(LocalPlace(folder or ".")), single=name)
    return WeightsPlace(url, RetryingPlace(LocalPlace(root)))


def _s3(url: str, endpoint_url: str | None) -> WeightsPlace:
    parts = urlsplit(url.replace("s3a://", "s3://", 1))
    place = S3Place(parts.netloc, parts.path.strip("/"), endpoint_url=endpoint_url)
    return WeightsPlace(url.replace("s3a://", "s3://", 1).rstrip("/"), RetryingPlace(place))


def open_place(url: str, endpoint_url: str | None, client: Client | None = None) -> WeightsPlace:
    if url.startswith(("s3://", "s3a://")):
        return _s3(url, endpoint_url)
    if PROXY in url and client is not None:
        return WeightsPlace(url.rstrip("/"), ProxyPlace(url, client))
    if url.startswith(("file:", "/")) or "://" not in url:
        return _directory(url)
    raise ValueError(f"{url}: weights there cannot be read (dr copies from s3://, file:// and the "
                     "server's mlflow-artifacts proxy)")
