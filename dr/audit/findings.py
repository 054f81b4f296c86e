"""Findings: what the audit tells a person, one per problem, each with what to do and a runbook.

Every finding code has a runbook at runbooks/<code>.md (a test fails when one is missing).
The code table below is the single list of dr's own codes; exporters bring theirs
(Exporter.finding_codes, declared as data: dr.audit.declared adds them to CODES before an
audit judges). Reports, runbook checks and the JSON document (docs/audit-json.md) all read
CODES.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from dr.model.redaction import redact

BLOCKER = "blocker"  # recovery from what is left is impossible until this is fixed
WARNING = "warning"  # recovery may work, but something is unproven or degraded
INFO = "info"  # worth knowing during a restore (a remap to perform), nothing to fix

SEVERITIES = (BLOCKER, WARNING, INFO)
RUNBOOK_DIR = "runbooks"


@dataclass(frozen=True)
class Code:
    code: str
    title: str
    action: str  # what to do, as one sentence a person can act on
    runbook: str = ""  # an exporter's own (path or URL); empty: runbooks/<code>.md
    owner: str = ""  # the exporter type that declared it; empty: dr's own


_CODES = [
    Code("no-surviving-target", "Every backup target is lost with the failure",
         "Add a target outside the failed domains (another region, account or provider) and back up "
         "to it; a backup lost with the cluster is not disaster recovery."),
    Code("target-in-failed-domain", "The audited snapshot is stored in a target that is lost",
         "Audit the snapshot on a surviving target (dr audit --target NAME) and make sure every "
         "source is backed up there."),
    Code("credentials-in-failed-domain", "The credentials that reach a surviving target are lost",
         "Keep the target's credentials outside the failed domain (a secret store in the target's own "
         "region or account, or break-glass escrow) and set credentials_location to it."),
    Code("credentials-circular", "The credentials or key that open the snapshot are kept only inside it",
         "Keep a copy of the credentials (or the age identity) outside every protected domain: another "
         "account's secret store or offline escrow; set targets[].credentials_location (or "
         "encryption.key_location) to it and place it with a location, then audit again."),
    Code("key-in-failed-domain", "The private key that decrypts secret content is lost with the failure",
         "Keep a copy of the age identity outside every protected domain (offline escrow or another "
         "account's secret store) and set encryption.key_location to it."),
    Code("dr-image-in-failed-domain", "dr's own container image is pulled from a place that is lost",
         "Mirror dr's image to a registry outside the failed domain and set dr_image to the mirror "
         "(or install dr from its package on the recovery host)."),
    Code("image-in-failed-domain", "A container image exists only in a registry that is lost",
         "Copy the image by digest to a registry outside the failed domain (crane copy or skopeo copy) "
         "and point the workload, or the restore's image remapping, at the copy."),
    Code("registry-in-failed-domain", "A chart, model or artifact registry a restore pulls from is lost",
         "Mirror the repository to a registry outside the failed domain, change the plan's sources to "
         "reference the mirror, and back up again."),
    Code("secret-store-in-failed-domain", "Secrets a restore needs live only in a secret store that is lost",
         "Back up the secret store itself (a Vault/OpenBao raft snapshot as a secret-class source) to a "
         "surviving target, or replicate it outside the failed domain."),
    Code("dependency-in-failed-domain", "A restore needs something that is lost with the failure",
         "Move or replicate the dependency outside the failed domain, or have its exporter capture it "
         "into the snapshot (declaring meta['provides']), then run dr backup and dr audit again."),
    Code("stale-backup", "The newest backup of a source is older than its RPO, or there is none",
         "Find out why the source's backups stopped (dr snapshots, the backup job's logs), fix it, "
         "and run dr backup --source NAME now."),
    Code("unknown-location", "Nothing in the plan says where a reference lives",
         "Add a location or a placement rule to the plan that places this reference in its failure "
         "domain; until then the audit cannot tell whether it survives."),
    Code("not-backed-up", "Something exists at a source now but the audited snapshot does not hold it",
         "Run dr backup --source NAME so the next snapshot holds it; if a backup would still leave it "
         "out, add it to a source in the plan, then back up and audit again."),
    Code("changed-since-backup", "Objects changed at a source since the audited snapshot (dr audit --live)",
         "If the change matters for recovery, run dr backup --source NAME now; otherwise the next "
         "scheduled backup records it."),
    Code("deleted-since-backup", "Objects deleted at a source are still in the audited snapshot (dr audit --live)",
         "Run dr backup --source NAME so the next snapshot no longer holds them; a restore from this "
         "snapshot brings them back, so delete them again after one."),
    Code("coverage-unknown", "The audit could not list what exists at a source (dr audit --live)",
         "Fix what discover() reported (credentials, kubeconfig context, a missing path, the network) "
         "and run dr audit --live again; until then, what is not backed up there is unknown."),
    Code("needs-unknown", "An exporter could not say which of its needs any one of several references meets",
         "Fix or upgrade the source's exporter plugin (its restore_needs raised; the message has the error) "
         "and run dr audit again; until then the source's dependencies are judged one by one."),
    Code("plan-in-snapshot", "A snapshot holds the plan itself, so the key of sealed names is in the repository",
         "Leave the plan out of that source (files exclude, another namespace, another repository) and "
         "back up again, or accept that whoever reads the repository can test guessed secret names."),
    Code("backup-finding", "The backup noticed a problem at a source (kept in the snapshot)",
         "Fix what the finding names at the source (a missing object it references, a copy that failed), "
         "then run dr backup --source NAME and dr audit again; a restore would bring the same problem back."),
    Code("readiness-finding", "A go-live readiness check failed at a source (dr audit --readiness)",
         "Follow the finding's own runbook: fix the object it names at the source (a PodDisruptionBudget, a "
         "serving Deployment, a spot job's grace period), then run dr backup --source NAME and dr audit "
         "--readiness again."),
    Code("dependency-remapped", "A lost dependency can be rebuilt from the snapshot's own copy",
         "During the restore, restore the providing artifact to a new location first and point the "
         "dependents at it (dr restore --source ... --to NEW-LOCATION)."),
    Code("declaration-refused", "An exporter declared a finding code or dependency kind that the audit refused",
         "Fix or upgrade the exporter plugin named in the message (its finding_codes or lost_kind_codes: a code "
         "that another exporter or dr declares with other words, or a kind mapped to a code nobody declares); "
         "until then its kinds get the generic dependency-in-failed-domain."),
]
CODES: dict[str, Code] = {c.code: c for c in _CODES}  # in the order reports list them
#: exporters' codes are listed before this one, the generic blocker of a lost dependency
_DECLARED_BEFORE = "dependency-in-failed-domain"


def declare(code: Code) -> str:
    """Add an exporter's code to CODES (before the generic blocker); the problem, if refused."""
    known = CODES.get(code.code)
    if known is not None:
        if (known.title, known.action, known.runbook) == (code.title, code.action, code.runbook):
            return ""
        return (f"exporter {code.owner!r} declares finding code {code.code!r}, which "
                f"{('exporter ' + repr(known.owner)) if known.owner else 'dr'} declares with other words")
    ordered = list(CODES.values())
    at = next(i for i, c in enumerate(ordered) if c.code == _DECLARED_BEFORE)
    ordered.insert(at, code)
    CODES.clear()  # in place: modules hold CODES by name
    CODES.update((c.code, c) for c in ordered)
    return ""


