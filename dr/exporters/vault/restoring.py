"""Restoring a raft snapshot into a Vault the operator names (`dr restore --to https://new-vault`).

The order, and why:
  1. The target must be initialised and unsealed (a fresh raft cluster), and accept a token:
     `--target-token-file` (or VAULT_TOKEN) for a new cluster; for a cluster that already holds
     this snapshot's data, the plan's own credential (the snapshot carries its token store).
  2. The target's configuration is read and compared with the recorded one. The same cluster
     (cluster id) with the same configuration and KV versions is `unchanged`; with a record that
     holds no KV versions (kv_metadata: paths), the same cluster whose storage is still the
     snapshot's, entry for entry (storage.py), is `unchanged` too. A target holding
     anything beyond a new server's own mounts, auth methods and policies is a `conflict`:
     a raft restore replaces everything, so only --overwrite does it.
  3. The stored snapshot is read through the verifying reader into a private temporary file
     and checked again (gzip, tar, its SHA256SUMS). Only a snapshot that passed every check
     is sent: a damaged one never reaches the target.
  4. POST sys/storage/raft/snapshot-force. The target now holds the source's keyring, so it
     seals; `--unseal-keys-file` (the custodians' shares, one a line) unseals it here, an
     auto-unseal target unseals itself if its key is reachable. Otherwise the outcome says so,
     and running the same restore again after unsealing checks it.
  5. With the plan's credential, every KV path of the record is read back (version and data),
     and the configuration is compared with the record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Iterator

import hvac
import hvac.adapters
import hvac.exceptions

from dr.contract import ContentReader, EncryptionError, IntegrityError, Outcome, OutcomeStatus, RestoreRequest
from dr.exporters.vault.configuration import (PATHS, ConfigReader, empty_problems, kv_paths, recorded_kv_metadata,
                                             summary)
from dr.exporters.vault.connecting import (VaultAuthFailed, VaultState, VaultUnavailable, log_in, new_client,
                                           read_state, try_token)
from dr.exporters.vault.kinds import CONFIG, SNAPSHOT, TOKEN_KEY, UNSEAL_KEY
from dr.exporters.vault.options import ShamirUnseal, VaultOptions
from dr.exporters.vault.snapshots import CheckedStream, SnapshotDamaged
from dr.exporters.vault.storage import StorageDigest, StorageUnreadable, storage_digest
from dr.model.artifacts import Artifact
from dr.model.redaction import redact

__all__ = ["CONFIG", "SNAPSHOT", "TOKEN_KEY", "UNSEAL_KEY", "Restore"]



@dataclass
class Target:
    client: hvac.Client
    state: VaultState
    document: dict[str, Any]


class Restore:
    """One restore of one source's snapshot and configuration record into `request.to`."""

    def __init__(self, options: VaultOptions, base_dir: str, reader: ContentReader, request: RestoreRequest):
        self.options, self.base_dir, self.reader, self.request = options, base_dir, reader, request
        self.to = redact(request.to or "")

    def run(self, snapshot: Artifact, config: Artifact | None) -> Iterator[Outcome]:
        record = json.loads(self.reader.read(config)) if config is not None else None
        items = [snapshot.identity] + ([config.identity] if config is not None else [])
        try:
            target = self._open_target(record)
        except (VaultUnavailable, VaultAuthFailed) as exc:
            yield from _all(items, OutcomeStatus.FAILED, redact(str(exc)))
            return
        yield from self._decide(target, snapshot, config, record)

    # -- 1 and 2: the target and the comparison ------------------------------------------------
    def _reader(self, client: hvac.Client, record: dict | None) -> ConfigReader:
        """Reads the target as the record was read: its KV versions only if the record holds them."""
        return ConfigReader(client, self.options.kv_mounts, recorded_kv_metadata(record))

    def _open_target(self, record: dict | None) -> Target:
        client = new_client(self.options, self.base_dir, self.request.to)
        state = read_state(client)
        if state.usable():
            raise VaultUnavailable(f"the target {state.usable()}; a restore needs a fresh cluster, "
                                   "initialised and unsealed, with raft storage")
        if not self._authenticate(client):
            raise VaultAuthFailed(f"{self.to} accepts neither the target token (--target-token-file or "
                                  "VAULT_TOKEN: a token of the new Vault allowed sudo on "
                                  "sys/storage/raft/snapshot-force) nor the plan's own credential")
        return Target(client, state, self._reader(client, record).read())

    def _authenticate(self, client: hvac.Client) -> bool:
        token = self._target_token()
        if token and try_token(client, token):
            return True
        try:
            log_in(client, self.options, self.base_dir)
            return True
        except VaultAuthFailed:
            return False

    def _target_token(self) -> str:
        path = self.request.remap.get(TOKEN_KEY)
        if path:
            try:
                with open(path, encoding="utf-8") as handle:
                    return handle.read().strip()
            except OSError as exc:
                raise VaultAuthFailed(f"cannot read the target token file {path}: {exc.strerror}") from None
        return os.environ.get("VAULT_TOKEN", "").strip()

    def _decide(self, target: Target, snapshot: Artifact, config: Artifact | None,
                record: dict | None) -> Iterator[Outcome]:
        same_cluster = bool(target.state.cluster_id) and target.state.cluster_id == snapshot.meta.get("cluster_id")
        now = summary(target.document)
        wanted = summary(record) if record is not None else None
        config_equal = wanted is not None and now["configuration"] == wanted["configuration"]
        # a paths record cannot show that a secret changed since the snapshot: in the snapshot's
        # own cluster that is never "unchanged" (a DR tool must not skip a rollback it cannot judge)
        blind = same_cluster and wanted is not None and _paths_only(record)
        if same_cluster and wanted is not None and now == wanted and not blind:
            reason = (f"{self.to} is the snapshot's cluster and holds its configuration and "
                      f"{len(wanted['kv'])} KV paths at their recorded versions")
            yield from _all(_items(snapshot, config), OutcomeStatus.UNCHANGED, reason)
            return
        occupied = _differences(now, wanted) if same_cluster and wanted else empty_problems(target.document)
        if blind and not occupied:
            same, why = self._storage_unchanged(target.client, snapshot)
            if same:
                yield from _all(_items(snapshot, config), OutcomeStatus.UNCHANGED,
                                f"{self.to} is the snapshot's cluster and {why}")
                return
            occupied = [f"its {len(wanted['kv'])} KV secrets, whose versions the record does not hold "
                        f"(kv_metadata: paths), and {why}"]
        config_outcome = self._config_before(config, config_equal, occupied)
        if occupied and not self.request.overwrite:
            yield Outcome(snapshot.identity, OutcomeStatus.CONFLICT,
                          f"{self.to} is not empty ({_listed(occupied)}); restoring a raft snapshot replaces "
                          "everything in it: restore with --overwrite to do that")
            yield from config_outcome
            return
        if self.request.dry_run:
            replacing = f", replacing everything in it ({_listed(occupied)})" if occupied else ""
            yield Outcome(snapshot.identity, OutcomeStatus.PLANNED,
                          f"would force-restore the {snapshot.size}-byte raft snapshot into {self.to}{replacing}, "
                          f"then unseal it and read back {len(kv_paths(record or {}))} KV paths")
            yield from config_outcome if config_equal else _all(_items(None, config), OutcomeStatus.PLANNED,
                                                                 "would be checked against the record after the "
                                                                 "snapshot restores it")
            return
        yield from self._restore(target, snapshot, config, record, config_equal, occupied)

    def _config_before(self, config: Artifact | None, equal: bool, occupied: list[str]) -> list[Outcome]:
        if config is None:
            return []
        if equal:
            return [Outcome(config.identity, OutcomeStatus.UNCHANGED,
                            f"{self.to} has the recorded mounts, auth methods, policies, PKI and audit devices")]
        if self.request.overwrite or not occupied:
            return []  # decided after the restore
        return [Outcome(config.identity, OutcomeStatus.CONFLICT,
                        f"{self.to}'s configuration differs from the record; the raft snapshot restores it "
                        "with --overwrite")]

    def _storage_unchanged(self, client: hvac.Client, snapshot: Artifact) -> tuple[bool, str]:
        """Whether the target's storage is still the snapshot's, entry for entry (dr/exporters/vault/storage.py)."""
        try:
            now, then = self._storage_digests(client, snapshot)
        except _NotCompared as exc:
            return False, str(exc)
        if now == then:
            return True, (f"holds the snapshot's storage entry for entry ({then.entries} entries; only "
                          "leadership and login bookkeeping differ), so nothing changed since it was restored")
        return False, "its storage differs from the snapshot's, so something was written since the snapshot"

    def _storage_digests(self, client: hvac.Client, snapshot: Artifact) -> tuple[StorageDigest, StorageDigest]:
        """(the target's storage digest now, the stored snapshot's); _NotCompared says why not."""
        raw = hvac.adapters.RawAdapter.from_adapter(client.adapter)
        try:
            response = raw.request("GET", "/v1/sys/storage/raft/snapshot", stream=True, raise_exception=False)
        except Exception as exc:  # noqa: BLE001  (any transport error: the comparison is only not possible)
            raise _NotCompared(f"its storage could not be read to compare ({type(exc).__name__})") from None
        if not response.ok:
            raise _NotCompared(f"its storage could not be read to compare (sys/storage/raft/snapshot answered "
                               f"{response.status_code}: the token needs read on it)")
        try:
            with response, self.reader.open(snapshot) as stored:
                return storage_digest(response.raw), storage_digest(stored)
        except (StorageUnreadable, IntegrityError, EncryptionError) as exc:
            raise _NotCompared(redact(f"its storage could not be compared with the snapshot's ({exc})")) from None

    # -- a drill's comparison ------------------------------------------------------------------
    def fingerprints(self, snapshot: Artifact, config: Artifact | None) -> Iterator[tuple[str, str, str]]:
        """(identity, the target's fingerprint, the backup's) for dr drill, read with the plan's
        credential (the restored cluster's own): the raft snapshot as its storage digest (every
        entry's key and encrypted value, what the server writes by itself on unsealing and on
        logins left out: storage.py) against the stored snapshot's; the configuration record's
        mounts, auth methods, policies, PKI and audit devices against the target's, read as the
        record was. Digests only: nothing of a secret's value is in them. Raises what keeps the
        target from being read (sealed, the credential refused)."""
        client = self._client_with_plan_credential()
        try:
            now, then = self._storage_digests(client, snapshot)
        except _NotCompared as exc:
            raise VaultUnavailable(f"{self.to}: {exc}") from None
        yield (snapshot.identity, f"{now.entries} entries, sha256 {now.digest}",
               f"{then.entries} entries, sha256 {then.digest}")
        if config is None:
            return
        record = json.loads(self.reader.read(config))
        held = summary(self._reader(client, record).read())["configuration"]
        yield config.identity, _config_digest(held), _config_digest(summary(record)["configuration"])

    # -- 3 to 5: spool and check, send, unseal, verify -----------------------------------------
    def _restore(self, target: Target, snapshot: Artifact, config: Artifact | None, record: dict | None,
                 config_equal: bool, occupied: list[str]) -> Iterator[Outcome]:
        with tempfile.TemporaryDirectory(prefix="dr-vault-restore-") as folder:
            path = os.path.join(folder, "snapshot.tar.gz")
            try:
                facts = _spool_checked(self.reader, snapshot, path)
            except (IntegrityError, EncryptionError, SnapshotDamaged) as exc:
                reason = f"the stored snapshot failed its check ({type(exc).__name__}: {exc}); nothing was sent to {self.to}"
                yield Outcome(snapshot.identity, OutcomeStatus.FAILED, redact(reason))
                yield from _all(_items(None, config), OutcomeStatus.SKIPPED, "not restored: the snapshot was not")
                return
            try:
                self._send(target.client, path)
            except VaultUnavailable as exc:
                yield Outcome(snapshot.identity, OutcomeStatus.FAILED, redact(str(exc)))
                yield from _all(_items(None, config), OutcomeStatus.SKIPPED, "not restored: the snapshot was not")
                return
        replaced = f", replacing what it held ({_listed(occupied)})" if occupied else ""
        done = f"force-restored the raft snapshot (raft index {facts.get('raft_index')}) into {self.to}{replaced}"
        unsealed = self._unseal(target.client, snapshot.meta.get("cluster_id", ""))
        if not unsealed:
            yield Outcome(snapshot.identity, OutcomeStatus.RESTORED,
                          f"{done}; {self.to} is sealed now: unseal it with the original keys (the custodians' "
                          "shares, --unseal-keys-file) or re-point its auto-unseal key, then run this restore "
                          "again to check the KV paths (it says unchanged once they read back)")
            yield from _all(_items(None, config), OutcomeStatus.SKIPPED, f"not checked yet: {self.to} is sealed")
            return
        yield from self._verify(snapshot, config, record, done + f"; unsealed ({unsealed})", config_equal)

    def _send(self, client: hvac.Client, path: str) -> None:
        raw = hvac.adapters.RawAdapter.from_adapter(client.adapter)
        with open(path, "rb") as body:
            response = raw.request("POST", "/v1/sys/storage/raft/snapshot-force", data=body,
                                   raise_exception=False)
        if not response.ok:
            errors = ""
            with contextlib.suppress(Exception):
                errors = "; ".join(response.json().get("errors", []))
            raise VaultUnavailable(f"{self.to} refused the snapshot ({response.status_code}"
                                   f"{': ' + errors if errors else ''}); nothing changed there")

    def _unseal(self, client: hvac.Client, cluster_id: str) -> str:
        """How the target came back unsealed, as the snapshot's cluster; '' if it is still sealed.

        Right after snapshot-force the target may still answer as the old, unsealed cluster for
        a moment: it counts as restored only once it is unsealed with the snapshot's cluster id.
        """
        deadline = time.monotonic() + self.options.timeout_seconds
        keys, given = self._unseal_keys(), bool(self.request.remap.get(UNSEAL_KEY))
        while time.monotonic() < deadline:
            status = client.sys.read_seal_status()
            if status.get("sealed") and keys:
                for key in keys:
                    if not client.sys.submit_unseal_key(key).get("sealed"):
                        break
                keys = []  # submitted once: a wrong set of shares does not loop
                continue
            if status.get("sealed") and not given and isinstance(self.options.unseal, ShamirUnseal):
                return ""  # shares are needed and none were given
            if not status.get("sealed") and self._restored_cluster(client, cluster_id):
                return "with the original unseal keys" if given else "by itself (auto-unseal)"
            time.sleep(0.2)
        return ""

    @staticmethod
    def _restored_cluster(client: hvac.Client, cluster_id: str) -> bool:
        try:
            state = read_state(client)
            return not state.sealed and state.cluster_id == cluster_id and \
                bool(client.sys.read_leader_status().get("is_self"))
        except Exception:
            return False

    def _unseal_keys(self) -> list[str]:
        path = self.request.remap.get(UNSEAL_KEY)
        if not path:
            return []
        with open(path, encoding="utf-8") as handle:
            return [line.strip() for line in handle if line.strip()]

    def _verify(self, snapshot: Artifact, config: Artifact | None, record: dict | None, done: str,
                config_equal: bool) -> Iterator[Outcome]:
        if record is None:
            yield Outcome(snapshot.identity, OutcomeStatus.RESTORED, done + "; no configuration record to check against")
            return
        try:
            client = self._client_with_plan_credential()
            now = summary(self._reader(client, record).read())
            problems = _read_back(client, now, summary(record))
        except (VaultAuthFailed, VaultUnavailable, hvac.exceptions.VaultError) as exc:
            yield Outcome(snapshot.identity, OutcomeStatus.RESTORED,
                          redact(f"{done}; not checked: {type(exc).__name__}: {exc}"))
            yield from _all(_items(None, config), OutcomeStatus.SKIPPED, "not checked: the target could not be read")
            return
        kv = kv_paths(record)
        if any(p.startswith("KV") for p in problems):
            yield Outcome(snapshot.identity, OutcomeStatus.FAILED, f"{done}; but {_listed(problems)}")
        else:
            yield Outcome(snapshot.identity, OutcomeStatus.RESTORED,
                          f"{done}; {len(kv)} KV paths read back at their recorded versions")
        if config is None:
            return
        if now["configuration"] != summary(record)["configuration"]:
            yield Outcome(config.identity, OutcomeStatus.FAILED,
                          f"{self.to}'s configuration differs from the record after the restore: "
                          f"{_listed(_differences(now, summary(record)))}")
        elif config_equal:
            yield Outcome(config.identity, OutcomeStatus.UNCHANGED, f"{self.to} had the recorded configuration "
                          "before, and has it after the restore")
        else:
            yield Outcome(config.identity, OutcomeStatus.RESTORED,
                          f"restored by the raft snapshot: {self.to}'s mounts, auth methods, policies, PKI and "
                          "audit devices equal the record")

    def _client_with_plan_credential(self) -> hvac.Client:
        client = new_client(self.options, self.base_dir, self.request.to)
        log_in(client, self.options, self.base_dir)
        return client


