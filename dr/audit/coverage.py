"""Coverage (`dr audit --live`): what exists at the sources now but the audited snapshot lacks.

For each plan source backed up to the audited target and held by the audited snapshot, dr
builds the source's exporter and calls discover(): what exists now, without reading content.
A discovered item is held by the snapshot when an artifact of the same source has
  - the same kind and identity (files: one per path, git: one per repository name,
    kubernetes: one per type/namespace batch and per Helm release, exactly as export writes
    them, since the kubernetes exporter discovers by running its export into a recorder), or
  - the discovered identity in meta['provides'] (checkpoints: the DR copy record provides the
    checkpoint's source URL), compared as dr.audit.gathering.normalize compares.
Anything else is `not-backed-up` (a warning, a blocker under strict).

Per member (docs/exporters.md, `Discovered`): an artifact may list the items it holds with a
version each (meta['members']: kubernetes objects with their resourceVersion), and discover()
yield them one by one with `version` set. Those are compared member by member, cheaply (names
and versions, no content): new ones are `not-backed-up`, those with another version
`changed-since-backup` (info: the snapshot holds an older state), those no longer discovered
`deleted-since-backup` (warning: a restore would bring them back). One finding per source, kind
of change and group (the identity's first part: the resource type), with the count and the
first EXAMPLES members. Unversioned items of an artifact kind that carries members are not
compared again as a whole. A source whose exporter
cannot be built or whose discover() raises is `coverage-unknown` (a warning, the error
redacted). A source the snapshot does not hold is left to staleness (`stale-backup`).
Findings hold in every scenario (scenario None). At most MAX_PER_SOURCE findings per source;
the rest are folded into one finding that counts them and names a few examples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Protocol

from dr.audit.findings import BLOCKER, INFO, WARNING, Finding
from dr.audit.gathering import Record, normalize
from dr.contract import Discovered, ExportContext, Exporter
from dr.model.plans import Plan, TargetSpec
from dr.model.recovery import provided_in
from dr.repository.names import keyed

MAX_PER_SOURCE = 50
EXAMPLES = 5


class ExporterLookup(Protocol):
    """What coverage needs from dr.contract.registry.Registry."""

    def get(self, name: str) -> type[Exporter]: ...


@dataclass
class HeldIdentities:
    """What one snapshot holds, per source: (kind, identity) pairs and provided references."""

    items: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    provided: dict[str, set[str]] = field(default_factory=dict)
    members: dict[str, dict[str, str]] = field(default_factory=dict)  # source -> member -> version
    member_kinds: dict[str, set[str]] = field(default_factory=dict)  # artifact kinds carrying them
    name_key: bytes = b""  # the plan's (dr.repository.names): a secret artifact is held by its keyed identity

    def record(self, records: Iterable[Record]) -> Iterator[Record]:
        """Pass catalog lines through (to dr.audit.gathering.gather), remembering what they are."""
        for record in records:
            source = record["source"]
            self.items.setdefault(source, set()).add((record["kind"], record["identity"]))
            provided = provided_in(record.get("meta"))
            if provided:
                self.provided.setdefault(source, set()).update(map(normalize, provided))
            members = (record.get("meta") or {}).get("members")
            if isinstance(members, dict):
                self.members.setdefault(source, {}).update(members)
                self.member_kinds.setdefault(source, set()).add(record["kind"])
            yield record

    def holds(self, source: str, item: Discovered) -> bool:
        items = self.items.get(source, ())
        return ((item.kind, item.identity) in items
                or (item.kind, keyed(self.name_key, f"{item.kind}\x00{item.identity}")) in items
                or normalize(item.identity) in self.provided.get(source, ()))


def coverage_findings(plan: Plan, target: TargetSpec, held: HeldIdentities, snapshot_sources: list[str],
                      exporters: ExporterLookup, strict: bool = False) -> list[Finding]:
    findings: list[Finding] = []
    severity = BLOCKER if strict else WARNING
    for source in plan.spec.sources:
        if source.targets and target.name not in source.targets:
            continue  # backed up to other targets only
        if source.name not in snapshot_sources:
            continue  # nothing of it in the snapshot: stale-backup says so
        try:
            context = ExportContext(source.name, plan.options.get(source.name), plan.base_dir,
                                    source.sensitivity)
            exporter = exporters.get(source.type)(context)
            discovered = list(exporter.discover())
        except Exception as exc:  # any failure: coverage of this source is unknown, not fatal
            findings.append(Finding(
                "coverage-unknown", WARNING,
                f"source {source.name} ({source.type}): discover() failed, so the audit cannot tell "
                f"what exists there but is not backed up: {type(exc).__name__}: {exc}",
                kind="source", reference=source.name, sources=[source.name]))
            continue
        member_kinds = held.member_kinds.get(source.name, set())
        whole = [i for i in discovered if not i.version and i.kind not in member_kinds]
        missing = [item for item in whole if not held.holds(source.name, item)]
        findings += _missing_findings(source.name, missing, severity)
        if member_kinds:
            findings += _member_findings(source.name, [i for i in discovered if i.version],
                                         held.members.get(source.name, {}), severity)
    return findings


def _action(source: str) -> str:
    return (f"Run dr backup --plan PLAN --source {source} so the next snapshot holds it; if a backup "
            f"would still leave it out (a path, namespace or repository outside the source's options), "
            f"add it to source {source} or to another source in the plan, then back up and audit again.")


def _missing_findings(source: str, missing: list[Discovered], severity: str) -> list[Finding]:
    shown, rest = missing[:MAX_PER_SOURCE], missing[MAX_PER_SOURCE:]
    findings = []
    for item in shown:
        detail = f" ({item.detail})" if item.detail else ""
        findings.append(Finding(
            "not-backed-up", severity,
            f"{item.kind} {item.identity}{detail} exists at source {source} now, but the audited "
            f"snapshot does not hold it: a restore would not bring it back",
            kind=item.kind, reference=item.identity, artifact=f"{source}/{item.kind}/{item.identity}",
            sources=[source], action=_action(source)))
    if rest:
        findings.append(Finding(
            "not-backed-up", severity,
            f"{len(rest)} more item(s) exist at source {source} now but are not in the audited "
            f"snapshot (only the first {MAX_PER_SOURCE} are listed one by one)",
            kind="source", reference=f"{source}: {len(rest)} more", artifacts_affected=len(rest),
            examples=[f"{source}/{i.kind}/{i.identity}" for i in rest[:EXAMPLES]],
            sources=[source], action=_action(source)))
    return findings


def _member_findings(source: str, discovered: list[Discovered], held: dict[str, str],
                     severity: str) -> list[Finding]:
    """New, changed and deleted members, grouped by the identity's first part (the type)."""
    now = {item.identity: item for item in discovered}
    new = [i for i in now if i not in held]
    changed = [i for i, item in now.items() if i in held and held[i] != item.version]
    deleted = [i for i in held if i not in now]
    findings = []
    for code, names, sev, what in (
            ("not-backed-up", new, severity, "exist at source {source} now but not in the audited snapshot: "
                                             "a restore would not bring them back"),
            ("changed-since-backup", changed, INFO, "changed at source {source} since the audited snapshot "
                                                    "(another resourceVersion): a restore brings back the older state"),
            ("deleted-since-backup", deleted, WARNING, "were deleted at source {source} after the audited "
                                                       "snapshot: a restore would bring them back")):
        for group, members in _grouped(names).items():
            findings.append(_member_finding(source, code, sev, group, members, what.format(source=source), now))
    return findings


