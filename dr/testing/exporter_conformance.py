"""The exporter conformance suite: one set of checks every exporter passes, built-ins included.

Where it sits: above dr.backup, dr.restore and dr.audit (beside dr.drills). It drives the
exporter as dr does: a real plan file, a repository on disk, `run_backup` with the real
snapshot writer (so change tokens and reuse are exercised), `run_restore` with the real
verifying reader, and the audit's own matching of discovered items against a snapshot
(dr.audit.coverage). Modelled on kopia's blobtesting.VerifyStorage: each check is a clause of
the contract in docs/exporters.md and raises AssertionError naming the clause and the items
that break it. No test framework is imported.

    suite = ExporterConformance(MyFixture(), workdir)     # a ConformanceFixture
    suite.check_second_restore_is_unchanged()             # one check, or:
    verify_exporter(MyFixture(), workdir)                 # every check, all failures listed
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from importlib.metadata import EntryPoint
from typing import Any, Iterable

import pyrage
import yaml

from dr.audit.coverage import HeldIdentities
from dr.audit.gathering import normalize
from dr.backup import BackupResult, run_backup
from dr.contract import ExportContext, Exporter, Outcome, RestoreRequest
from dr.contract import OutcomeStatus as Status
from dr.contract.registry import GROUP, Registry
from dr.model.artifacts import Artifact
from dr.model.plan_loading import parse_plan
from dr.model.plans import Plan
from dr.model.recovery import provided_in
from dr.model.redaction import redact
from dr.repository import names
from dr.repository.catalogs import read_catalog
from dr.repository.encryption import generate_identity
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import Repository
from dr.repository.targets import open_target
from dr.restore import run_restore
from dr.testing.declarations import declaration_problems, planning_problems
from dr.testing.exporter_fixtures import ConformanceFixture, NotChecked
from dr.testing.source_checks import SourceChecks

__all__ = ["CHECKS", "ConformanceFixture", "ConformanceWarning", "ExporterConformance", "NotChecked",
           "verify_exporter"]

#: every check, in the order verify_exporter runs them (method names without `check_`)
CHECKS = ("discover_agrees_with_export", "second_export_reuses_everything",
          "dependencies_and_provides_are_well_formed", "every_item_has_an_outcome_and_a_reason",
          "dry_run_changes_nothing", "second_restore_is_unchanged", "conflict_until_overwrite",
          "failing_source_does_not_hide_others", "declarations_are_well_formed", "restore_equals_source",
          "changed_source_is_read_again")  # last: it changes the source the others back up
SOURCE = "conformance"
_SETTLED = (Status.RESTORED, Status.UNCHANGED, Status.SKIPPED)


class ConformanceWarning(UserWarning):
    """verify_exporter passed, but some checks did not run (NotChecked)."""


def plugin_registry(exporter: type[Exporter]) -> Registry:
    """A registry holding only `exporter`, loaded as dr loads any plugin (the same checks of
    type_name and contract_version), whether or not it is installed under an entry point."""
    value = f"{exporter.__module__}:{exporter.__qualname__}"
    return Registry([EntryPoint(exporter.type_name, value, GROUP)])


def _members_discovered(artifact: Artifact, versioned: set[str]) -> bool:
    """An artifact holding several members (meta['members']) is discovered when each is."""
    members = artifact.meta.get("members")
    return isinstance(members, dict) and bool(members) and set(members) <= versioned


def _require(condition: Any, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _listed(items: Iterable[Any], limit: int = 8) -> str:
    items = sorted(str(i) for i in items)
    more = f" ... and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def _shown(outcomes: Iterable[Outcome]) -> str:
    return _listed(f"{o.status.value} {o.item}: {o.reason}" for o in outcomes)


class ExporterConformance(SourceChecks):
    """The checks, over one fixture. The first backup is shared; each restoring check gets a
    new destination from the fixture."""

    def __init__(self, fixture: ConformanceFixture, workdir: str, registry: Registry | None = None):
        self.fixture = fixture
        self.workdir = os.path.abspath(workdir)
        self.registry = registry or plugin_registry(fixture.exporter)
        identity, self._recipient = generate_identity()
        self._identities = [pyrage.x25519.Identity.from_str(identity)]
        self.source_dir = os.path.join(self.workdir, "source")
        os.makedirs(self.source_dir)
        fixture.build_source(self.source_dir)
        self.plan = self._plan("plan", {SOURCE: fixture.source_options()})
        self._first: BackupResult | None = None
        self._exported: list[Artifact] | None = None
        self._expected: set[str] | None = None
        self._source_changed = False

    @property
    def name(self) -> str:
        return self.fixture.exporter.type_name

    # -- dr's own machinery, as the commands use it -----------------------------------------
    def _plan(self, label: str, sources: dict[str, dict]) -> Plan:
        common = {"type": self.name, **({"sensitivity": self.fixture.sensitivity} if self.fixture.sensitivity else {})}
        spec = {"version": 1, "name": "conformance",
                "failure_domains": [{"name": "site-a", "kind": "site"}, {"name": "site-b", "kind": "site"}],
                "protects_against": ["site-a"], "encryption": {"recipients": [self._recipient]},
                "targets": [{"name": "dr", "url": os.path.join(self.workdir, f"{label}-repository"),
                             "domain": "site-b"}],
                "sources": [{"name": name, **common, **options} for name, options in sources.items()]}
        # The plan's folder is the fixture's: relative paths in options resolve against it. The
        # file is not written there (the source folder holds the source only).
        path = os.path.join(self.source_dir, f"{label}.yaml")
        return parse_plan(yaml.safe_dump(spec, sort_keys=False), path, self.registry)

    def _repository(self, plan: Plan) -> Repository:
        return open_target(plan, plan.target("dr"))

    def _backup(self, plan: Plan) -> BackupResult:
        [result] = run_backup(plan, self.registry)
        _require(result.snapshot is not None,
                 f"{self.name}: the backup wrote no snapshot: {[s.to_json() for s in result.sources]}")
        return result

    def _artifacts(self, plan: Plan, result: BackupResult, source: str = SOURCE) -> list[Artifact]:
        """The source's lines with their sealed names opened, as dr restore reads them (format.md 8.1)."""
        lines = read_catalog(self._repository(plan), result.snapshot.catalog)
        return names.open_all([a for a in lines if a.source == source], self._identities)

    @property
    def first_backup(self) -> BackupResult:
        if self._first is None:
            result = self._backup(self.plan)
            _require(not result.failed_sources, f"{self.name}: the fixture's source did not back up cleanly: "
                                                f"{[s.to_json() for s in result.failed_sources]}")
            self._first = result
        return self._first

    @property
    def artifacts(self) -> list[Artifact]:
        """The first backup's artifacts of the fixture's source."""
        if self._exported is None:
            artifacts = self._artifacts(self.plan, self.first_backup)
            _require(len(artifacts) > 1, f"{self.name}: the fixture's source must export more than one artifact "
                                         f"(got {len(artifacts)})")
            self._exported = artifacts
        return self._exported

    def _restore(self, to: str, label: str, *, dry_run: bool = False, overwrite: bool = False,
                 backup: BackupResult | None = None) -> dict[str, Outcome]:
        """One `dr restore --source` of the first snapshot (or `backup`'s); its outcomes checked, by item."""
        request = RestoreRequest(to=to, dry_run=dry_run, overwrite=overwrite, remap=dict(self.fixture.remap()))
        snapshot = (backup or self.first_backup).snapshot.id
        result = run_restore(self.plan, self.registry, SOURCE, snapshot, request=request, identities=self._identities)
        expected = self._expected_items() if backup is None else self._items_of(self._artifacts(self.plan, backup))
        return self._checked(result.outcomes, label, expected)

    def _items_of(self, artifacts: list[Artifact]) -> set[str]:
        reader = ArtifactReader(self._repository(self.plan), self._identities)
        return set(self.fixture.expected_items(artifacts, reader))

    def _expected_items(self) -> set[str]:
        if self._expected is None:
            self._expected = self._items_of(self.artifacts)
        return self._expected

    def _checked(self, outcomes: list[Outcome], label: str, expected: set[str]) -> dict[str, Outcome]:
        """Every item once, each with an OutcomeStatus and a reason (the contract's 'one outcome
        per item, each with a reason')."""
        where = f"{self.name}: {label}"
        for o in outcomes:
            _require(isinstance(o, Outcome) and isinstance(o.status, Status),
                     f"{where}: {o!r} is not an Outcome with an OutcomeStatus")
            _require(isinstance(o.item, str) and o.item.strip(), f"{where}: an outcome names no item: {o!r}")
            _require(isinstance(o.reason, str) and o.reason.strip(),
                     f"{where}: {o.status.value} {o.item} has no reason (every outcome needs one)")
        twice = [item for item, n in Counter(o.item for o in outcomes).items() if n > 1]
        _require(not twice, f"{where}: items with more than one outcome: {_listed(twice)}")
        got = {o.item for o in outcomes}
        _require(got == expected, f"{where}: items without an outcome: {_listed(expected - got) or 'none'}; "
                                  f"outcomes for unknown items: {_listed(got - expected) or 'none'}")
        return {o.item: o for o in outcomes}

    def _restored(self, to: str, label: str, backup: BackupResult | None = None) -> dict[str, Outcome]:
        """A first restore into a new destination, which must succeed."""
        outcomes = self._restore(to, label, backup=backup)
        bad = [o for o in outcomes.values() if o.status not in _SETTLED]
        _require(not bad, f"{self.name}: {label}: a restore into a new destination did not succeed: {_shown(bad)}")
        _require(any(o.status == Status.RESTORED for o in outcomes.values()),
                 f"{self.name}: {label}: a restore into a new destination restored nothing")
        return outcomes

    def _all_unchanged(self, outcomes: dict[str, Outcome], first: dict[str, Outcome], label: str,
                       but: str | None = None, planned: bool = False) -> None:
        """Every item UNCHANGED, but those the first restore deliberately SKIPPED (and `but`).
        `planned`: a dry run, which may say PLANNED for what it does not compare."""
        ok = {Status.UNCHANGED, Status.PLANNED} if planned else {Status.UNCHANGED}
        bad = [o for item, o in outcomes.items() if item != but
               and o.status not in ({Status.SKIPPED} if first[item].status == Status.SKIPPED else ok)]
        _require(not bad, f"{self.name}: {label}: expected every item unchanged (skipped ones skipped), got: "
                          f"{_shown(bad)}")

    # -- the checks -------------------------------------------------------------------------
    def check_discover_agrees_with_export(self) -> None:
        """Everything discover() finds, export() writes, and nothing else: matched as the
        audit's coverage matches (kind and identity, or an identity in meta['provides']; a
        discovered item with a `version` is a member that an artifact's meta['members'] lists,
        at that version)."""
        self._unchanged_source()
        exported = self.artifacts
        source = self.plan.source(SOURCE)
        context = ExportContext(SOURCE, self.plan.options[SOURCE], self.plan.base_dir, source.sensitivity)
        discovered = list(self.registry.get(self.name)(context).discover())
        held = HeldIdentities()
        list(held.record(a.to_json() for a in exported))
        members = held.members.get(SOURCE, {})
        missing = [f"{d.kind} {d.identity}" for d in discovered
                   if (members.get(d.identity) != d.version if d.version else not held.holds(SOURCE, d))]
        _require(not missing, f"{self.name}: discover() found what export() did not write: {_listed(missing)}")
        pairs = {(d.kind, d.identity) for d in discovered}
        references = {normalize(d.identity) for d in discovered}
        versioned = {d.identity for d in discovered if d.version}
        unfound = [f"{a.kind} {a.identity}" for a in exported if (a.kind, a.identity) not in pairs
                   and not any(normalize(p) in references for p in provided_in(a.meta))
                   and not _members_discovered(a, versioned)]
        _require(not unfound, f"{self.name}: export() wrote what discover() does not name: {_listed(unfound)}")

    def check_second_export_reuses_everything(self) -> None:
        """A second backup of unchanged data reads and uploads nothing: every artifact is reused
        through its change token, with the same content as before."""
        self._unchanged_source()
        first = self.first_backup
        second = self._backup(self.plan)
        stats = second.snapshot.stats
        before = {(a.kind, a.identity): a for a in self.artifacts}
        after = {(a.kind, a.identity): a for a in self._artifacts(self.plan, second)}
        _require(before.keys() == after.keys(),
                 f"{self.name}: a second export wrote other artifacts: new {_listed(after.keys() - before.keys())}, "
                 f"gone {_listed(before.keys() - after.keys())}")
        changed = [f"{k} {i}" for (k, i), a in after.items() if a.chunks != before[(k, i)].chunks]
        untokened = [f"{k} {i}" for (k, i), a in after.items() if not a.meta.get("change_token")]
        _require(not changed and not untokened and stats["artifacts_reused"] == stats["artifacts"],
                 f"{self.name}: a second export of unchanged data reused {stats['artifacts_reused']} of "
                 f"{stats['artifacts']} artifacts; content changed: {_listed(changed) or 'none'}; without a "
                 f"change token: {_listed(untokened) or 'none'}")
        catalog = 0 if second.snapshot.catalog == first.snapshot.catalog else 1
        new = {"bytes_read": stats["bytes_read"], "bytes_transferred": stats["bytes_transferred"],
               "content blobs uploaded": stats["blobs_uploaded"] - catalog}
        _require(not any(new.values()), f"{self.name}: a second export of unchanged data moved content: {new}")

    def check_dependencies_and_provides_are_well_formed(self) -> None:
        """Dependency kinds and references are non-empty strings; meta['provides'] is a string
        or a list of non-empty strings; no credentials in identities, meta or dependencies."""
        problems: list[str] = []
        for a in self.artifacts:
            problems += [f"{a.identity}: {p}" for p in _artifact_problems(a)]
        _require(not problems, f"{self.name}: malformed artifacts: {_listed(problems)}")

    def check_every_item_has_an_outcome_and_a_reason(self) -> None:
        """A dry run and a restore each report every item once, each with a status and reason."""
        to = self.fixture.destination()
        planned = self._restore(to, "dry-run restore", dry_run=True)
        restored = self._restored(to, "restore")
        _require(planned.keys() == restored.keys(), f"{self.name}: the dry run and the restore name other items")

    def check_dry_run_changes_nothing(self) -> None:
        """A dry run changes nothing at the destination, and yields PLANNED, never RESTORED."""
        to = self.fixture.destination()
        before = self.fixture.fingerprint(to)
        outcomes = self._restore(to, "dry-run restore", dry_run=True)
        _require(self.fixture.fingerprint(to) == before, f"{self.name}: a dry-run restore changed the destination")
        bad = [o for o in outcomes.values() if o.status not in (Status.PLANNED, Status.UNCHANGED, Status.SKIPPED)]
        _require(not bad, f"{self.name}: a dry run may only say planned, unchanged or skipped: {_shown(bad)}")
        _require(any(o.status == Status.PLANNED for o in outcomes.values()),
                 f"{self.name}: a dry run into a new destination planned nothing")

    def check_second_restore_is_unchanged(self) -> None:
        """Restoring again into a restored destination says UNCHANGED and changes nothing."""
        to = self.fixture.destination()
        first = self._restored(to, "first restore")
        restored = self.fixture.fingerprint(to)
        self._all_unchanged(self._restore(to, "second restore"), first, "second restore")
        _require(self.fixture.fingerprint(to) == restored, f"{self.name}: a second restore changed the destination")

    def check_conflict_until_overwrite(self) -> None:
        """An item that differs at the destination is CONFLICT (nothing replaced) until
        overwrite: then a dry run plans it, a restore says RESTORED, and the next UNCHANGED."""
        to = self.fixture.destination()
        first = self._restored(to, "first restore")
        restored = self.fixture.fingerprint(to)
        item = self.fixture.perturb(to)
        perturbed = self.fixture.fingerprint(to)
        _require(item in first, f"{self.name}: the fixture perturbed {item!r}, which no outcome names")
        _require(perturbed != restored, f"{self.name}: the fixture's perturb({item!r}) did not change its fingerprint")
        steps = [("restore without overwrite", {}, Status.CONFLICT),
                 ("dry run with overwrite", {"dry_run": True, "overwrite": True}, Status.PLANNED)]
        for label, flags, wanted in steps:
            outcomes = self._restore(to, label, **flags)
            _require(outcomes[item].status == wanted,
                     f"{self.name}: {label}: {item} differs, expected {wanted.value}: {_shown([outcomes[item]])}")
            self._all_unchanged(outcomes, first, label, but=item, planned=flags.get("dry_run", False))
            _require(self.fixture.fingerprint(to) == perturbed, f"{self.name}: {label} changed the destination")
        outcomes = self._restore(to, "restore with overwrite", overwrite=True)
        _require(outcomes[item].status == Status.RESTORED,
                 f"{self.name}: restore with overwrite: {item} differs, expected restored: {_shown([outcomes[item]])}")
        self._all_unchanged(outcomes, first, "restore with overwrite", but=item)
        self._all_unchanged(self._restore(to, "restore after overwrite"), first, "restore after overwrite")
        _require(self.fixture.fingerprint(to) == restored,
                 f"{self.name}: after the overwrite the destination does not hold what the first restore left")

    def check_declarations_are_well_formed(self) -> None:
        """Contract v2: what the exporter declares (remap kinds, origin kinds, ordering, restore
        options) is well-formed, and what the planner asks of it about the exported artifacts
        (destinations, scratch destination, any-of needs, RTO bytes) answers in the contract's
        terms, without I/O errors."""
        source = self.plan.source(SOURCE)
        context = ExportContext(SOURCE, self.plan.options[SOURCE], self.plan.base_dir, source.sensitivity)
        exporter = self.registry.get(self.name)(context)
        problems = declaration_problems(type(exporter)) + planning_problems(exporter, self.artifacts)
        _require(not problems, f"{self.name}: contract v2 answers are malformed: {_listed(problems)}")

    def check_failing_source_does_not_hide_others(self) -> None:
        """A plan with a broken source of this exporter and a good one: the snapshot holds the
        good one's artifacts, and its manifest names the broken one with a reason."""
        self._unchanged_source()
        plan = self._plan("two-sources", {"good": self.fixture.source_options(),
                                          "broken": self.fixture.broken_options()})
        result = self._backup(plan)
        stored = self._repository(plan).find_snapshot(result.snapshot.id)
        by_name = {s.name: s for s in stored.sources}
        good, broken = by_name["good"], by_name["broken"]
        _require(good.ok and not _errors(good.findings),
                 f"{self.name}: the good source failed beside a broken one: {good.to_json()}")
        reasons = [broken.error] + [f.get("message", "") for f in _errors(broken.findings)]
        _require(any(r.strip() for r in reasons), f"{self.name}: the broken source is not reported with a reason in "
                                                  f"the manifest (no error, no error finding): {broken.to_json()}")
        _require("broken" in {s.name for s in result.failed_sources},
                 f"{self.name}: the backup does not count the broken source as failed")
        wanted = {(a.kind, a.identity) for a in self.artifacts}
        held = {(a.kind, a.identity) for a in self._artifacts(plan, result, "good")}
        _require(held == wanted, f"{self.name}: beside a broken source the good one lacks "
                                 f"{_listed(wanted - held) or 'nothing'} and has "
                                 f"{_listed(held - wanted) or 'nothing'} more")



