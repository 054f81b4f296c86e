"""A small OCI distribution API client, in the kit (dr.kits.oci): what copying images by digest
and reading and pushing Helm charts need, and no more. The images and helm exporters both use it.

Why our own client on `requests` and not `oras`: copying needs a registry-to-registry stream
(GET one blob, PUT it elsewhere, hashing on the way, never on disk), cross-repository mounts and
HEADs before every upload. oras-py pulls to files and pushes from files; it has neither mount
nor pass-through streaming, so a 256 MB layer would be written to disk and read back.

Errors carry their retry intent in their type: `TemporaryError` (5xx, 429, connection
failures) is retried with backoff, honouring Retry-After; every other `RegistryError` is
permanent. Messages name the registry and repository, never a credential.

Auth: the first request goes anonymous; a 401 names the scheme. `Bearer realm=...` gets a
token from the realm (with the host's credential as basic auth, if any), cached per scope;
`Basic` sends the credential. Uploads open their session first (POST), so the body of a
PUT/PATCH is never sent before the auth is known.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urljoin

import requests

from dr.kits.oci.challenges import TEMPORARY_STATUS, Challenge, TokenError, ask_token
from dr.kits.oci.credentials import Credential
from dr.kits.oci.errors import DigestMismatch, NotFound, RegistryError, TemporaryError, Unauthorized
from dr.kits.oci.streams import READ_SIZE, HashingReader, Piece
from dr.kits.tls import PinnedTLS
from dr.kits.retrying import policy, retry_after

MAX_BACKOFF = 30.0  # seconds: the longest wait between two attempts unless Retry-After asks more

INDEX_TYPES = ("application/vnd.oci.image.index.v1+json",
               "application/vnd.docker.distribution.manifest.list.v2+json")
MANIFEST_TYPES = ("application/vnd.oci.image.manifest.v1+json",
                  "application/vnd.docker.distribution.manifest.v2+json")
ACCEPT = ", ".join(INDEX_TYPES + MANIFEST_TYPES)
# Manifests, indexes and list pages are held whole; blobs never are (they stream). 4 MiB is the
# limit ORAS and Pulp apply to such metadata, and what the distribution spec asks registries to
# accept at least: a larger answer is refused, so a hostile or broken registry cannot make dr
# hold an unbounded body.
METADATA_LIMIT = 4 << 20


@dataclass(frozen=True)
class Manifest:
    body: bytes
    media_type: str
    digest: str

    @property
    def is_index(self) -> bool:
        return self.media_type in INDEX_TYPES


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class _Adapter(PinnedTLS, requests.adapters.HTTPAdapter):
    """Sends request bodies in 1 MiB blocks (urllib3's default is 16 KiB): a layer streamed
    through Python costs 64 times fewer read/hash/send rounds. TLS: the registry's own (tls_for)."""

    def init_poolmanager(self, *args, **kwargs):
        kwargs.setdefault("blocksize", READ_SIZE)
        super().init_poolmanager(*args, **kwargs)


class RegistryClient:
    """One registry endpoint (`scheme://host`), shared by every thread of a run."""

    def __init__(self, host: str, *, scheme: str = "https", credential: Credential | None = None,
                 verify_tls: bool | str = True, cert: tuple[str, str] | None = None,
                 timeout: float = 60.0, retries: int = 5,
                 backoff: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> None:
        self.host, self.base = host, f"{scheme}://{host}"
        self.credential = credential
        self.timeout, self.retries, self.backoff, self.sleep = timeout, retries, backoff, sleep
        self.session = requests.Session()
        if host.split(":")[0] in ("127.0.0.1", "localhost", "[::1]"):
            self.session.trust_env = False  # no proxy for loopback, whatever the environment says
        adapter = _Adapter(pool_connections=4, pool_maxsize=32)
        adapter.verify, adapter.cert = verify_tls, cert  # a CA bundle (or False), a client certificate
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self._tokens: dict[str, str] = {}
        self._basic = False
        self.down: str | None = None  # why the registry stopped answering, once retries ran out
        self.no_referrers_api = False  # learnt from the first referrers request that 404s plainly

    def __repr__(self) -> str:
        return f"RegistryClient({self.base})"

    # -- retries ----------------------------------------------------------------------------
    def retrying(self, call: Callable[[], object]):
        """Run `call`, retrying TemporaryErrors with dr's one policy (dr.kits.retrying: their
        Retry-After, else exponential backoff with full jitter from `backoff` seconds)."""
        if self.down:
            raise TemporaryError(self.down)

        try:
            for attempt in policy(self.retries + 1, self.backoff, MAX_BACKOFF, retry_on=TemporaryError,
                                  sleep=self.sleep):
                with attempt:
                    return call()
        except TemporaryError as exc:
            if "connection failed" in str(exc):
                self.down = f"{exc} (gave up after {self.retries + 1} attempts)"
            raise

    # -- requests and auth --------------------------------------------------------------------
    def _headers(self, scope: str) -> dict[str, str]:
        token = self._tokens.get(scope) or self._tokens.get("*")
        if token:
            return {"Authorization": f"Bearer {token}"}
        return {}

    def send(self, method: str, url: str, scope: str, *, ok=(200,), headers=None, replayable=True,
             **kwargs) -> requests.Response:
        """One request with auth; raises NotFound, Unauthorized, TemporaryError or RegistryError."""
        url = url if url.startswith("http") else urljoin(self.base, url)
        for _ in range(2):
            response = self._raw(method, url, {**self._headers(scope), **(headers or {})}, **kwargs)
            if response.status_code == 401 and not replayable:
                # a streamed body cannot be sent again: forget the token (it may have expired)
                # and let the caller's retry start the upload over, authenticating first
                response.close()
                self._tokens.pop(scope, None)
                raise TemporaryError(f"{method} {url.split('?')[0]}: HTTP 401 during an upload")
            if response.status_code != 401:
                break
            response.close()
            self._authenticate(response.headers.get("WWW-Authenticate", ""), scope)
        return self._check(response, method, url, ok)

    def _raw(self, method: str, url: str, headers: dict, **kwargs) -> requests.Response:
        auth = (self.credential.username, self.credential.password) if self._basic and self.credential else None
        try:
            return self.session.request(method, url, headers=headers, auth=auth, timeout=self.timeout,
                                        allow_redirects=True, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as exc:
            raise TemporaryError(f"{self.base}: connection failed ({exc.__class__.__name__})") from None

    def _check(self, response: requests.Response, method: str, url: str, ok) -> requests.Response:
        status = response.status_code
        if status in ok:
            return response
        what = f"{method} {url.split('?')[0]}: HTTP {status}"
        detail = _error_detail(response)
        response.close()
        if status in TEMPORARY_STATUS:
            raise TemporaryError(f"{what}{detail}", retry_after(response.headers))
        if status == 404:
            raise NotFound(f"{what}{detail}")
        if status in (401, 403):
            raise Unauthorized(f"{what}: the registry refused the credentials{detail}")
        raise RegistryError(f"{what}{detail}")

    def _authenticate(self, header: str, scope: str) -> None:
        challenge = Challenge.parse(header)
        if challenge.scheme == "basic":
            if not self.credential:
                raise Unauthorized(f"{self.base}: needs credentials (basic auth) and none were found")
            if self._basic:
                raise Unauthorized(f"{self.base}: the registry refused the credentials")
            self._basic = True
            return
        if challenge.scheme != "bearer":
            raise Unauthorized(f"{self.base}: unsupported auth challenge {challenge.scheme!r}")
        scopes = [] if scope == "*" else scope.split(" ")
        try:
            self._tokens[scope] = ask_token(self.session, challenge, scopes, self.credential, self.timeout)
        except TokenError as exc:
            if exc.temporary:
                raise TemporaryError(str(exc), exc.retry_after) from None
            if exc.status is None:
                raise RegistryError(f"{self.base}: {exc}") from None
            raise Unauthorized(f"{self.base}: the token server {challenge.realm} refused the credentials "
                               f"(HTTP {exc.status})") from None

    # -- the API ------------------------------------------------------------------------------
    def check(self) -> None:
        """GET /v2/: reachable, and the credentials (if any) accepted."""
        self.retrying(lambda: self.send("GET", "/v2/", "*").close())

    def head_manifest(self, path: str, reference: str) -> tuple[str, str] | None:
        """(digest, media type) of a tag or digest, or None when the registry has no such manifest."""
        def head():
            try:
                response = self.send("HEAD", f"/v2/{path}/manifests/{reference}", _pull(path),
                                     headers={"Accept": ACCEPT})
            except NotFound:
                return None
            return response.headers.get("Docker-Content-Digest", ""), response.headers.get("Content-Type", "")
        return self.retrying(head)

    def get_manifest(self, path: str, reference: str) -> Manifest:
        """The manifest, its digest checked: against `reference` when it is one, else against the
        registry's Docker-Content-Digest header."""
        def get():
            response = self.send("GET", f"/v2/{path}/manifests/{reference}", _pull(path),
                                 headers={"Accept": ACCEPT}, stream=True)
            return bounded_body(response, f"{self.host}/{path}:{reference}: the manifest"), response.headers
        body, headers = self.retrying(get)
        digest = sha256(body)
        claimed = reference if reference.startswith("sha256:") else headers.get("Docker-Content-Digest", digest)
        if digest != claimed:
            raise DigestMismatch(f"{self.host}/{path}@{claimed}: the registry served a manifest whose "
                                 f"digest is {digest}")
        media_type = headers.get("Content-Type", "").split(";")[0] or _media_type(body)
        return Manifest(body, media_type, digest)

    def put_manifest(self, path: str, reference: str, manifest: Manifest) -> None:
        def put():
            self.send("PUT", f"/v2/{path}/manifests/{reference}", _push(path), ok=(201, 200),
                      data=manifest.body, headers={"Content-Type": manifest.media_type}).close()
        self.retrying(put)

    def has_blob(self, path: str, digest: str) -> int | None:
        """The blob's size when the repository has it, else None."""
        def head():
            try:
                response = self.send("HEAD", f"/v2/{path}/blobs/{digest}", _pull(path))
            except NotFound:
                return None
            return int(response.headers.get("Content-Length", "0"))
        return self.retrying(head)

    def open_blob(self, path: str, digest: str) -> requests.Response:
        """A streaming response over the blob's bytes (not retried: the caller retries the copy)."""
        return self.send("GET", f"/v2/{path}/blobs/{digest}", _pull(path), stream=True)

    def mount_blob(self, path: str, digest: str, from_path: str) -> bool:
        """Cross-repository mount; True when the registry mounted it (else it opened an upload,
        which we let expire: nothing was written)."""
        def post():
            response = self.send("POST", f"/v2/{path}/blobs/uploads/?mount={digest}&from={from_path}",
                                 f"{_push(path)} {_pull(from_path)}", ok=(201, 202))
            response.close()
            return response.status_code == 201
        return self.retrying(post)

    def start_upload(self, path: str) -> str:
        def post():
            response = self.send("POST", f"/v2/{path}/blobs/uploads/", _push(path), ok=(202,))
            response.close()
            return urljoin(self.base, response.headers["Location"])
        return self.retrying(post)

    def upload_blob(self, path: str, digest: str, body: HashingReader, size: int, chunk: int) -> None:
        """Stream `size` bytes from `body` into the repository: one PUT when small, PATCHes of
        `chunk` bytes then a closing PUT when large. Not retried here (the body is a stream)."""
        location = self.start_upload(path)
        scope = _push(path)
        if size > chunk:
            offset = 0
            while offset < size:
                n = min(chunk, size - offset)
                response = self.send("PATCH", location, scope, ok=(202,), replayable=False,
                                     data=Piece(body, n),
                                     headers={"Content-Type": "application/octet-stream",
                                              "Content-Range": f"{offset}-{offset + n - 1}"})
                response.close()
                location = urljoin(self.base, response.headers["Location"])
                offset += n
            data: object = b""
        else:
            data = Piece(body, size)
        sep = "&" if "?" in location else "?"
        self.send("PUT", f"{location}{sep}digest={digest}", scope, ok=(201,), replayable=False, data=data,
                  headers={"Content-Type": "application/octet-stream"}).close()
        body.finish()

    def tags(self, path: str) -> list[str]:
        return self._paged(f"/v2/{path}/tags/list?n=1000", _pull(path), "tags")

    def catalog(self) -> list[str]:
        return self._paged("/v2/_catalog?n=1000", "registry:catalog:*", "repositories")

    def _paged(self, url: str, scope: str, key: str) -> list[str]:
        """Every page of a list, following the Link headers (the API's pagination)."""
        found: list[str] = []
        while url:
            def get(url=url):
                response = self.send("GET", url, scope, stream=True)
                body = json.loads(bounded_body(response, f"{self.host}: the list {url.split('?')[0]}"))
                return body.get(key) or [], response.links.get("next", {}).get("url", "")
            page, url = self.retrying(get)
            found += page
        return found

    def referrers(self, path: str, digest: str) -> list[dict] | None:
        """The referrers API's descriptors; None when the registry has no referrers API.

        A registry with the API answers 200 (an empty index when nothing refers to the digest);
        a plain 404, without an OCI error code, means it has none. That is remembered for the
        run: an unchanged image then costs no request here (distribution 2.8 is such a one)."""
        if self.no_referrers_api:
            return None

        def get():
            try:
                response = self.send("GET", f"/v2/{path}/referrers/{digest}", _pull(path),
                                     headers={"Accept": INDEX_TYPES[0]}, stream=True)
            except NotFound as exc:
                self.no_referrers_api = "_UNKNOWN" not in str(exc)  # NAME_/MANIFEST_UNKNOWN: the API is there
                return None
            if "json" not in response.headers.get("Content-Type", ""):
                response.close()
                return None
            listed = json.loads(bounded_body(response, f"{self.host}/{path}: the referrers of {digest}"))
            return listed.get("manifests") or []
        return self.retrying(get)


def bounded_body(response: requests.Response, what: str, limit: int = METADATA_LIMIT) -> bytes:
    """The whole body of a streamed response, refused (RegistryError) once it passes `limit`."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        response.close()
        raise RegistryError(f"{what} is {int(declared):,} bytes, over the {limit >> 20} MiB dr accepts "
                            "for manifests and lists")
    parts, size = [], 0
    for chunk in response.iter_content(64 << 10):
        size += len(chunk)
        if size > limit:
            response.close()
            raise RegistryError(f"{what} is over the {limit >> 20} MiB dr accepts for manifests and lists")
        parts.append(chunk)
    return b"".join(parts)


def _pull(path: str) -> str:
    return f"repository:{path}:pull"


def _push(path: str) -> str:
    return f"repository:{path}:pull,push"


def _media_type(body: bytes) -> str:
    try:
        return json.loads(body).get("mediaType") or MANIFEST_TYPES[0]
    except ValueError:
        return MANIFEST_TYPES[0]


def _error_detail(response: requests.Response) -> str:
    """The OCI error codes of an error answer, read within the same bound as any other body."""
    try:
        errors = json.loads(bounded_body(response, "an error answer")).get("errors") or []
    except (ValueError, AttributeError, RegistryError):
        return ""
    codes = [str(e.get("code", "")) for e in errors if isinstance(e, dict)]
    return f" ({', '.join(c for c in codes if c)})" if any(codes) else ""
