"""References between objects, checked at backup time: an object naming another the backup lacks.

A controller resolves some references by name (a Kueue ClusterQueue its ResourceFlavors, a
cert-manager Certificate its issuer). When the named object is missing, the referrer is broken
in the source already, and a restore brings the same broken object back; when it exists but
this source does not export it (a namespace left out), the restore breaks it. Either way the
backup reports it as a finding (kept in the snapshot; the audit and `dr status` show it) while
the source can still be fixed. The rules per API group are in kueue.py and certmanager.py.

Objects are observed from several listing threads; what was seen and what is wanted are kept
under a lock and compared once every list finished.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from dr.exporters.kubernetes.resources import ResourceType, object_ref


@dataclass(frozen=True, order=True)
class Wanted:
    """`referrer` (Kind/[ns/]name) names `kind` `name` ([ns/]name); without it, `consequence`."""

    referrer: str
    kind: str
    name: str
    code: str
    consequence: str
    severity: str = "warning"
    # "Kind/name" the referrer most likely meant when `kind` came from a default (a Certificate's
    # issuerRef.kind defaults to Issuer); with `field`, the fix the finding names when it exists
    meant: str = ""
    field: str = ""
    # where in the referrer the name is (`.spec.template.spec.priorityClassName`), and the
    # finding's action when the rule names its own fixes (classes.py)
    at: str = ""
    fix: str = ""


Reader = Callable[[dict], Iterator[Wanted]]


class ReferenceCheck:
    """tracked: (group, plural) -> the Kind whose objects are recorded as present;
    readers: (group, plural) -> what an object of that type names."""

    def __init__(self, tracked: dict[tuple[str, str], str], readers: dict[tuple[str, str], Reader]):
        self.tracked, self.readers = tracked, readers
        self._lock = threading.Lock()
        self._present: set[tuple[str, str]] = set()
        self._wanted: set[Wanted] = set()

    def observe(self, rtype: ResourceType, obj: dict) -> None:
        kind, reader = self.tracked.get(rtype.key), self.readers.get(rtype.key)
        if kind is None and reader is None:
            return
        wanted = list(reader(obj)) if reader is not None else []
        with self._lock:
            if kind is not None:
                self._present.add((kind, object_ref(obj)))
            self._wanted.update(wanted)

    def want(self, wanted: Iterable[Wanted]) -> None:
        """References found otherwise than by a reader (the scan's class references, classes.py)."""
        found = list(wanted)
        if found:
            with self._lock:
                self._wanted.update(found)

    def findings(self) -> Iterator[dict]:
        """One finding per missing reference, in a stable order."""
        for want in sorted(self._wanted):
            if (want.kind, want.name) in self._present:
                continue
            if want.meant and tuple(want.meant.split("/", 1)) in self._present:
                yield _defaulted_kind(want)
                continue
            yield _missing(want)


def _missing(want: Wanted) -> dict:
    at = f" at {want.at}" if want.at else ""
    finding = {"severity": want.severity, "code": want.code,
               "message": (f"{want.referrer} names {want.kind} {want.name!r}{at}, which is not in the backup "
                           f"(it does not exist, or this source does not export it): {want.consequence}"),
               "referrer": want.referrer, "missing": f"{want.kind}/{want.name}", "object": want.referrer,
               "action": want.fix or f"create {want.kind} {want.name!r} at the source, or export it with this "
                                     f"source (or correct {want.referrer}), then back up again"}
    return {**finding, "field": want.at} if want.at else finding


def _defaulted_kind(want: Wanted) -> dict:
    meant_kind = want.meant.split("/", 1)[0]
    return {"severity": want.severity, "code": want.code,
            "message": (f"{want.referrer} names {want.kind} {want.name!r} ({want.field} is not set and defaults to "
                        f"{want.kind}), which does not exist; a {want.meant} does: {want.consequence}"),
            "referrer": want.referrer, "missing": f"{want.kind}/{want.name}", "object": want.referrer,
            "field": want.field,
            "action": f"set {want.field}: {meant_kind} in {want.referrer} (or create {want.kind} {want.name!r}), "
                      f"then back up again"}


def combined(*checks: ReferenceCheck) -> ReferenceCheck:
    """One check holding the tables of several (a type is read by one group's rules only)."""
    tracked: dict[tuple[str, str], str] = {}
    readers: dict[tuple[str, str], Reader] = {}
    for check in checks:
        tracked.update(check.tracked)
        readers.update(check.readers)
    return ReferenceCheck(tracked, readers)


def spec(obj: dict) -> dict:
    value = obj.get("spec")
    return value if isinstance(value, dict) else {}


def text(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def referrer(kind: str, obj: dict) -> str:
    return f"{kind}/{object_ref(obj)}"