def _grouped(identities: list[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for identity in sorted(identities):
        groups.setdefault(identity.split("/", 1)[0], []).append(identity)
    return groups


def _member_finding(source: str, code: str, severity: str, group: str, members: list[str], what: str,
                    now: dict[str, Discovered]) -> Finding:
    shown = ", ".join(members[:EXAMPLES]) + (f" and {len(members) - EXAMPLES} more" if len(members) > EXAMPLES else "")
    kind = now[members[0]].detail if members[0] in now and now[members[0]].detail else group
    return Finding(code, severity, f"{len(members)} {kind} object(s) {what}: {shown}",
                   kind=kind, reference=f"{source}: {group}", artifacts_affected=len(members),
                   examples=[f"{source}/{m}" for m in members[:EXAMPLES]], sources=[source],
                   artifact=f"{source}/{members[0]}", action=_member_action(code, source))


def _member_action(code: str, source: str) -> str:
    if code == "not-backed-up":
        return _action(source)
    if code == "changed-since-backup":
        return (f"If the change matters for recovery, run dr backup --plan PLAN --source {source} now; "
                f"otherwise the next scheduled backup records it.")
    return (f"Run dr backup --plan PLAN --source {source} so the next snapshot no longer holds them; until "
            f"then, a restore from this snapshot brings them back: delete them again after a restore.")
