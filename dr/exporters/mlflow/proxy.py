"""The tracking server's artifact proxy (mlflow-artifacts:) as a place of the kit's contract, read only.

Only MLflow serves it, so it lives in this exporter, implementing dr/kits/places/contract.py for
what a copy reads: listing (the proxy's directory listing, walked), streams of whole files and
small whole reads. It cannot write, and refuses every write (put, writer, delete, abort) with a
PermanentPlaceError: weights are copied from it, never to it. Ranged reads, heads and pending
uploads are not offered either (PermanentPlaceError), and files carry no mtime (0). Its requests
are the exporter's Client's, which retries on its own (requesting.py): its failures are the
Client's errors, not wrapped again, and it is not put in a RetryingPlace.
"""

from __future__ import annotations

from typing import Iterator
from urllib.parse import quote

from dr.exporters.mlflow.requesting import Client
from dr.kits.places.bodies import fill
from dr.kits.places.contract import PermanentPlaceError, Place, Upload, Writer
from dr.kits.places.files import FileStat

PROXY = "/api/2.0/mlflow-artifacts/artifacts"


class ProxyPlace(Place):
    """`…/api/2.0/mlflow-artifacts/artifacts/<path>` on one tracking server."""

    def __init__(self, url: str, client: Client) -> None:
        self._url, self.client = url.rstrip("/"), client
        self.path = self._url.split(PROXY, 1)[1].strip("/")

    @property
    def url(self) -> str:
        return self._url

    def url_of(self, path: str) -> str:
        return f"{self._url}/{path}" if path else self._url

    def location(self) -> dict:
        return {"url": self._url}

    def list_files(self, prefix: str = "") -> Iterator[FileStat]:
        top = "/".join(p for p in (self.path, prefix.strip("/")) if p)
        pending = [top]
        while pending:
            here = pending.pop()
            for f in self.client.call("GET", PROXY, params={"path": here}).get("files", []):
                full = f"{here}/{f['path']}".strip("/") if not f["path"].startswith(here) else f["path"]
                if f.get("is_dir"):
                    pending.append(full)
                else:
                    yield FileStat(full[len(self.path):].strip("/"), int(f.get("file_size", 0)), 0)

    def open_read(self, path: str, expect: FileStat | None = None, offset: int = 0) -> "ProxyReader":
        if offset:
            raise self._refused("a read from an offset")
        full = "/".join(p for p in (self.path, path) if p)
        return ProxyReader(self.client.call("GET", f"{PROXY}/{quote(full)}", raw=True).raw)

    def get(self, path: str) -> bytes | None:
        reader = self.open_read(path)
        try:
            return reader.read_all()
        finally:
            reader.close()

    def version(self, path: str) -> str:
        return ""  # the proxy says nothing that changes with a file

    def _refused(self, what: str) -> PermanentPlaceError:
        return PermanentPlaceError(f"{self._url}: the MLflow artifact proxy is read as whole files; {what} "
                                   "is not offered")

    def read(self, path: str, start: int, length: int) -> bytes:
        raise self._refused("a ranged read")

    def head(self, path: str) -> tuple[int, str, str] | None:
        raise self._refused("a head")

    def pending_uploads(self, prefix: str = "") -> list[Upload]:
        raise self._refused("listing uploads")

    def put(self, path: str, data: bytes, *, create_only: bool = False, sha256_b64: str = "") -> bool:
        raise self._refused("writing")

    def delete(self, path: str) -> None:
        raise self._refused("deleting")

    def delete_many(self, paths: list[str]) -> None:
        raise self._refused("deleting")

    def abort(self, upload: Upload) -> None:
        raise self._refused("aborting an upload")

    def writer(self, path: str, size: int, part_size: int) -> Writer:
        raise self._refused("writing")


class ProxyReader:
    """One file's answer body, read into the caller's buffers."""

    def __init__(self, raw) -> None:  # type: ignore[no-untyped-def]
        self._raw = raw

    def readinto(self, view: memoryview) -> int:
        return fill(view, self._raw.readinto)

    def read_all(self) -> bytes:
        return self._raw.read()

    def close(self) -> None:
        self._raw.close()
