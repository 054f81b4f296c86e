"""What the pod needs, gathered from every source's exporter and every target.

Each exporter is asked as if its plan were mounted where the pod mounts it (PLAN_DIR), so the
paths it resolves are the pod's paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from dr.contract import AWS_CREDENTIALS, ExportContext, RunNeeds, Sizing
from dr.contract.registry import Registry
from dr.model.plans import Plan, TargetSpec

PLAN_DIR = "/etc/dr"
PLAN_PATH = f"{PLAN_DIR}/plan.yaml"


@dataclass
class Gathered:
    """Every source's needs (None: its exporter does not say), and the targets'."""

    sources: dict[str, RunNeeds | None]
    targets: RunNeeds
    types: dict[str, str] = field(default_factory=dict)  # source -> exporter type
    sizings: dict[str, Sizing | None] = field(default_factory=dict)  # source -> its exporter's (contract v2)

    def covered(self, names: list[str] | None = None) -> list[RunNeeds]:
        chosen = self.sources if names is None else {n: self.sources[n] for n in names}
        return [self.targets] + [n for n in chosen.values() if n is not None]

    def uncovered(self) -> list[str]:
        return sorted(name for name, needs in self.sources.items() if needs is None)


def gather(plan: Plan, registry: Registry) -> Gathered:
    sources, types, sizings = {}, {}, {}
    for source in plan.spec.sources:
        exporter = registry.get(source.type)(ExportContext(source.name, plan.options[source.name], PLAN_DIR,
                                                           source.sensitivity))
        sources[source.name], types[source.name] = exporter.run_needs(), source.type
        sizings[source.name] = getattr(exporter, "sizing", None)  # an adapted v1 plugin has none
    return Gathered(sources, _targets(plan.spec.targets), types, sizings)


def _targets(targets: list[TargetSpec]) -> RunNeeds:
    needs = RunNeeds()
    for target in targets:
        scheme = urlsplit(target.url).scheme.lower()
        if scheme == "s3":
            needs.endpoints.append(target.endpoint_url or f"https://s3.{target.region or 'us-east-1'}.amazonaws.com")
            if target.profile:
                needs.notes.append(f"target {target.name}: AWS profile {target.profile!r} needs an AWS config "
                                   "file in the pod (AWS_CONFIG_FILE); mount it yourself")
        elif scheme in ("", "file"):  # written: not one of the read-only mounts
            needs.notes.append(f"target {target.name} is a directory ({target.url}): mount a writable volume "
                               "there yourself; a pod's directory rarely survives what the plan protects against")
    if any(urlsplit(t.url).scheme.lower() == "s3" for t in targets):
        needs.credentials += AWS_CREDENTIALS
    return needs
