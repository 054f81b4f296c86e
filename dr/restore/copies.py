"""Checking the copies exporters keep outside the repository, as a restore would (`dr verify`).

Where it sits: `dr verify` checks the repository (dr.repository.checking), then calls
check_outside_copies(): every source's exporter is asked, through the contract
(Exporter.verify_copies), to check the copies that its artifacts record (checkpoint DR copies,
images in DR registries) the way restore() checks them before reading, and (Exporter.check_artifacts)
what restore() would refuse in the catalog entries themselves. The snapshot checked
per source is the one a restore of `latest` would read (the newest holding it), or the one
--snapshot names. Read-only, and under the caller's shared lock.
"""

from __future__ import annotations

from dataclasses import dataclass

from dr.contract import CopyReport, ExportContext
from dr.contract.registry import PluginError, Registry
from dr.model.plans import Plan
from dr.repository import names
from dr.repository.catalogs import catalog_damage, read_catalog
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import IntegrityError, Repository


@dataclass
class SourceCopies:
    source: str
    snapshot: str
    reports: list[CopyReport]
    unchecked: str = ""  # why none could be checked: the catalog that records them is damaged

    def to_json(self) -> dict:
        return {"source": self.source, "snapshot": self.snapshot, "copies": [r.to_json() for r in self.reports],
                "unchecked": self.unchecked or None}


def check_outside_copies(plan: Plan, registry: Registry, repo: Repository, *, snapshot_ref: str | None = None,
                         read_data: bool = False, identities: list | None = None,
                         sources: set[str] | None = None) -> list[SourceCopies]:
    """Each source's outside copies, as restore would check them; `sources` limits which."""
    # a damaged manifest is dr verify's to report (dr.repository.checking); the copies of the others are checked
    snapshots = [repo.find_snapshot(snapshot_ref)] if snapshot_ref else repo.intact_snapshots()[0]
    reader = ArtifactReader(repo, identities)
    catalogs: dict[str, list | str] = {}  # a str: why the catalog cannot be read
    out = []
    for source in plan.spec.sources:
        if sources is not None and source.name not in sources:
            continue
        holding = [s for s in snapshots if source.name in s.source_names()]
        try:
            cls = registry.get(source.type)
        except PluginError:
            continue  # dr verify reports the plan's plugin problems when it loads the plan
        if not holding:
            continue
        snapshot = holding[-1]
        if snapshot.id not in catalogs:
            try:
                catalogs[snapshot.id] = names.open_all(read_catalog(repo, snapshot.catalog), identities or [])
            except IntegrityError as exc:  # what a restore of it would refuse: said, and the other sources go on
                catalogs[snapshot.id] = catalog_damage(snapshot.id, snapshot.catalog, exc)
        if isinstance(catalogs[snapshot.id], str):
            out.append(SourceCopies(source.name, snapshot.short_id, [], unchecked=catalogs[snapshot.id]))
            continue
        mine = [a for a in catalogs[snapshot.id] if a.source == source.name]
        context = ExportContext(source.name, plan.options[source.name], plan.base_dir, source.sensitivity)
        exporter = cls(context)
        # a sealed line no identity opened has its facts in ciphertext (format.md 8.1): they are
        # checked when dr verify gets the identity; its copies are read through the reader, which
        # says what it cannot decrypt
        opened = [a for a in mine if not names.is_sealed(a)]
        reports = _catalog_report(exporter.check_artifacts(opened), snapshot.short_id, source.name)
        reports += exporter.verify_copies(mine, reader, read_data)
        if reports:
            out.append(SourceCopies(source.name, snapshot.short_id, reports))
    return out


def _catalog_report(problems: list[str], snapshot: str, source: str) -> list[CopyReport]:
    """What the exporter would refuse in the catalog, as one report beside its copies."""
    if not problems:
        return []
    return [CopyReport(f"snapshot {snapshot}'s catalog", f"{source}'s catalog entries", problems)]
