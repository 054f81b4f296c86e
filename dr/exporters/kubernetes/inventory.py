"""What a backup did with every type the cluster serves: exported with its count, or why not.

A backup that quietly holds fewer objects than the cluster has looks complete until the restore:
so every served type is accounted for, in the backup's output and in the snapshot (the info
record `kubernetes-served-types`, severity info, `category: inventory`, which the audit and
`dr status` do not list: `exported` type -> objects, `left_out` type -> reason):
  exported      listed and stored, with its object count (0 is a count too);
  left out      by selection or by design (selecting.py: never exported, outside
                include_groups/exclude_groups, outside workload_kinds), with that reason;
  not listed    the server refused to list it (403, 5xx after retries): the error finding
                `kubernetes-list-failed` names it and the type is not counted as exported
                (objects of namespaces handed over before the failure are a part only), so a
                count is never silently smaller;
  not discovered
                the server refused the discovery of a group version (an aggregated API whose
                backend is down): the error finding `kubernetes-discovery-failed` names it.
An error finding makes the source's backup a partial failure (exit 3); the other types are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dr.exporters.kubernetes.requesting import KubeError
from dr.exporters.kubernetes.resources import ResourceType
from dr.exporters.kubernetes.selecting import Selection

Finding = dict[str, Any]  # keyword arguments of ExportContext.finding


@dataclass
class Inventory:
    """Filled while the backup runs (counts on the writing thread, failures from any)."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    unlisted: dict[tuple[str, str], str] = field(default_factory=dict)  # type -> the error
    undiscovered: dict[str, str] = field(default_factory=dict)  # group/version -> the error

    def count(self, rtype: ResourceType, objects: int) -> None:
        self.counts[rtype.key] = self.counts.get(rtype.key, 0) + objects

    def list_failed(self, rtype: ResourceType, namespace: str | None, error: KubeError) -> Finding:
        where = rtype.qualified + (f" in namespace {namespace}" if namespace else "")
        self.unlisted[rtype.key] = str(error)
        return {"severity": "error", "code": "kubernetes-list-failed", "type": rtype.qualified,
                "namespace": namespace, "status": error.status,
                "message": f"{where} could not be listed ({error}): this snapshot lacks its objects (any kept "
                           "before the failure are a part only); give the backup's service account list on "
                           "it, or exclude it"}

    def discovery_findings(self) -> list[Finding]:
        return [{"severity": "error", "code": "kubernetes-discovery-failed", "group_version": gv,
                 "message": f"discovery of {gv} failed ({error}): the types it serves are not in this snapshot"}
                for gv, error in sorted(self.undiscovered.items())]

    def report(self, served: list[ResourceType], selection: Selection) -> tuple[list[str], Finding]:
        """The lines the backup prints and the finding it records."""
        exported = {t.qualified: self.counts.get(t.key, 0) for t in selection.types if t.key not in self.unlisted}
        left_out = {t.qualified: self._why(t, selection) for t in served if t.qualified not in exported}
        lines = [f"served types: {len(served)}; exported {len(exported)} ({sum(exported.values())} objects): "
                 + ", ".join(f"{name} ({count})" for name, count in exported.items())]
        lines += [f"not exported: {name}: {reason}" for name, reason in left_out.items()]
        lines += [f"not discovered: {gv}: {error}" for gv, error in sorted(self.undiscovered.items())]
        message = (f"{len(served)} served types: {len(exported)} exported, {len(left_out)} not "
                   f"({len(self.unlisted)} because listing failed)")
        return lines, {"severity": "info", "code": "kubernetes-served-types", "category": "inventory",
                       "message": message, "exported": exported, "left_out": left_out,
                       "undiscovered": dict(sorted(self.undiscovered.items()))}

    def _why(self, rtype: ResourceType, selection: Selection) -> str:
        if rtype.key in self.unlisted:
            return f"listing failed: {self.unlisted[rtype.key]}"
        return selection.left_out.get(rtype.key, "not selected")
