"""The `vault` exporter class: what dr's core asks of it, and export / discover / restore.

Two artifacts per source:
  vault-raft-snapshot / raft-snapshot   the raft snapshot, secret-class (encrypted to the
        plan's recipients inside the process), checked while it streams; its dependencies
        are what unseals it, its meta['provides'] the Vault's address (so the audit counts it
        as a copy of that Vault);
  vault-configuration / configuration   the configuration as JSON, without secret values.
Both carry the change token `raft:<cluster id>:<raft committed index>`: any write to a raft
Vault moves the index, so an unchanged Vault costs two unauthenticated reads, a token lookup
and nothing else (a login, AppRole or Kubernetes, is itself a write: see docs/exporters/vault.md).
"""

from __future__ import annotations

import hashlib
import io
import json
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Iterator

from dr.contract import (AnyOf, ArtifactSink, AuditDeclarations, ContentReader, DeployNeeds, Destination, Discovered,
                         DrillComparison, Exporter, NoDestination, Ordering, Outcome, OutcomeStatus, Planning,
                         RestoreOption, RestoreRequest, RestoredContent, Rewriter, RunNeeds)
from dr.repository.key_names import SEALED_NAMES, kms_key
from dr.exporters.vault.deploying import run_needs
from dr.exporters.vault.kinds import CONFIG, SNAPSHOT, TOKEN_KEY, UNSEAL_KEY
from dr.exporters.vault.kms import KeyRegions, key_regions
from dr.exporters.vault.options import AwsKmsUnseal, TokenAuth, VaultOptions
from dr.exporters.vault.unsealing import (LOST_KIND_CODES, UNSEAL_LOST, any_region_needs, describe,
                                          unseal_dependencies)
from dr.model.artifacts import Artifact, Sensitivity

# hvac (and requests, urllib3 under it) is imported by the modules that talk to the Vault, and
# those only when a backup, discover or restore runs: loading a plan, auditing it or rendering
# its deployment declares this exporter without them (a measured part of a second on a loaded host).
if TYPE_CHECKING:
    import hvac

    from dr.exporters.vault.snapshots import CheckedStream

SNAPSHOT_ID, CONFIG_ID = "raft-snapshot", "configuration"
SNAPSHOT_PATH = "/v1/sys/storage/raft/snapshot"


