"""Putting certificates back: an import into a region, where the backup makes that possible.

A certificate can be imported only with its private key. The key comes from the snapshot (a
certificate backed up with `export_private`) or from `--private-key-dir DIR` (`DIR/<id>.pem`,
for imported certificates, whose keys ACM never gives back). Without one the outcome is
`skipped`, with the command that gets a certificate in the new region instead (an
Amazon-issued certificate is requested again there; its DNS validation records are the same
in every region of the account). ACM refuses expired certificates, so they are skipped too.

In the target region: a certificate with the same bytes (sha256 of the DER) is `unchanged`;
one for the same domains with other bytes is a `conflict`, and `--overwrite` re-imports the
backed-up one into it (its ARN, and the load balancers using it, stay). Every import is read
back (GetCertificate) and compared.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any

from dr.exporters.certificates import acm
from dr.exporters.certificates.parsing import CertificateUnreadable, key_matches, leaf
from dr.exporters.certificates.records import certificate_id, domains
from dr.contract import ContentReader, Outcome, OutcomeStatus, RestoreRequest
from dr.model.artifacts import Artifact

KEY_DIR = "private-key-dir"  # RestoreRequest.remap key of --private-key-dir


class CertificateRestore:
    """One certificate into one region."""

    def __init__(self, options, artifact: Artifact, key: Artifact | None, reader: ContentReader,
                 request: RestoreRequest, clients: dict[str, Any]):
        self.options, self.artifact, self.key_artifact, self.reader = options, artifact, key, reader
        self.clients = clients  # one ACM client per region for the whole restore (each costs ~0.1 s)
        self.request = request
        self.region = request.to or artifact.meta.get("region") or options.regions[0]

    def outcome(self) -> Outcome:
        data = json.loads(self.reader.read(self.artifact))
        refusal = self._refusal(data)
        if refusal:
            return self._say(OutcomeStatus.SKIPPED, refusal)
        key = self._key(data)
        if isinstance(key, Outcome):
            return key
        try:
            return self._import(data, key)
        except (acm.AcmUnavailable, CertificateUnreadable) as exc:
            return self._say(OutcomeStatus.FAILED, f"{self.region}: {exc}")

    def fingerprints(self) -> tuple[str, str] | None:
        """(what the target region holds, what the backup has) for dr drill: the sha256 of the
        DER of the certificate there for the backed-up domains, read back (GetCertificate), the
        one with the backed-up bytes if any; None for a certificate outcome() does not import
        (skipped: no key, expired, never issued; or a key that is not its own)."""
        data = json.loads(self.reader.read(self.artifact))
        if self._refusal(data) or isinstance(self._key(data), Outcome):
            return None
        if self.region not in self.clients:
            self.clients[self.region] = acm.client(self.options, self.region)
        client = self.clients[self.region]
        same, similar = find(client, data)
        held = data["sha256"] if same else (leaf(acm.pem(client, similar)[0]).sha256 if similar else "")
        return (f"certificate sha256 {held}" if held else ""), f"certificate sha256 {data['sha256']}"

    def _say(self, status: OutcomeStatus, reason: str) -> Outcome:
        return Outcome(self.artifact.identity, status, reason)

    def _refusal(self, data: dict[str, Any]) -> str:
        if not data.get("certificate"):
            return (f"it was not issued when backed up (status {data.get('status')}): request it again in "
                    f"{self.region}: {request_command(data, self.region)}")
        if datetime.fromisoformat(data["not_after"]) <= datetime.now(timezone.utc):
            return f"it expired {data['not_after']} (from its bytes) and ACM refuses expired certificates: " \
                   f"renew it, then import the new one"
        return ""

    def _key(self, data: dict[str, Any]) -> bytes | Outcome:
        """The private key, or the outcome saying why there is none."""
        if self.key_artifact is not None:
            key = self.reader.read(self.key_artifact)
        else:
            folder = self.request.remap.get(KEY_DIR)
            path = os.path.join(folder, certificate_id(data["arn"]) + ".pem") if folder else ""
            if not path or not os.path.isfile(path):
                return self._say(OutcomeStatus.SKIPPED, self._no_key(data, path))
            with open(path, "rb") as handle:
                key = handle.read()
        if not key_matches(data["certificate"], key):
            return self._say(OutcomeStatus.FAILED, "the private key is not this certificate's (its public key "
                             "differs): nothing was imported")
        return key

    def _no_key(self, data: dict[str, Any], path: str) -> str:
        looked = f" ({path} does not exist)" if path else ""
        if data.get("type") == "AMAZON_ISSUED" and not data.get("exportable"):
            return (f"Amazon-issued: its private key never leaves ACM, so it cannot be restored; request one in "
                    f"{self.region}: {request_command(data, self.region)} (the DNS validation records in the "
                    f"backup validate it there too)")
        if data.get("type") == "IMPORTED":
            return (f"imported: ACM never gives its private key back and none was given{looked}: put the key "
                    f"as <dir>/{certificate_id(data['arn'])}.pem and restore with --private-key-dir <dir>, or "
                    f"aws acm import-certificate --region {self.region} --certificate fileb://cert.pem "
                    f"--certificate-chain fileb://chain.pem --private-key fileb://key.pem")
        return (f"exportable, but the backup holds no private key (export_private: false){looked}: set "
                f"export_private: true and back up again, or issue a new certificate in {self.region}: "
                f"{request_command(data, self.region)}")

    def _import(self, data: dict[str, Any], key: bytes) -> Outcome:
        if self.region not in self.clients:
            self.clients[self.region] = acm.client(self.options, self.region)
        client = self.clients[self.region]
        same, similar = find(client, data)
        if same:
            return self._say(OutcomeStatus.UNCHANGED, f"{self.region} already holds it as {same}")
        if similar and not self.request.overwrite:
            return self._say(OutcomeStatus.CONFLICT, f"{similar} in {self.region} holds another certificate for "
                             f"{', '.join(data['domains'])}; --overwrite re-imports the backed-up one into it")
        if self.request.dry_run:
            into = f"re-import it into {similar}" if similar else f"import it into {self.region}"
            return self._say(OutcomeStatus.PLANNED, f"would {into} (expires {data['not_after']})")
        arn = acm.import_certificate(client, data["certificate"], _chain(data), key, similar)
        back, _ = acm.pem(client, arn)
        if leaf(back).sha256 != data["sha256"]:
            return self._say(OutcomeStatus.FAILED, f"{arn} does not read back the backed-up certificate")
        verb = "re-imported into" if similar else "imported as"
        return self._say(OutcomeStatus.RESTORED, f"{verb} {arn}; it reads back equal (expires {data['not_after']})")


def _chain(data: dict[str, Any]) -> str:
    return data.get("certificate_chain") or ""


def find(client, data: dict[str, Any]) -> tuple[str | None, str | None]:
    """(ARN of a certificate with the same bytes, ARN of one for the same domains) in a region."""
    wanted = sorted(data["domains"])
    similar = None
    for arn, described in acm.certificates(client):
        if domains(described) != wanted:
            continue
        certificate, _ = acm.pem(client, arn)
        if certificate and leaf(certificate).sha256 == data["sha256"]:
            return arn, None
        similar = similar or arn
    return None, similar


def request_command(data: dict[str, Any], region: str) -> str:
    names = data.get("domains") or [data.get("domain_name") or "DOMAIN"]
    first = data.get("domain_name") or names[0]
    others = [n for n in names if n != first]
    sans = f" --subject-alternative-names {' '.join(others)}" if others else ""
    return f"aws acm request-certificate --region {region} --domain-name {first}{sans} --validation-method DNS"
