"""The `secretsmanager` exporter class: export, discover, restore, and its v2 declarations.

Per selected secret:
  secretsmanager-secret / <name>               its metadata record (listing.metadata), JSON,
        secret-class (it names the secret: format.md 8.1 seals its line), change token: the
        record's digest (one DescribeSecret per secret, nothing uploaded when it is the same);
  secretsmanager-secret-value / <name>:value   with `include_values`: the value of the version
        that was current when described (pinned by version id, so a value written between the
        describe and the read is not stored under an older token), secret-class; change token
        the version id; meta['provides'] the secret's ARN (the snapshot holds a copy of it).
(`:` cannot occur in a secret's name, so the two identities never collide.)

The restore puts values back, into each secret's own region by default or the region named
by `--to`; metadata records are for reading and diffing, and give a created secret its
description and tags.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import secrets
from typing import Iterator

from dr.contract import (AWS_CREDENTIALS, AnyOf, ArtifactSink, AuditDeclarations, ContentReader, DeployNeeds,
                         Destination, Discovered, DrillComparison, Exporter, Ordering, Outcome, OutcomeStatus, Planning,
                         RestoreRequest, RestoredContent, Rewriter, RunNeeds)
from dr.repository.key_names import SEALED_NAMES
from dr.exporters.secretsmanager.listing import (DEFAULT_KEY, SecretsManagerOptions, SecretsManagerUnavailable,
                                                 aws_errors, client, client_error, current_version, encode_value,
                                                 metadata, read_value, region_of, render, selected, value_arguments)
from dr.exporters.secretsmanager.placing import (LOST_KIND_CODES, SECRET_LOST, any_region_needs, dependencies,
                                                 provided)
from dr.model.artifacts import Artifact, Sensitivity

META, VALUE = "secretsmanager-secret", "secretsmanager-secret-value"
VALUE_SUFFIX = ":value"


class SecretsManagerExporter(Exporter, Planning, AuditDeclarations, DeployNeeds, DrillComparison):
    type_name = "secretsmanager"
    summary = "AWS Secrets Manager: each secret's metadata (KMS key, rotation, replicas), values optional and secret"
    contract_version = 2
    Options = SecretsManagerOptions
    # secret stores first: External Secrets read them the moment they start
    ordering = Ordering(frozenset({"secret-stores"}))
    finding_codes = (SECRET_LOST,)
    lost_kind_codes = LOST_KIND_CODES

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        return [Destination(list(artifacts), None, f"each secret's own region ({self.options.region})")]

    def run_needs(self) -> RunNeeds:
        endpoint = self.options.endpoint_url or f"https://secretsmanager.{self.options.region}.amazonaws.com"
        return RunNeeds(endpoints=[endpoint], credentials=list(AWS_CREDENTIALS))

    def scratch_destination(self, folder: str) -> str | None:
        return None  # a folder cannot hold secrets; a drill names a region with --to

    def restore_needs(self, artifacts: list[Artifact]) -> list[AnyOf]:
        return any_region_needs(artifacts, META)

    # -- discover / export ---------------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        for described in selected(client(self.options), self.options):
            replicas = [r["Region"] for r in described.get("ReplicationStatus") or []]
            yield Discovered(META, described["Name"], f"replicas: {', '.join(replicas) or 'none'}")
            if self.options.include_values:
                yield Discovered(VALUE, described["Name"] + VALUE_SUFFIX)

    def export(self, sink: ArtifactSink) -> None:
        sm = client(self.options)
        count = 0
        for described in selected(sm, self.options):
            record = metadata(described)
            stored = self._write_metadata(sink, record)
            if self.options.include_values:
                self._write_value(sink, sm, record, stored)
            count += 1
        self.context.log(f"secretsmanager {self.options.region}: {count} secrets")

    def _write_metadata(self, sink: ArtifactSink, record: dict) -> Artifact:
        """Secret-class whatever the plan says: its name, ARN, description and tags say what the
        secret opens, so they are sealed and encrypted as a value is (format.md 8.1)."""
        content = render(record)
        arn = record["ARN"]
        sealed: list[str] = []  # the names sealed in the dependencies, for dr audit --identity
        deps = dependencies(record, DEFAULT_KEY, self.context.seal_name, sealed)
        meta = {"arn": arn, "region": region_of(arn), "kms_key": record["KmsKeyId"],
                "replica_regions": [r["Region"] for r in record["ReplicationStatus"]],
                "rotation_enabled": bool(record.get("RotationEnabled")), SEALED_NAMES: sealed}
        return sink.write(META, record["Name"], content, sensitivity=Sensitivity.SECRET, meta=meta,
                          dependencies=deps,
                          change_token="sha256:" + hashlib.sha256(content).hexdigest())

    def _write_value(self, sink: ArtifactSink, sm, record: dict, stored: Artifact) -> None:
        version, arn = current_version(record), record["ARN"]
        if version is None:  # named by its record's stored identity: a sealed name (8.1)
            where = f"{stored.source}/{stored.identity}"
            self.context.finding("info", "secretsmanager-no-value", f"{where} (a sealed name: docs/format.md "
                                 f"8.1) has no current value; `dr restore --source {stored.source} --dry-run "
                                 "--identity FILE` names it", secret=where)
            return
        sink.write(VALUE, record["Name"] + VALUE_SUFFIX, lambda: io.BytesIO(read_value(sm, arn, version)),
                   sensitivity=Sensitivity.SECRET,
                   meta={"arn": arn, "region": region_of(arn), "version_id": version,
                         "provides": provided(record, DEFAULT_KEY, self.context.seal_name)},
                   change_token=f"version:{version}")

    # -- restore -------------------------------------------------------------------------------
    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        records = {a.identity: a for a in artifacts if a.kind == META}
        values = {a.identity[: -len(VALUE_SUFFIX)] for a in artifacts if a.kind == VALUE}
        for artifact in artifacts:
            if artifact.kind == VALUE:
                name = artifact.identity[: -len(VALUE_SUFFIX)]
                yield self._restore_value(artifact, name, records.get(name), reader, request)
            elif artifact.kind == META:
                held = ("its value artifact restores the secret" if artifact.identity in values else
                        "the backup holds no value (include_values: false): recreate the value from its owner")
                yield Outcome(artifact.identity, OutcomeStatus.SKIPPED, f"a metadata record, for reading and "
                              f"diffing; {held}")
            else:
                yield Outcome(artifact.identity, OutcomeStatus.SKIPPED, f"not a secretsmanager artifact ({artifact.kind})")

    def _restore_value(self, artifact: Artifact, name: str, record: Artifact | None, reader: ContentReader,
                       request: RestoreRequest) -> Outcome:
        region = request.to or artifact.meta.get("region") or self.options.region
        item, where = artifact.identity, f"{name} in {region}"
        try:
            sm = client(self.options, region)
            stored = reader.read(artifact)
            exists, current = _current(sm, name)
            if current == stored:
                return Outcome(item, OutcomeStatus.UNCHANGED, f"{where} already holds the backed-up value")
            if exists and not request.overwrite:
                return Outcome(item, OutcomeStatus.CONFLICT, f"{where} holds another value; restore with "
                               "--overwrite to put the backed-up one as its current version")
            if request.dry_run:
                verb = "put the backed-up value as the current version of" if exists else "create"
                return Outcome(item, OutcomeStatus.PLANNED, f"would {verb} {where}")
            if exists:
                sm.put_secret_value(SecretId=name, **value_arguments(stored))
            else:
                sm.create_secret(Name=name, **value_arguments(stored), **self._creation(record, reader, region))
            if _current(sm, name)[1] != stored:
                return Outcome(item, OutcomeStatus.FAILED, f"{where} does not read back the backed-up value")
        except (SecretsManagerUnavailable, *aws_errors()) as exc:
            return Outcome(item, OutcomeStatus.FAILED, f"{where}: {type(exc).__name__}: {exc}")
        done = "put the backed-up value as the current version" if exists else "created it with the backed-up value"
        return Outcome(item, OutcomeStatus.RESTORED, f"{where}: {done}; it reads back equal")

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each value artifact: the destination secret's current value against the backed-up
        one, as restore() compares them (its stored JSON form). Both go in as HMAC-SHA256 under a
        key made for this call and then forgotten: the fingerprints, which a drill's record may
        keep, can neither show a value nor let anyone test a guess of one."""
        key = secrets.token_bytes(32)

        def keyed(value: bytes | None) -> str:
            return "" if value is None else "hmac-sha256 " + hmac.new(key, value, hashlib.sha256).hexdigest()
        for artifact in (a for a in artifacts if a.kind == VALUE):
            name = artifact.identity[: -len(VALUE_SUFFIX)]
            sm = client(self.options, request.to or artifact.meta.get("region") or self.options.region)
            yield RestoredContent(artifact.identity, restored=keyed(_current(sm, name)[1]),
                                  backed_up=keyed(reader.read(artifact)))

    @staticmethod
    def _creation(record: Artifact | None, reader: ContentReader, region: str) -> dict:
        """Description, tags and (in its own region) the KMS key of a secret created anew."""
        if record is None:
            return {}
        data = json.loads(reader.read(record))
        found = {"Description": data.get("Description") or "", "Tags": data.get("Tags") or []}
        key = data.get("KmsKeyId") or DEFAULT_KEY
        if key != DEFAULT_KEY and region_of(data.get("ARN", "")) == region:
            found["KmsKeyId"] = key  # another region's key cannot encrypt here: the default key does
        return {k: v for k, v in found.items() if v}


def _current(sm, name: str) -> tuple[bool, bytes | None]:
    """(whether the secret exists, its current value as stored JSON or None)."""
    try:
        sm.describe_secret(SecretId=name)
    except client_error() as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return False, None
        raise
    try:
        return True, encode_value(sm.get_secret_value(SecretId=name))
    except client_error() as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return True, None  # a secret without a current value
        raise