class VaultExporter(Exporter, Planning, AuditDeclarations, DeployNeeds, DrillComparison):
    type_name = "vault"
    summary = "HashiCorp Vault / OpenBao: verified raft snapshots, configuration as data, unseal dependencies"
    contract_version = 2
    Options = VaultOptions
    # the core restores secret stores before anything else (dr/planner/ordering_rules.py)
    ordering = Ordering(frozenset({"secret-stores"}))
    finding_codes = (UNSEAL_LOST,)
    lost_kind_codes = LOST_KIND_CODES
    restore_options = (
        RestoreOption("target-token-file", "FILE", "a token of the new Vault (allowed sudo on "
                      "sys/storage/raft/snapshot-force); default: $VAULT_TOKEN", TOKEN_KEY),
        RestoreOption("unseal-keys-file", "FILE", "the original unseal key shares, one a line, to unseal "
                      "the restored Vault and check it (Shamir)", UNSEAL_KEY),
    )

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        raise NoDestination(f"a Vault is restored only into a Vault you name, never over {self.options.address} "
                            "by default: give --to https://new-vault (initialised, unsealed, raft storage)")

    def scratch_destination(self, folder: str) -> str | None:
        return None  # a folder cannot hold a Vault

    def restore_needs(self, artifacts: list[Artifact]) -> list[AnyOf]:
        # the options may be unvalidated here (a plan read for its declarations only)
        address = getattr(self.options, "address", None) or "the Vault"
        return any_region_needs([a for a in artifacts if a.kind == SNAPSHOT], address)

    def run_needs(self) -> RunNeeds:
        return run_needs(self.options, self.context.base_dir, self.context.source)

    # -- discover / export ---------------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        from dr.exporters.vault.connecting import VaultUnavailable, new_client, read_state

        state = read_state(new_client(self.options, self.context.base_dir))  # no token needed
        problem = state.usable()
        if problem:
            raise VaultUnavailable(problem)
        yield Discovered(SNAPSHOT, SNAPSHOT_ID, f"raft index {state.raft_index}")
        yield Discovered(CONFIG, CONFIG_ID, f"OpenBao/Vault {state.version}")

    def export(self, sink: ArtifactSink) -> None:
        from dr.exporters.vault.connecting import VaultUnavailable, new_client, read_state, session

        client = new_client(self.options, self.context.base_dir)
        state = read_state(client)
        if state.usable():  # before any login: a sealed Vault is a failed source with this reason
            raise VaultUnavailable(state.usable())
        with session(self.options, self.context.base_dir, client=client):
            if not isinstance(self.options.auth, TokenAuth):
                state = read_state(client)  # after the login: its own write is in the index
                if state.usable():
                    raise VaultUnavailable(state.usable())
            token = f"raft:{state.cluster_id}:{state.raft_index}"
            self.context.log(f"vault {self.options.address}: raft index {state.raft_index}, "
                             f"unseal {describe(self.options)}")
            meta = {"cluster_id": state.cluster_id, "raft_index": state.raft_index, "version": state.version,
                    "unseal": self.options.unseal.type}
            regions = self._key_regions()
            # the key's regions are part of what is recorded: a new replica makes a new record
            kms = f":kms={','.join(regions.regions)}" if regions is not None and regions.replicas else ""
            # The snapshot goes first, and when it is read the configuration record is read beside
            # it: both wait mostly on the server (its snapshot's first byte, then one request a
            # part and a folder). Inside the session, so an AppRole token outlives both reads.
            with ThreadPoolExecutor(1, thread_name_prefix="vault-config") as beside:
                record: list[Future] = []

                def snapshot() -> CheckedStream:
                    record.append(beside.submit(self._read_configuration, client))
                    return self._snapshot(client)

                sealed: list[str] = []  # chosen key names, sealed in the dependencies (format.md 8.1)
                unseals = unseal_dependencies(self.options, regions, self.context.seal_name, sealed)
                sink.write(SNAPSHOT, SNAPSHOT_ID, snapshot, sensitivity=Sensitivity.SECRET, dependencies=unseals,
                           meta={**meta, "provides": [self.options.address], SEALED_NAMES: sealed},
                           change_token=token + kms)
                sink.write(CONFIG, CONFIG_ID, lambda: self._configuration(client, record),
                           sensitivity=self.context.sensitivity or Sensitivity.INTERNAL, meta=dict(meta),
                           change_token=f"{token}:{self._kv_scope()}")

    def _key_regions(self) -> KeyRegions | None:
        """An awskms key's replica regions (one DescribeKey); None for other unseals."""
        unseal = self.options.unseal
        if not isinstance(unseal, AwsKmsUnseal) or not unseal.describe_key:
            return None
        found = key_regions(unseal, self.options.timeout_seconds)
        if found.problem:  # a chosen alias is named sealed, and KMS's message (it may quote it) left out
            key = kms_key(unseal.key_id, self.context.seal_name)
            problem = found.problem.split(":")[0] if key != unseal.key_id else found.problem
            self.context.finding("warning", "vault-unseal-key-unreadable",
                                 f"{self.options.address}: could not read KMS key {key} in {unseal.region} "
                                 f"({problem}); only that region is recorded as what unseals the snapshot",
                                 address=self.options.address, action="allow kms:DescribeKey on the key to dr's "
                                 "backup credentials (or set unseal.describe_key: false), then back up again")
        else:
            self.context.log(f"vault {self.options.address}: unseal key {found.key_id} "
                             + (f"is multi-region, replicas in {', '.join(found.replicas)}" if found.replicas
                                else "has no replica region"))
        return found

    def _kv_scope(self) -> str:
        scope = json.dumps([self.options.kv_mounts, self.options.kv_metadata])
        return hashlib.sha256(scope.encode()).hexdigest()[:12]

    def _configuration(self, client: hvac.Client, started: list[Future]) -> io.BytesIO:
        """The record: read beside the snapshot when that was read, else now (an unchanged
        snapshot, a record whose scope changed); its unreadable parts become findings here."""
        document, problems = started[0].result() if started else self._read_configuration(client)
        for problem in problems:
            self.context.finding("warning", "vault-config-unreadable",
                                 f"{self.options.address}: {problem}; the configuration record lacks it",
                                 address=self.options.address)
        return io.BytesIO(document)

    def _read_configuration(self, client: hvac.Client) -> tuple[bytes, list[str]]:
        from dr.exporters.vault.configuration import ConfigReader, render

        reader = ConfigReader(client, self.options.kv_mounts, self.options.kv_metadata)
        document = reader.read()
        return render(document), reader.problems

    def _snapshot(self, client: hvac.Client) -> CheckedStream:
        from dr.exporters.vault.connecting import STREAM_ERRORS, stream
        from dr.exporters.vault.snapshots import CheckedStream

        response = stream(client, SNAPSHOT_PATH)
        return CheckedStream(response.raw, STREAM_ERRORS, on_close=response.close)

    # -- restore -------------------------------------------------------------------------------
    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        snapshots = [a for a in artifacts if a.kind == SNAPSHOT]
        configs = [a for a in artifacts if a.kind == CONFIG]
        for artifact in artifacts:
            if artifact.kind not in (SNAPSHOT, CONFIG):
                yield Outcome(artifact.identity, OutcomeStatus.SKIPPED, f"not a vault artifact ({artifact.kind})")
        if not snapshots:
            for config in configs:
                yield Outcome(config.identity, OutcomeStatus.SKIPPED,
                              "a configuration record alone restores nothing: the raft snapshot does")
            return
        if not request.to:
            for artifact in snapshots + configs:
                yield Outcome(artifact.identity, OutcomeStatus.FAILED,
                              "restoring a Vault needs a target: --to https://new-vault")
            return
        from dr.exporters.vault.restoring import Restore

        yield from Restore(self.options, self.context.base_dir, reader, request).run(
            snapshots[0], configs[0] if configs else None)

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """The target's storage against the snapshot's, by digest; its configuration against
        the record (restoring.Restore.fingerprints)."""
        snapshots = [a for a in artifacts if a.kind == SNAPSHOT]
        if not snapshots or not request.to:
            return
        from dr.exporters.vault.restoring import Restore

        configs = [a for a in artifacts if a.kind == CONFIG]
        compare = Restore(self.options, self.context.base_dir, reader, request)
        for identity, restored, backed_up in compare.fingerprints(snapshots[0], configs[0] if configs else None):
            yield RestoredContent(identity, restored=restored, backed_up=backed_up)
