"""What exporters declare for the audit, merged from every installed exporter once.

The audit knows no exporter by name (issue 32: exporter knowledge is data). An exporter that
produces a dependency kind of its own says which finding code a blocker on that kind gets
(Exporter.lost_kind_codes) and brings the codes that dr lacks (Exporter.finding_codes: code,
title, action, runbook). They are read from the exporters of the plan's sources and of the
audited snapshot's sources (a snapshot may hold a source since removed from the plan), and only
those are imported (importing all twelve built-ins costs a second); an exporter that is not
installed (a recovery laptop without a plugin) has its kinds judged with the generic code. What cannot be merged (a code declared twice with other words, a kind mapped
to a code nobody declares, or to two codes) is refused and reported as a
`declaration-refused` warning, and the audit goes on without it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping

from dr.audit.findings import CODES, WARNING, Code, Finding, declare
from dr.contract.registry import PluginError, Registry
from dr.model import kinds

#: the shared kinds (dr.model.kinds: several producers, no exporter owns them) with a code of
#: their own when lost; the others (bucket, path) are the generic dependency-in-failed-domain
SHARED_KIND_CODES: Mapping[str, str] = MappingProxyType({
    "image": "image-in-failed-domain",
    **{kind: "registry-in-failed-domain" for kind in sorted(kinds.CHART_KINDS | {"registry", "oci-registry",
                                                                                 "model-registry"})},
    "secret-store": "secret-store-in-failed-domain",
    "kms": "secret-store-in-failed-domain",
})
GENERIC = "dependency-in-failed-domain"


@dataclass
class Declared:
    """The merged declarations: kind -> finding code, and what was refused."""

    kind_codes: dict[str, str] = field(default_factory=lambda: dict(SHARED_KIND_CODES))
    refused: list[str] = field(default_factory=list)

    def code_for(self, kind: str) -> str:
        return self.kind_codes.get(kind, GENERIC)

    def findings(self) -> list[Finding]:
        return [Finding("declaration-refused", WARNING, problem, kind="source") for problem in self.refused]

    def merge(self, type_name: str, exporter: type) -> None:
        for code in getattr(exporter, "finding_codes", ()):
            problem = declare(Code(code.code, code.title, code.action, code.runbook, type_name))
            if problem:
                self.refused.append(problem)
        for kind, code in dict(getattr(exporter, "lost_kind_codes", {})).items():
            known = self.kind_codes.get(kind)
            if code not in CODES:
                self.refused.append(f"exporter {type_name!r} maps dependency kind {kind!r} to finding code "
                                    f"{code!r}, which nothing declares")
            elif known is not None and known != code:
                self.refused.append(f"exporter {type_name!r} maps dependency kind {kind!r} to {code!r}, which "
                                    f"is already mapped to {known!r}")
            else:
                self.kind_codes[kind] = code


_MERGED: dict[tuple[str, ...], Declared] = {}


def declared(registry: Registry | None = None, types: Iterable[str] | None = None) -> Declared:
    """The declarations of the installed exporters of `types` (None: every installed one), merged
    once per set of exporters."""
    registry = registry or Registry()
    # by name when given: listing the installed plugins reads every distribution's metadata
    names = tuple(registry.names()) if types is None else tuple(sorted(set(types)))
    if names not in _MERGED:
        merged = Declared()
        for name in names:
            try:
                merged.merge(name, registry.get(name))
            except PluginError:
                continue  # a plugin that does not load: `dr plugins` reports it, the audit judges without it
        _MERGED[names] = merged
    return _MERGED[names]
