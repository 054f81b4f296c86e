"""Gathering a snapshot's dependencies: one streaming pass over its catalog.

A catalog can hold a million dependency references, most of them repeats (every pod of a
deployment names the same image). The pass keeps one record per distinct (kind, reference)
with a count, the sources and a few example artifacts, and the index of what the snapshot's
artifacts provide (meta['provides'], see dr.audit). Memory grows with distinct references,
never with the catalog's length; judging then runs once per distinct reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from dr.model.recovery import Copy, normalize, provided_in
from dr.model.recovery.circular import dr_image_matcher, workload_secrets
from dr.repository.names import ProvidedCopies

Record = dict[str, Any]  # one parsed catalog line (docs/format.md, "The catalog")

EXAMPLES = 5  # example artifacts kept per distinct reference
PROVIDERS = 3  # providing artifacts kept per provided reference


@dataclass(slots=True)
class DependencyUse:
    """One distinct (kind, reference) and who needs it."""

    kind: str
    reference: str
    count: int = 0  # how many times artifacts record it
    sources: set[str] = field(default_factory=set)
    examples: list[str] = field(default_factory=list)
    detail: str = ""  # the first detail recorded (where in the artifact it was found)
    mine: bool = False  # an image reference that is dr's own image (dr_image)


@dataclass
class DependencyIndex:
    uses: dict[tuple[str, str], DependencyUse] = field(default_factory=dict)
    provides: ProvidedCopies = field(default_factory=lambda: ProvidedCopies())
    artifacts: int = 0
    references: int = 0
    encrypted: int = 0  # artifacts whose content needs the private key to read
    sources: set[str] = field(default_factory=set)
    # objects that run dr's own image (`Kind/ns/name`, from the dependency details) -> the
    # Secrets they read: where dr's backup job gets its credentials
    dr_workloads: dict[str, set[str]] = field(default_factory=dict)

    def providers(self, reference: str) -> list[Copy]:
        return self.provides.get(normalize(reference), [])


def artifact_name(record: Record) -> str:
    return f"{record['source']}/{record['kind']}/{record['identity']}"


def gather(records: Iterable[Record], dr_image: str | None = None, name_key: bytes = b"") -> DependencyIndex:
    """The index of a catalog's lines, as dr.repository.catalogs.read_catalog_records yields them.

    Lines, not Artifact objects: building one Dependency per reference cost more than this
    whole pass, which keeps only the distinct ones. dr_image: the plan's, to find the objects
    that run dr itself (index.dr_workloads). name_key: what secret artifacts' keyed `provides`
    are matched with (dr.repository.names).
    """
    index = DependencyIndex(provides=ProvidedCopies(name_key))
    mine = dr_image_matcher(dr_image)
    for record in records:
        index.artifacts += 1
        index.encrypted += bool(record.get("encrypted", False))
        index.sources.add(record["source"])
        if _add_uses(index.uses, record, mine):
            _add_dr_workloads(index.dr_workloads, record, index.uses)
        provided = provided_in(record.get("meta"))
        if provided:
            _add_provider(index, record, provided)
    index.references = sum(use.count for use in index.uses.values())  # each counted in one use
    return index


def _add_uses(uses: dict[tuple[str, str], DependencyUse], record: Record, mine) -> bool:
    """Count the line's references into uses; the inner loop of the audit, so kept lean.
    True when one of them is dr's own image (decided once per distinct reference)."""
    source = record["source"]
    name = None
    runs_dr = False
    for dep in record.get("dependencies", []):
        key = (dep["kind"], dep["reference"])
        use = uses.get(key)
        if use is None:
            use = uses[key] = DependencyUse(key[0], key[1], 0, set(), [], dep.get("detail", ""),
                                            mine(key[0], key[1]))
        runs_dr = runs_dr or use.mine
        use.count += 1
        use.sources.add(source)
        examples = use.examples
        if len(examples) < EXAMPLES:
            name = name or artifact_name(record)
            if not examples or examples[-1] != name:
                examples.append(name)
    return runs_dr


def _add_dr_workloads(found: dict[str, set[str]], record: Record,
                      uses: dict[tuple[str, str], DependencyUse]) -> None:
    """The Secrets read by each object of the line that runs dr's image (the engine's rule)."""
    deps = [(dep["kind"], dep["reference"], dep.get("detail", "")) for dep in record.get("dependencies", [])]
    for owner, secrets in workload_secrets(artifact_name(record), deps, lambda k, r: uses[(k, r)].mine).items():
        found.setdefault(owner, set()).update(secrets)


def _add_provider(index: DependencyIndex, record: Record, provided: list[str]) -> None:
    provider = Copy(artifact_name(record), record["source"], tuple(record.get("chunks", [])))
    for ref in provided:
        found = index.provides.setdefault(normalize(ref), [])
        if len(found) < PROVIDERS:
            found.append(provider)
