"""Credentials and keys that only the snapshot holds: the circular dependency.

A restore needs the audited target's credentials (to read the repository) and, when anything
is encrypted, the private key. When the only copy of either is inside the snapshot it unlocks,
nothing can be restored, whatever else survives. The audit sees it two ways:
  - the plan's targets[].credentials_location or encryption.key_location is placed nowhere
    and is something the snapshot itself provides (`secret:dr-system/dr-creds`: a Secret the kubernetes exporter
    backs up); the usual remap rule would call it covered, but the copy is behind the very
    thing it unlocks;
  - the plan declares no credentials_location for the audited (remote) target, and an object
    of the snapshot that runs dr's own image (dr's backup CronJob, found through dr_image)
    reads Secrets: those hold the credentials, and the only copy the plan knows of is the
    one in the cluster, which the snapshot holds. Without the plan key the audit could only
    warn that it cannot tell; now it names the workload and the Secrets.
Either is a `credentials-circular` blocker in every scenario (scenario None), and replaces the
unknown-location finding the same essential would otherwise get (one problem, counted once).
"""

from __future__ import annotations

from dr.audit.findings import BLOCKER, Finding
from dr.audit.gathering import DependencyIndex
from dr.model.recovery import CREDENTIALS, KEY, Essential

EXAMPLES = 5


def circular_findings(items: list[Essential], audited: str,
                      index: DependencyIndex) -> tuple[list[Finding], list[Essential]]:
    """The findings, and the essentials they replace (left out of unknown_findings)."""
    findings: list[Finding] = []
    replaced: list[Essential] = []
    for item in items:
        if item.role not in (CREDENTIALS, KEY) or (item.role == CREDENTIALS and item.owner != audited):
            continue
        if item.reference and item.domain is None and index.providers(item.reference):
            findings.append(_provided(item, index))
            replaced.append(item)
        elif item.role == CREDENTIALS and not item.reference and index.dr_workloads:
            found = _mounted(item, index.dr_workloads)
            if found is not None:
                findings.append(found)
                replaced.append(item)
    return findings, replaced


def _provided(item: Essential, index: DependencyIndex) -> Finding:
    copy = index.providers(item.reference)[0]
    what = (f"the credentials for target {item.owner} are" if item.role == CREDENTIALS
            else "the private key that decrypts secret content is")
    field = "targets[].credentials_location" if item.role == CREDENTIALS else "encryption.key_location"
    message = (f"{what} kept at '{item.reference}' ({field}), which nothing in the plan places, and the "
               f"only copy the audit knows of is {copy.artifact} in the snapshot it unlocks: restoring "
               f"that copy needs it first (circular), so nothing can be restored once the place it "
               f"lives now is lost")
    return Finding("credentials-circular", BLOCKER, message, kind=item.role, reference=item.reference,
                   artifact=copy.artifact, examples=[copy.artifact], sources=[copy.source])


def _mounted(item: Essential, workloads: dict[str, set[str]]) -> Finding | None:
    secrets = sorted({s for refs in workloads.values() for s in refs})
    if not secrets:
        return None
    readers = sorted(o for o, refs in workloads.items() if refs)
    message = (f"target {item.owner} is a remote store and the plan declares no credentials_location; "
               f"dr's own workload{'s' * (len(readers) != 1)} {', '.join(readers[:EXAMPLES])} read "
               f"{', '.join(secrets[:EXAMPLES])}, so the credentials live in that cluster and in the "
               f"snapshot they unlock: when the cluster is lost, opening the snapshot needs the Secret "
               f"inside it (circular)")
    action = (f"Keep a copy of target {item.owner}'s credentials outside every protected domain (another "
              "account's secret store, break-glass escrow), set targets[].credentials_location to it and "
              "place it with a location; the Secret in the cluster stays for the backup job.")
    return Finding("credentials-circular", BLOCKER, message, kind=item.role, reference=secrets[0],
                   artifact=readers[0], examples=readers[:EXAMPLES], action=action)
