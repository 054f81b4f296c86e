"""Credentials and keys that only the snapshot holds: the circular dependency, judged once.

A restore needs the audited target's credentials (to read the repository) and, when anything
is encrypted, the private key. When the only copy of either is inside the snapshot it unlocks,
nothing can be restored once the place it lives now is lost. Two ways to see it:
  - the plan's targets[].credentials_location or encryption.key_location is placed nowhere
    and is something the snapshot itself provides (`secret:dr-system/dr-creds`: a Secret the
    kubernetes exporter backs up); the usual remap rule would call it covered, but the copy is
    behind the very thing it unlocks;
  - the plan declares no credentials_location for the (remote) target, and an object of the
    snapshot that runs dr's own image (dr's backup CronJob, found through dr_image) reads
    Secrets: those hold the credentials, and the only copy the plan knows of is the one in the
    cluster, which the snapshot holds.
The audit makes each a `credentials-circular` blocker (dr.audit.credentials); a restore in a
failure scenario makes it a blocker need of every step, and of the step that restores the Secret
(dr.planner.needs): the same verdict, from this one judgement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from dr.model.artifacts import Artifact
from dr.model.locations import canonical_image
from dr.model.recovery.copies import Copy, artifact_name
from dr.model.recovery.essentials import CREDENTIALS, KEY, Essential

EXAMPLES = 5
_OBJECT = re.compile(r"^[A-Z][A-Za-z0-9]*/[^/\s]+")  # Kind/name or Kind/namespace/name


@dataclass(frozen=True)
class Circular:
    """An essential whose only copy is inside the snapshot it opens."""

    item: Essential
    reference: str  # the declared location, or the first Secret dr's workload reads
    copy: Copy | None = None  # the snapshot's copy (declared location)
    readers: tuple[str, ...] = ()  # dr's workloads reading the Secrets (undeclared location)
    secrets: tuple[str, ...] = ()  # the Secrets they read

    @property
    def references(self) -> tuple[str, ...]:
        """Every reference the circle runs through: what a restore must not call covered."""
        return self.secrets or (self.reference,)

    @property
    def message(self) -> str:
        item = self.item
        if self.copy is not None:
            what = (f"the credentials for target {item.owner} are" if item.role == CREDENTIALS
                    else "the private key that decrypts secret content is")
            field = "targets[].credentials_location" if item.role == CREDENTIALS else "encryption.key_location"
            return (f"{what} kept at '{item.reference}' ({field}), which nothing in the plan places, and the "
                    f"only copy known is {self.copy.artifact} in the snapshot it unlocks: restoring "
                    f"that copy needs it first (circular), so nothing can be restored once the place it "
                    f"lives now is lost")
        readers = self.readers
        return (f"target {item.owner} is a remote store and the plan declares no credentials_location; "
                f"dr's own workload{'s' * (len(readers) != 1)} {', '.join(readers[:EXAMPLES])} read "
                f"{', '.join(self.secrets[:EXAMPLES])}, so the credentials live in that cluster and in the "
                f"snapshot they unlock: when the cluster is lost, opening the snapshot needs the Secret "
                f"inside it (circular)")


def circular(items: Iterable[Essential], audited: str, providers: Callable[[str], list[Copy]],
             dr_workloads: dict[str, set[str]]) -> list[Circular]:
    """The essentials that only the snapshot holds: the audited target's credentials, the key."""
    found: list[Circular] = []
    for item in items:
        if item.role not in (CREDENTIALS, KEY) or (item.role == CREDENTIALS and item.owner != audited):
            continue
        copies = providers(item.reference) if item.reference and item.domain is None else []
        if copies:
            found.append(Circular(item, item.reference, copy=copies[0]))
        elif item.role == CREDENTIALS and not item.reference:
            secrets = sorted({s for refs in dr_workloads.values() for s in refs})
            if secrets:
                readers = tuple(sorted(o for o, refs in dr_workloads.items() if refs))
                found.append(Circular(item, secrets[0], readers=readers, secrets=tuple(secrets)))
    return found


def workload_secrets(whole: str, dependencies: Iterable[tuple[str, str, str]],
                     runs_dr: Callable[[str, str], bool]) -> dict[str, set[str]]:
    """The Secrets read by each object of one artifact that runs dr's image.

    dependencies: (kind, reference, detail). An object is named by the first word of a
    dependency's detail (`CronJob/ns/name .spec...`, as the kubernetes scan writes it: a
    capitalised kind, a slash); an artifact whose details name no object counts as one object,
    `whole`."""
    by_object: dict[str, list[tuple[str, str]]] = {}
    for kind, reference, detail in dependencies:
        first = str(detail).split(" ", 1)[0]
        by_object.setdefault(first if _OBJECT.match(first) else whole, []).append((kind, reference))
    return {owner: {ref for kind, ref in deps if kind == "secret"} for owner, deps in by_object.items()
            if any(runs_dr(kind, ref) for kind, ref in deps)}


def dr_image_matcher(dr_image: str | None) -> Callable[[str, str], bool]:
    """(kind, reference) -> whether it is dr's own image (the plan's dr_image, registry written out)."""
    if not dr_image:
        return lambda kind, reference: False
    wanted = canonical_image(dr_image)
    return lambda kind, reference: kind == "image" and canonical_image(reference) == wanted


def dr_workloads(artifacts: Iterable[Artifact], dr_image: str | None) -> dict[str, set[str]]:
    """Objects of these artifacts that run dr's image -> the Secrets they read (as the audit's
    catalog pass finds them, dr.audit.gathering)."""
    mine = dr_image_matcher(dr_image)
    found: dict[str, set[str]] = {}
    if not dr_image:
        return found
    for artifact in artifacts:
        deps = [(d.kind, d.reference, d.detail) for d in artifact.dependencies]
        for owner, secrets in workload_secrets(artifact_name(artifact), deps, mine).items():
            found.setdefault(owner, set()).update(secrets)
    return found
