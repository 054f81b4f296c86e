"""A repository in a local directory: the embedded default, and any mounted filesystem.

Atomic, write-once put: the data is written and fsynced under tmp/, then hard-linked to its
final name. link(2) fails if the name exists, so a put never replaces an object, and a crash
leaves at most an orphan under tmp/ (removed by prune), never a partial object.
"""

from __future__ import annotations

import errno
import os
import secrets
from typing import BinaryIO, Iterator

from dr.repository.stores.base import ObjectExists, ObjectMissing, Store, StoreError, check_key

TMP_DIR = "tmp"


class LocalStore(Store):
    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self.description = f"file://{self.root}"
        # Nothing is created until the first put: a read-only command (dr snapshots, verify,
        # status) pointed at a missing directory says there is no repository and leaves no trace.

    def _path(self, key: str) -> str:
        return os.path.join(self.root, *check_key(key).split("/"))

    def put(self, key: str, data: bytes) -> None:
        final = self._path(key)
        if key.split("/", 1)[0] == TMP_DIR:
            raise ValueError("tmp/ is reserved for the store's own staging")
        os.makedirs(os.path.dirname(final), exist_ok=True)
        os.makedirs(os.path.join(self.root, TMP_DIR), exist_ok=True)
        staging = os.path.join(self.root, TMP_DIR, secrets.token_hex(16))
        try:
            with open(staging, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(staging, final)
            except FileExistsError:
                raise ObjectExists(key) from None
            _fsync_dir(os.path.dirname(final))
        except OSError as exc:
            raise StoreError(f"{self.description}: cannot write {key}: {exc.strerror}") from exc
        finally:
            _unlink_quietly(staging)

    def get(self, key: str) -> bytes:
        with self.open(key) as handle:
            return handle.read()

    def open(self, key: str) -> BinaryIO:
        try:
            return open(self._path(key), "rb")
        except FileNotFoundError:
            raise ObjectMissing(key) from None
        except IsADirectoryError:
            raise ObjectMissing(key) from None

    def exists(self, key: str) -> bool:
        return os.path.isfile(self._path(key))

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel_dir = os.path.relpath(dirpath, self.root)
            if rel_dir == TMP_DIR:
                dirnames[:] = []
                continue
            for name in filenames:
                key = name if rel_dir == "." else f"{rel_dir.replace(os.sep, '/')}/{name}"
                if key.startswith(prefix):
                    try:
                        yield key, os.path.getsize(os.path.join(dirpath, name))
                    except FileNotFoundError:
                        continue  # deleted while listing

    def delete(self, key: str) -> None:
        _unlink_quietly(self._path(key))

    def clear_staging(self) -> int:
        """Files a crashed writer left under tmp/ (never visible as objects). Only called
        under the repository's exclusive lock, so no live writer is staging."""
        staging = os.path.join(self.root, TMP_DIR)
        names = os.listdir(staging) if os.path.isdir(staging) else []
        for name in names:
            _unlink_quietly(os.path.join(staging, name))
        return len(names)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
