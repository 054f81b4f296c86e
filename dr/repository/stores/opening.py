"""Turn a repository URL from a plan or the command line into a Store.

One place decides which backend a URL means, so every command accepts the same spellings:
`s3://bucket/prefix`, `file:///abs/dir`, or a plain path (relative paths are resolved
against base_dir, normally the plan's directory, not the process's working directory).
Remote stores come over a RetryingPlace (dr/kits/places/retrying.py, dr's one retry
wrapper): a network store without retries is never what a caller wants, and a local disk has
nothing worth retrying.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlsplit

from dr.repository.stores.base import Store

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def open_store(url: str, region: str | None = None, endpoint_url: str | None = None,
               profile: str | None = None, base_dir: str = ".") -> Store:
    match = _SCHEME.match(url)
    scheme = match.group(1).lower() if match else ""
    if scheme == "s3":
        from dr.repository.stores.s3 import from_url  # boto3 is slow to import; only when needed

        return from_url(url, region=region, endpoint_url=endpoint_url, profile=profile, retrying=True)
    if scheme == "file":
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"file:// URL with a remote host is not supported: {url!r}")
        return _local(os.path.join(base_dir, unquote(parts.path)))
    if scheme:
        raise ValueError(f"unsupported repository URL scheme {scheme!r} in {url!r}")
    if not url:
        raise ValueError("empty repository path")
    return _local(os.path.join(base_dir, os.path.expanduser(url)))


def _local(root: str) -> Store:
    from dr.repository.stores.local import LocalStore  # an S3 run need not import the directory place

    return LocalStore(root)