@lru_cache(maxsize=1 << 16)
def redacted(reference: str) -> str:
    """redact(), remembered: the same references recur in every scenario and message."""
    return redact(reference)


def runbook_for(code: str) -> str:
    known = CODES.get(code)
    return (known.runbook if known is not None and known.runbook else None) or f"{RUNBOOK_DIR}/{code}.md"


@dataclass
class Finding:
    """One problem (or one remap to perform) the audit found.

    scenario:  the scenario's name; None for findings that hold in every scenario (placement
               gaps, staleness)
    kind:      what sort of thing: a dependency kind (image, git-remote, bucket ...), or
               target, credentials, key, dr-image, source
    reference: the reference as recorded (redacted in reports)
    location:  how the reference was placed: "location <name>" or "rule <pattern>", or None
    domain:    the failure domain it is placed in, None when nothing places it
    artifact:  the first artifact (source/kind/identity) that needs it, if any
    backup:    for a backup-finding or readiness-finding, what the exporter recorded: source,
               code, severity (info, warning, error) and object (dr.audit.backup_findings);
               else None
    runbook_path: for a readiness-finding, the runbook its exporter names (runbooks/<code>.md)
    """

    code: str
    severity: str
    message: str
    scenario: str | None = None
    kind: str = ""
    reference: str = ""
    location: str | None = None
    domain: str | None = None
    domain_path: str | None = None
    artifact: str | None = None
    artifacts_affected: int = 0
    examples: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    action: str = ""
    backup: dict[str, Any] | None = None
    runbook_path: str | None = None  # a readiness finding's own runbook (the exporter names it)

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown finding code {self.code!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}")
        if not self.action:
            self.action = CODES[self.code].action
        # Reports go to incident channels and PRs: no credential in a URL may reach them.
        self.reference = redacted(self.reference)
        self.message = redact(self.message)
        if self.backup and self.backup.get("object"):
            self.backup = {**self.backup, "object": redacted(str(self.backup["object"]))}

    @property
    def runbook(self) -> str:
        return self.runbook_path or runbook_for(self.code)

    @property
    def title(self) -> str:
        return CODES[self.code].title

    def sort_key(self) -> tuple:
        return (SEVERITIES.index(self.severity), list(CODES).index(self.code), self.reference)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code, "severity": self.severity, "scenario": self.scenario,
            "kind": self.kind, "reference": self.reference, "location": self.location,
            "domain": self.domain, "domain_path": self.domain_path, "artifact": self.artifact,
            "artifacts_affected": self.artifacts_affected, "examples": list(self.examples),
            "sources": list(self.sources), "message": self.message, "action": self.action,
            "runbook": self.runbook, "backup": dict(self.backup) if self.backup else None,
        }