def _errors(findings: list[dict]) -> list[dict]:
    return [f for f in findings if f.get("severity") in ("error", "blocker")]


def _artifact_problems(a: Artifact) -> Iterable[str]:
    for d in a.dependencies:
        if not (isinstance(d.kind, str) and d.kind.strip()):
            yield f"a dependency with kind {d.kind!r}"
        if not (isinstance(d.reference, str) and d.reference.strip()):
            yield f"a {d.kind} dependency with reference {d.reference!r}"
        elif redact(d.reference) != d.reference or redact(d.detail) != d.detail:
            yield f"a {d.kind} dependency holds credentials ({redact(d.reference)})"
    provides = a.meta.get("provides")
    if provides is not None:
        refs = [provides] if isinstance(provides, str) else provides
        if not isinstance(refs, list) or not all(isinstance(r, str) and r.strip() for r in refs):
            yield f"meta['provides'] is {provides!r}: a non-empty string or a list of them"
    leaks = [s for s in [a.identity, *_strings(a.meta)] if redact(s) != s]
    if leaks:
        yield f"credentials in its identity or meta ({_listed(redact(s) for s in leaks)})"


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def verify_exporter(fixture: ConformanceFixture, workdir: str, registry: Registry | None = None) -> list[str]:
    """Run every check; raise one AssertionError listing each failed check and why. Return the
    checks that did not run (NotChecked), each with why, after warning of them."""
    try:
        suite = ExporterConformance(fixture, workdir, registry)
        failures, unchecked = [], []
        for name in CHECKS:
            try:
                getattr(suite, f"check_{name}")()
            except AssertionError as exc:
                failures.append(f"{name}: {exc}")
            except NotChecked as exc:
                unchecked.append(f"{name}: {exc}")
    finally:
        fixture.close()
    _require(not failures, f"{len(failures)} of {len(CHECKS)} conformance checks failed:\n"
                           + "\n".join(failures + unchecked))
    if unchecked:
        warnings.warn(ConformanceWarning(f"{len(unchecked)} of {len(CHECKS)} conformance checks did not run:\n"
                                         + "\n".join(unchecked)), stacklevel=2)
    return unchecked
