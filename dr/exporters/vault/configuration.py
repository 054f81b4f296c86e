"""A Vault's configuration as readable, diffable data: no secret value ever enters it.

Read through the API with the backup's token: secrets engine mounts, auth methods (with their
AppRole and Kubernetes roles), ACL policies, PKI issuers (their public certificates) and roles,
audit devices, namespaces where the server has them, and the KV paths, never a value.

How much of the KV metadata is read is the `kv_metadata` option, because its cost is the
number of secrets. `paths` (the default) lists each folder once (one LIST a folder), which is
what the restore's read-back check needs. `versions` also records every secret's version
numbers and times (custom metadata: its keys only), which costs the server a storage read a
secret: OpenBao lists them with each folder (`LIST <mount>/detailed-metadata/<folder>`),
HashiCorp Vault answers one GET a secret (a few at once over the client's keep-alive
connections). Each KV v2 mount's record says which it holds (`metadata`), so a restore reads
the target the same way. The document is JSON with sorted keys, one fact per line (one secret
a line), so two backups diff line by line.

A part the token may not read is recorded as `{"unreadable": reason}` in place, never
silently dropped; the exporter reports it as a warning finding.

The restore compares a target with the same document (`summary()`), so it can tell a Vault
that already holds the snapshot from one that differs.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import hvac
import hvac.exceptions

# Mount fields that are configuration; accessors and uuids are per-cluster identifiers.
_MOUNT_FIELDS = ("type", "description", "options", "config", "local", "seal_wrap", "external_entropy_access")
_BUILTIN_MOUNTS = {"cubbyhole/", "identity/", "sys/"}
_BUILTIN_AUTH = {"token/"}
_BUILTIN_POLICIES = {"default", "root"}
_KV_VERSION_FIELDS = ("created_time", "deletion_time", "destroyed")
_IGNORED = (hvac.exceptions.InvalidPath, hvac.exceptions.UnsupportedOperation)
# Concurrent reads (a folder's listings, policies, with `kv_metadata: versions` every secret's
# metadata): within requests' default pool of 10 keep-alive connections, and few enough not to
# crowd a small Vault. One at a time, a record's cost is its requests times the round trip.
METADATA_WORKERS = 8
PATHS, VERSIONS = "paths", "versions"


class Unreadable(Exception):
    """One part of the configuration the token may not read."""


class ConfigReader:
    """Reads one Vault's configuration document; `problems` lists the parts it could not read."""

    def __init__(self, client: hvac.Client, kv_mounts: list[str] | None = None, kv_metadata: str = PATHS):
        self.client = client
        self.kv_mounts = [m.rstrip("/") + "/" for m in kv_mounts] if kv_mounts is not None else None
        self.kv_metadata = kv_metadata
        self.problems: list[str] = []

    # -- the document ----------------------------------------------------------------------------
    def read(self) -> dict[str, Any]:
        with ThreadPoolExecutor(METADATA_WORKERS, thread_name_prefix="vault-read") as self._pool:
            return self._document()

    def _document(self) -> dict[str, Any]:
        mounts = self._part("mounts", lambda: self._data("GET", "sys/mounts"))
        auth = self._part("auth", lambda: self._data("GET", "sys/auth"))
        mounts = mounts if isinstance(mounts, dict) and "unreadable" not in mounts else {}
        auth = auth if isinstance(auth, dict) and "unreadable" not in auth else {}
        return {
            "mounts": {path: _fields(m) for path, m in sorted(mounts.items())},
            "auth": {path: {**_fields(m), **self._auth_roles(path, m.get("type", ""))}
                     for path, m in sorted(auth.items())},
            "policies": self._part("policies", self._policies),
            "pki": {path: self._part(f"pki {path}", lambda path=path: self._pki(path))
                    for path, m in sorted(mounts.items()) if m.get("type") == "pki"},
            "audit": self._part("audit", lambda: {p: _fields(d) for p, d in sorted(
                self._data("GET", "sys/audit").items()) if isinstance(d, dict)}),
            "namespaces": self._part("namespaces", self._namespaces),
            "kv": {path: self._part(f"kv {path}", lambda path=path, m=m: self._kv(path, m))
                   for path, m in sorted(mounts.items()) if self._is_kv(path, m)},
        }

    def _is_kv(self, path: str, mount: dict) -> bool:
        return mount.get("type") in ("kv", "generic") and (self.kv_mounts is None or path in self.kv_mounts)

    def _part(self, name: str, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except Unreadable as exc:
            self.problems.append(f"{name}: {exc}")
            return {"unreadable": str(exc)}

    # -- requests --------------------------------------------------------------------------------
    def _request(self, method: str, path: str) -> Any:
        try:
            response = self.client.adapter.request(method, f"/v1/{path}")
        except hvac.exceptions.Forbidden:
            raise Unreadable(f"permission denied on {path}") from None
        except _IGNORED:
            return None
        return response if isinstance(response, dict) else None

    def _data(self, method: str, path: str) -> dict:
        response = self._request(method, path) or {}
        data = response.get("data", response)
        return data if isinstance(data, dict) else {}

    def _keys(self, path: str) -> list[str]:
        return sorted(self._data("LIST", path).get("keys") or [])

    # -- parts -----------------------------------------------------------------------------------
    def _map(self, read: Callable[[str], Any], items: list[str]) -> list[Any]:
        """read(item) for every item, in order; a few at once (an error is the first one's)."""
        if len(items) < 2:
            return [read(item) for item in items]
        return list(self._pool.map(read, items))

    def _policies(self) -> dict[str, str]:
        names = self._keys("sys/policies/acl")
        return dict(zip(names, self._map(lambda name: self._data("GET", f"sys/policies/acl/{name}").get(
            "policy", ""), names)))

    def _auth_roles(self, path: str, kind: str) -> dict[str, Any]:
        if kind not in ("approle", "kubernetes"):
            return {}
        base = f"auth/{path.rstrip('/')}"
        roles = {"approle": f"{base}/role", "kubernetes": f"{base}/role"}[kind]
        found: dict[str, Any] = {"roles": self._part(f"auth {path} roles", lambda: {
            name: self._data("GET", f"{roles}/{name}") for name in self._keys(roles)})}
        if kind == "kubernetes":  # the API host and CA; Vault never returns the reviewer JWT
            found["kubernetes_config"] = self._part(f"auth {path} config", lambda: self._data("GET", f"{base}/config"))
        return found

    def _pki(self, path: str) -> dict[str, Any]:
        base = path.rstrip("/")
        issuers = {}
        for ref in self._keys(f"{base}/issuers"):
            issuer = self._data("GET", f"{base}/issuer/{ref}")
            issuers[ref] = {k: issuer.get(k) for k in ("issuer_name", "key_id", "certificate", "usage",
                                                       "leaf_not_after_behavior") if k in issuer}
        roles = {name: self._data("GET", f"{base}/roles/{name}") for name in self._keys(f"{base}/roles")}
        return {"issuers": issuers, "roles": roles}

    def _namespaces(self) -> list[str]:
        return self._keys("sys/namespaces")  # a server without namespaces answers 404: none

    def _kv(self, path: str, mount: dict) -> dict[str, Any]:
        version = str((mount.get("options") or {}).get("version", "1"))
        base = path.rstrip("/")
        if version != "2":
            return {"version": 1, "secrets": {key: {} for key in self._walk(base)}}
        if self.kv_metadata != VERSIONS:
            return {"version": 2, "metadata": PATHS, "secrets": {key: {} for key in self._walk(f"{base}/metadata")}}
        detailed = self._detailed(base)
        if detailed is None:  # HashiCorp Vault: one GET a secret
            detailed = self._kv2_entries(base, self._walk(f"{base}/metadata"))
        return {"version": 2, "metadata": VERSIONS, "secrets": detailed}

    def _detailed(self, base: str) -> dict[str, dict[str, Any]] | None:
        """Every secret's metadata from OpenBao's `LIST <mount>/detailed-metadata/<folder>` (one
        request a folder); None where the server has no such endpoint (HashiCorp Vault) or the
        token may not use it, and where the mount is empty (either way nothing is lost)."""
        try:
            top = self.client.adapter.request("LIST", f"/v1/{base}/detailed-metadata/")
        except (*_IGNORED, hvac.exceptions.Forbidden, hvac.exceptions.InvalidRequest):
            return None
        data = top.get("data") if isinstance(top, dict) else None
        if not isinstance(data, dict) or not isinstance(data.get("key_info"), dict):
            return None
        return self._walk_detailed(base, "", data)

    def _walk_detailed(self, base: str, prefix: str, data: dict) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        info = data.get("key_info") or {}
        for key in sorted(data.get("keys") or []):
            if key.endswith("/"):
                found.update(self._walk_detailed(base, prefix + key,
                                                 self._data("LIST", f"{base}/detailed-metadata/{prefix}{key}")))
            else:
                found[prefix + key] = _kv2_entry(info.get(key) or {})
        return found

    def _walk(self, base: str) -> list[str]:
        """Every key under base, sorted; the folders of one depth listed a few at once."""
        found: list[str] = []
        folders = [""]
        while folders:
            listings = self._map(lambda prefix: self._keys(f"{base}/{prefix}" if prefix else base), folders)
            deeper = []
            for prefix, keys in zip(folders, listings):
                for key in keys:
                    (deeper if key.endswith("/") else found).append(prefix + key)
            folders = deeper
        return sorted(found)

    def _kv2_entries(self, base: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Every key's metadata; one GET each, so a few run at once (a refusal fails the mount)."""
        return dict(zip(keys, self._map(lambda key: self._kv2_entry(base, key), keys)))

    def _kv2_entry(self, base: str, key: str) -> dict[str, Any]:
        return _kv2_entry(self._data("GET", f"{base}/metadata/{key}"))


def _kv2_entry(meta: dict) -> dict[str, Any]:
    """What the record keeps of one secret's metadata: versions and times, custom metadata keys only."""
    return {
        "current_version": meta.get("current_version"),
        "oldest_version": meta.get("oldest_version"),
        "max_versions": meta.get("max_versions"),
        "created_time": meta.get("created_time"),
        "custom_metadata_keys": sorted((meta.get("custom_metadata") or {}).keys()),
        "versions": {v: {f: d.get(f) for f in _KV_VERSION_FIELDS}
                     for v, d in sorted((meta.get("versions") or {}).items(), key=lambda i: int(i[0]))},
    }


def _fields(mount: dict) -> dict[str, Any]:
    return {k: mount[k] for k in _MOUNT_FIELDS if k in mount}


def render(document: dict[str, Any]) -> bytes:
    """The stored form: sorted keys, indented, so a diff shows one changed fact per line; each KV
    secret is one line. That line comes from json's C encoder: the indenting encoder is pure
    Python, and took seconds for 10,000 secrets' versions (measured, docs/benchmarks.md)."""
    blocks: dict[str, dict] = {}
    kv = {}
    for mount, part in (document.get("kv") or {}).items():
        if isinstance(part, dict) and isinstance(part.get("secrets"), dict) and part["secrets"]:
            marker = f"\0kv-secrets:{mount}"  # a NUL: no mount path holds one
            blocks[json.dumps(marker)] = part["secrets"]
            part = {**part, "secrets": marker}
        kv[mount] = part
    text = json.dumps({**document, "kv": kv} if "kv" in document else document, sort_keys=True, indent=1)
    for quoted, secrets in blocks.items():
        text = text.replace(quoted, _one_a_line(secrets, depth=3), 1)
    return text.encode() + b"\n"


# one encoder for every line: json.dumps with arguments builds a new one a call, which measured
# most of printing 20,000 paths; a paths record's entries are all {}
_ENTRY = json.JSONEncoder(sort_keys=True).encode


def _one_a_line(secrets: dict[str, Any], depth: int) -> str:
    pad = " " * (depth + 1)
    lines = ",\n".join(f"{pad}{json.dumps(key)}: {_ENTRY(entry) if entry else '{}'}"
                       for key, entry in sorted(secrets.items()))
    return "{\n" + lines + "\n" + " " * depth + "}"


def recorded_kv_metadata(document: dict[str, Any] | None) -> str:
    """`versions` when the record holds KV versions (a record from before the option: the entries
    say so), else `paths`: a restore reads its target the same way, so the two compare."""
    for kv in ((document or {}).get("kv") or {}).values():
        if not isinstance(kv, dict):
            continue
        if kv.get("metadata") == VERSIONS or any("current_version" in (entry or {})
                                                 for entry in (kv.get("secrets") or {}).values()):
            return VERSIONS
    return PATHS


def kv_paths(document: dict[str, Any]) -> dict[str, int | None]:
    """'<mount><path>' -> its current version (None for KV v1 and when only paths were recorded)
    for every recorded secret."""
    paths = {}
    for mount, kv in (document.get("kv") or {}).items():
        for key, entry in ((kv or {}).get("secrets") or {}).items():
            paths[mount + key] = entry.get("current_version")
    return paths


def summary(document: dict[str, Any]) -> dict[str, Any]:
    """What a restore compares: the configuration without KV metadata, and the KV paths with versions.

    Times are left out of the KV part: a Vault that holds the snapshot's data holds its times too,
    but comparing versions suffices and keeps the comparison readable.
    """
    return {"configuration": {k: v for k, v in document.items() if k != "kv"}, "kv": kv_paths(document)}


def empty_problems(document: dict[str, Any]) -> list[str]:
    """What makes a Vault not fresh: mounts, auth methods or policies beyond a new server's own."""
    found = [f"mount {m}" for m in sorted(set(document.get("mounts") or {}) - _BUILTIN_MOUNTS)]
    found += [f"auth method {a}" for a in sorted(set(document.get("auth") or {}) - _BUILTIN_AUTH)]
    policies = document.get("policies") or {}
    found += [f"policy {p}" for p in sorted(set(policies) - _BUILTIN_POLICIES) if p != "unreadable"]
    if "unreadable" in policies:
        found.append("policies unreadable with this token")
    return found