class _NotCompared(Exception):
    """The target's storage could not be compared with the snapshot's (the reason, for people)."""


def _config_digest(configuration: dict) -> str:
    return "configuration sha256 " + hashlib.sha256(json.dumps(configuration, sort_keys=True).encode()).hexdigest()


def _spool_checked(reader: ContentReader, snapshot: Artifact, path: str) -> dict:
    """Copy the verified plaintext to a private file, checking the snapshot's own sums on the way."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with reader.open(snapshot) as source, os.fdopen(fd, "wb") as out:
        checked = CheckedStream(source)
        shutil.copyfileobj(checked, out, 1 << 20)
        checked.read(1)  # the end: raises unless the snapshot is whole
        return checked.facts or {}


def _read_back(client: hvac.Client, now: dict, wanted: dict) -> list[str]:
    """Every recorded KV path at (at least) its recorded version, its data readable."""
    problems = []
    for path, version in sorted(wanted["kv"].items()):
        have = now["kv"].get(path, "missing")
        if have == "missing":
            problems.append(f"KV path {path} is missing")
        elif version is not None and (have is None or have < version):
            problems.append(f"KV path {path} is at version {have}, the record says {version}")
        elif not _readable(client, path, now):
            problems.append(f"KV path {path} does not read back")
    return problems + [f"configuration {d}" for d in _differences(now, wanted) if not d.startswith("KV")]


def _readable(client: hvac.Client, path: str, now: dict) -> bool:
    mount = next((m for m in sorted(now["configuration"].get("mounts", {}), key=len, reverse=True)
                  if path.startswith(m)), "")
    kind = ((now["configuration"]["mounts"].get(mount) or {}).get("options") or {}).get("version", "1")
    api = f"/v1/{mount}data/{path[len(mount):]}" if str(kind) == "2" else f"/v1/{path}"
    try:
        response = client.adapter.get(api)
    except hvac.exceptions.InvalidPath:
        return False  # deleted or destroyed at its current version: the metadata still says so
    return isinstance(response, dict)


def _paths_only(record: dict | None) -> bool:
    """The record lists KV secrets without their versions (kv_metadata: paths)."""
    return bool(kv_paths(record or {})) and recorded_kv_metadata(record) == PATHS


def _differences(now: dict, wanted: dict | None) -> list[str]:
    if wanted is None:
        return []
    found = [f"{part} differs" for part in sorted(set(now["configuration"]) | set(wanted["configuration"]))
             if now["configuration"].get(part) != wanted["configuration"].get(part)]
    for path in sorted(set(now["kv"]) | set(wanted["kv"])):
        if now["kv"].get(path, "missing") != wanted["kv"].get(path, "missing"):
            found.append(f"KV path {path} at version {now['kv'].get(path, 'none')}, "
                         f"the snapshot's at {wanted['kv'].get(path, 'none')}")
    return found


def _listed(things: list[str], most: int = 4) -> str:
    more = len(things) - most
    return ", ".join(things[:most]) + (f" and {more} more" if more > 0 else "")


def _items(snapshot: Artifact | None, config: Artifact | None) -> list[str]:
    return [a.identity for a in (snapshot, config) if a is not None]


def _all(items: list[str], status: OutcomeStatus, reason: str) -> Iterator[Outcome]:
    for item in items:
        yield Outcome(item, status, reason)
