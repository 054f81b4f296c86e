"""The `helm` exporter: Helm charts copied into dr's repository, checked by digest.

Where it sits: dr.backup runs it after the plan's other sources (it `reads_plan_dependencies`:
the chart repositories their Helm releases, Argo CD applications and Flux sources recorded)
and calls export(); dr.restore calls restore() with the chart artifacts.
  references       chart references and repository references
  options          the plan options (charts, from_plan, ...)
  transport        HTTP: one session, anonymous bearer tokens, errors as ChartError
  http_repository  index.yaml, the .tgz and its .prov
  oci              Helm charts in an OCI registry: read and push, Helm's media types
  locating         a chart at its source: published digest, metadata, provenance
  selecting        which charts: listed ones, and the plan's helm-chart-repo dependencies
  exporting        one backup run: locate, check, store, findings
  records          artifact kinds, meta (`provides`), dependencies, change tokens
  restoring        into a chart directory (index.yaml) or an OCI registry

What a snapshot holds: one `helm-chart` artifact per chart version (the .tgz; the .prov in
meta), and one `helm-chart-repository` artifact per repository expanded from a dependency.
"""

from dr.exporters.helm.exporter import HelmExporter

__all__ = ["HelmExporter"]
