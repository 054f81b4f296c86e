"""The `helm` exporter: Helm charts copied into dr's repository, checked by digest.

Where it sits: dr.backup runs it after the plan's other sources (it `reads_plan_dependencies`:
the charts their Helm releases pin, the repositories Argo CD applications and Flux sources
name) and calls export(); dr.restore calls restore() with the chart artifacts, to --to or to the
plan's `chart-repository` remap (destinations()).
  references       chart references and repository references
  options          the plan options (charts, from_plan, ...)
  logins           who to log in as: the kit's credential resolver, set up as helm looks
  transport        HTTP chart repositories: one session, bearer and basic auth, errors as ChartError
  http_repository  index.yaml, the .tgz and its .prov
  oci              Helm charts in an OCI registry (the kit's client, dr.kits.oci): read and push
  locating         a chart at its source: published digest, metadata, provenance
  selecting        which charts: listed ones, the plan's pinned helm-chart dependencies,
                   whole repositories when the plan asks
  exporting        one backup run: locate, check, store, findings
  records          artifact kinds, meta (`provides`), dependencies, change tokens
  restoring        into a chart directory (index.yaml) or an OCI registry
  deploying        what a source needs in a pod (run_needs)

What a snapshot holds: one `helm-chart` artifact per chart version (the .tgz; the .prov in
meta), and one `helm-chart-repository` artifact per repository copied whole (`repositories`).
"""

from dr.exporters.helm.exporter import HelmExporter

__all__ = ["HelmExporter"]
