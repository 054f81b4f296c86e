"""Real OCI registries for tests: CNCF distribution 2.8 (Debian `docker-registry`), a fault and
bearer-token proxy in front of one, and images built without docker.

- `DistributionRegistry`: `docker-registry serve` on a free loopback port, optionally with
  htpasswd basic auth (bcrypt through the C library's crypt(3)), in its own process group.
- `RegistryProxy`: an in-process HTTP proxy to a registry that can, on demand, answer 500 or
  429 (with Retry-After) for the next N requests, corrupt the bytes of chosen blobs, or demand
  a bearer token from its own token endpoint (the WWW-Authenticate realm flow), and counts the
  requests it sees by method.
- `push_image`, `push_index`, `push_signature`: images made of JSON and bytes, pushed with
  dr's own client; layers are tar files (tarfile) or, for the large one, a file on disk.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import secrets
import shutil
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

from dr.kits.oci.client import Manifest, RegistryClient, sha256
from dr.kits.oci.streams import HashingReader
from tests.servers import ServerProcess

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"


class DistributionRegistry(ServerProcess):
    """`docker-registry serve` with its own storage folder; `users` turns on htpasswd auth."""

    def __init__(self, users: dict[str, str] | None = None, name: str = "registry") -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"dr-{name}-"))
        self.users = users or {}
        super().__init__(self._argv, lambda port: f"http://127.0.0.1:{port}/v2/", name=name)

    def _argv(self, port: int) -> list[str]:
        self.root.mkdir(parents=True, exist_ok=True)
        config = {"version": 0.1, "log": {"level": "warn", "accesslog": {"disabled": True}},
                  "storage": {"filesystem": {"rootdirectory": str(self.root / "data")},
                              "delete": {"enabled": True}},
                  "http": {"addr": f"127.0.0.1:{port}", "secret": secrets.token_hex(16)}}
        if self.users:
            htpasswd = self.root / "htpasswd"
            htpasswd.write_text("".join(f"{u}:{crypt.crypt(p, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))}\n"
                                        for u, p in self.users.items()))
            config["auth"] = {"htpasswd": {"realm": "dr-test", "path": str(htpasswd)}}
        path = self.root / "config.yml"
        path.write_text(json.dumps(config))  # JSON is YAML
        return ["docker-registry", "serve", str(path)]

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self.timeout
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with opener.open(f"http://127.0.0.1:{self.port}/v2/", timeout=1):
                    return True
            except urllib.error.HTTPError as exc:
                if exc.code == 401:  # auth on: it answers
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self) -> None:
        """Stop the server and remove its storage (the images it held can be large)."""
        super().stop()
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def client(self, user: str | None = None) -> RegistryClient:
        from dr.kits.oci.credentials import Credential
        credential = Credential(user, self.users[user]) if user else None
        return RegistryClient(self.host, scheme="http", credential=credential, retries=1, backoff=0.01)


# -- the proxy ------------------------------------------------------------------------------------------
class RegistryProxy:
    """An HTTP proxy in front of `upstream` (host:port) with faults you switch on and off."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.fail_next = 0
        self.fail_status = 500
        self.retry_after: str | None = None
        self.corrupt: set[str] = set()
        self.truncate = 0  # blob downloads to break half-way (the connection closes)
        self.bearer: tuple[str, str] | None = None  # (user, password) the token endpoint accepts
        self.tokens: set[str] = set()
        self.seen: Counter = Counter()
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def reset(self) -> None:
        self.fail_next, self.fail_status, self.retry_after = 0, 500, None
        self.corrupt, self.bearer, self.truncate = set(), None, 0
        self.seen.clear()

    def _take(self, counter: str) -> bool:
        """Use up one of the faults counted by the attribute `counter`; False when none is left."""
        with self._lock:
            if getattr(self, counter) > 0:
                setattr(self, counter, getattr(self, counter) - 1)
                return True
            return False

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                proxy.seen[self.command] += 1
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.startswith("/token"):
                    return self._token()
                if proxy._take("fail_next"):
                    headers = {"Retry-After": proxy.retry_after} if proxy.retry_after else {}
                    return self._answer(proxy.fail_status, b'{"errors":[{"code":"UNAVAILABLE"}]}', headers)
                if proxy.bearer and self.headers.get("Authorization", "")[7:] not in proxy.tokens:
                    realm = f"http://{proxy.host}/token"
                    return self._answer(401, b'{"errors":[{"code":"UNAUTHORIZED"}]}', {
                        "WWW-Authenticate": f'Bearer realm="{realm}",service="dr-test"'})
                self._forward(body)

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = _any

            def _token(self):
                user, password = proxy.bearer or ("", "")
                given = base64.b64decode(self.headers.get("Authorization", "Basic ")[6:] or b"").decode()
                if given != f"{user}:{password}":
                    return self._answer(401, b'{"details":"bad credentials"}', {})
                token = secrets.token_hex(8)
                proxy.tokens.add(token)
                self._answer(200, json.dumps({"token": token}).encode(), {"Content-Type": "application/json"})

            def _forward(self, body: bytes):
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization")}
                answer = requests.request(self.command, f"http://{proxy.upstream}{self.path}", data=body or None,
                                          headers=headers, allow_redirects=False, stream=True)
                data = answer.raw.read(decode_content=False) if self.command != "HEAD" else b""
                digest = self.path.rsplit("/", 1)[-1]
                if "/blobs/" in self.path and digest in proxy.corrupt and data:
                    data = bytes([data[0] ^ 0xFF]) + data[1:]
                out = {k: v.replace(proxy.upstream, proxy.host) for k, v in answer.headers.items()
                       if k.lower() not in ("transfer-encoding", "connection", "content-length")}
                length = answer.headers.get("Content-Length", str(len(data))) if self.command == "HEAD" \
                    else str(len(data))
                if "/blobs/sha256:" in self.path and self.command == "GET" and data and proxy._take("truncate"):
                    self.close_connection = True  # promise every byte, send half, hang up
                    return self._answer(answer.status_code, data[:len(data) // 2], {**out, "Content-Length": length})
                self._answer(answer.status_code, data, {**out, "Content-Length": length})

            def _answer(self, status: int, data: bytes, headers: dict):
                self.send_response(status)
                headers.setdefault("Content-Length", str(len(data)))
                if self.close_connection:
                    headers["Connection"] = "close"
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

        return Handler


# -- images -----------------------------------------------------------------------------------------------
def tar_layer(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def push_blob(registry: RegistryClient, path: str, data: bytes) -> dict:
    digest = sha256(data)
    if registry.has_blob(path, digest) is None:
        registry.upload_blob(path, digest, HashingReader(io.BytesIO(data), digest, len(data), path), len(data),
                             32 << 20)
    return {"mediaType": OCI_LAYER, "digest": digest, "size": len(data)}


def push_file_blob(registry: RegistryClient, path: str, file: str, chunk: int = 16 << 20) -> dict:
    with open(file, "rb") as handle:
        digest = "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()
    size = os.path.getsize(file)
    if registry.has_blob(path, digest) is None:
        with open(file, "rb") as handle:
            registry.upload_blob(path, digest, HashingReader(handle, digest, size, file), size, chunk)
    return {"mediaType": OCI_LAYER, "digest": digest, "size": size}


def push_manifest(registry: RegistryClient, path: str, data: dict, media_type: str, *tags: str) -> str:
    body = json.dumps(data, sort_keys=True).encode()
    manifest = Manifest(body, media_type, sha256(body))
    for ref in (manifest.digest, *tags):
        registry.put_manifest(path, ref, manifest)
    return manifest.digest


def push_image(registry: RegistryClient, path: str, tag: str | None, layers: list[dict | bytes],
               platform: tuple[str, str] = ("linux", "amd64"), note: str = "") -> str:
    """An OCI image of `layers` (bytes to push, or descriptors already pushed); its digest."""
    descs = [layer if isinstance(layer, dict) else push_blob(registry, path, layer) for layer in layers]
    config = json.dumps({"architecture": platform[1], "os": platform[0], "config": {"Labels": {"note": note}},
                         "rootfs": {"type": "layers", "diff_ids": [d["digest"] for d in descs]}}).encode()
    config_desc = {**push_blob(registry, path, config), "mediaType": OCI_CONFIG}
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config_desc, "layers": descs}
    return push_manifest(registry, path, manifest, OCI_MANIFEST, *([tag] if tag else []))


def push_index(registry: RegistryClient, path: str, tag: str, platforms: dict[tuple[str, str], list[bytes]]) -> str:
    manifests = []
    for (os_, arch), layers in platforms.items():
        digest = push_image(registry, path, None, layers, (os_, arch))
        size = len(registry.get_manifest(path, digest).body)
        manifests.append({"mediaType": OCI_MANIFEST, "digest": digest, "size": size,
                          "platform": {"os": os_, "architecture": arch}})
    return push_manifest(registry, path, {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": manifests},
                         OCI_INDEX, tag)


def push_signature(registry: RegistryClient, path: str, digest: str, suffix: str = "sig") -> str:
    """A cosign-style signature: tag `sha256-<hex>.sig`, one simple-signing payload layer."""
    payload = json.dumps({"critical": {"image": {"docker-manifest-digest": digest},
                                       "type": "cosign container image signature"}}).encode()
    layer = {**push_blob(registry, path, payload),
             "mediaType": "application/vnd.dev.cosign.simplesigning.v1+json",
             "annotations": {"dev.cosignproject.cosign/signature": base64.b64encode(b"sig").decode()}}
    config = push_blob(registry, path, b"{}")
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "config": {**config, "mediaType": OCI_CONFIG}, "layers": [layer]}
    return push_manifest(registry, path, manifest, OCI_MANIFEST, digest.replace(":", "-") + f".{suffix}")
