"""What the catalog keeps of a chart: the .tgz itself (the artifact's content), and meta.

`helm-chart` artifact, identity `<repository>/<name>:<version>`, content the chart's .tgz as
its source served it. Meta: `name`, `version`, `app_version`, `repository`, `digest` (the
sha256 the source published and the bytes were checked against), `source_url`, `created`,
`provenance` (the .prov text, or absent), `provides` (the chart's identity, which is also the
`helm-chart` dependency reference a Helm release pins, and the plan dependency it was copied
for), `why`, `releases` (the Helm releases that run it: namespace, name, revision). Dependencies: the repositories of subcharts the chart's
metadata names (what `helm dependency build` would fetch when they are not packaged inside).

`helm-chart-repository` artifact, identity the repository reference other sources recorded:
a small JSON list of the charts copied from it. It `provides` that reference only when every
chart of the repository was copied, so the audit judges the releases' `helm-chart-repo`
dependency covered exactly when the copy is whole.
"""

from __future__ import annotations

import json

from dr.exporters.helm.locating import Located
from dr.exporters.helm.selecting import DEPENDENCY_KIND, Group, Wanted
from dr.model.artifacts import Dependency

CHART = "helm-chart"
REPOSITORY = "helm-chart-repository"
REPOSITORY_FORMAT = "dr-helm-repository/1"


def chart_meta(item: Wanted, found: Located) -> dict:
    meta = {"name": found.ref.name, "version": found.ref.version,
            "app_version": str(found.metadata.get("appVersion") or ""), "repository": found.ref.repo,
            "digest": found.digest, "source_url": found.url, "created": found.created,
            "provides": list(dict.fromkeys([found.ref.identity, *item.provides])), "why": item.why[:5]}
    if item.releases:
        meta["releases"] = item.releases[:50]
    if found.provenance is not None:
        meta["provenance"] = found.provenance
    return meta


def chart_dependencies(found: Located) -> list[Dependency]:
    deps = []
    for sub in found.metadata.get("dependencies") or []:
        repository = str((sub or {}).get("repository") or "")
        if repository.startswith(("http://", "https://", "oci://")):
            deps.append(Dependency(DEPENDENCY_KIND, repository,
                                   f"chart {found.ref.identity} subchart {sub.get('name')} {sub.get('version')} "
                                   "(unless packaged inside the chart)"))
    return deps


def change_token(found: Located) -> str:
    """The published digest: an unchanged chart is not read again. No digest, no token."""
    return f"{found.digest}:{len(found.provenance or '')}" if found.digest else ""


def repository_content(group: Group, copied: dict[str, str]) -> bytes:
    record = {"format": REPOSITORY_FORMAT, "repository": group.reference, "needed_by": list(group.sources),
              "charts": copied, "left_out": group.left_out}
    return json.dumps(record, sort_keys=True, indent=1).encode() + b"\n"


def repository_meta(group: Group, copied: dict[str, str], whole: bool) -> dict:
    meta = {"charts": len(copied), "needed_by": list(group.sources), "whole": whole}
    if whole:
        meta["provides"] = [group.reference]
    return meta
