"""A snapshot that holds the plan itself: a warning, for the source that put it there.

Sealed names (docs/format.md 8.1) are keyed digests whose key is derived from the plan's
recipients, which the repository does not hold. A source that backs up the plan puts them
into the repository in plaintext, and with them the key: anyone who reads the bucket can then
test guessed names (the caveat of 8.1). So the backup records `plan-in-snapshot` (a warning,
kept in the manifest, reported by `dr audit` with its runbook) naming the source, the object
and the fix. Which artifact holds the plan, each exporter says (contract v2 plan_copy: the
files exporter for the plan's file, git for the plan's own repository, kubernetes for the
ConfigMap `dr deploy render` makes); a secret artifact is encrypted with the plan's
recipients, so it is never asked.
"""

from __future__ import annotations

import os
from typing import Any

from dr.contract import Exporter
from dr.model.artifacts import Artifact, Sensitivity
from dr.model.plans import Plan, SourceSpec

CODE = "plan-in-snapshot"
FIX = ("exclude it from the source (files `exclude`, another namespace or repository), or accept that the "
       "bucket's readers can test guessed secret names (docs/format.md 8.1)")


def finding(source: str, what: str, held: str) -> dict[str, Any]:
    return {"severity": "warning", "code": CODE, "audit_code": CODE, "object": held,
            "message": f"source {source} backs up {what} ({held}): the repository then holds the plan's "
                       f"recipients, from which the key of sealed names is derived; {FIX}",
            "action": FIX}


class PlanWatch:
    """Sees every artifact a source writes; `findings` says whether one of them is the plan."""

    def __init__(self, plan: Plan, source: SourceSpec, exporter: Exporter):
        self.source, self.exporter, self.findings = source.name, exporter, []
        self._plan_path = os.path.realpath(plan.path) if plan.path else ""

    def seen(self, artifact: Artifact) -> None:
        if artifact.sensitivity == Sensitivity.SECRET or not self._plan_path:
            return
        held = self.exporter.plan_copy(artifact, self._plan_path)
        if held is not None:
            found = finding(self.source, *held)
            if found not in self.findings:
                self.findings.append(found)
