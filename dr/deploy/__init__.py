"""`dr deploy render`: the plan, turned into the Kubernetes objects that run its backups.

Everything is derived from the plan and from what each source's exporter says it needs in a pod
(contract v2 `run_needs()`, asked through the registry: no exporter is named here):

  gathering    each source's and target's needs, with what cannot be covered
  scheduling   one CronJob per distinct schedule; sources without one, left out and named
  access       RBAC: the backup's read-only ClusterRole, the restore's (never bound)
  egress       the NetworkPolicy from the endpoints, and what it cannot express
  sizing       requests and limits from the benchmarks' measured peak RSS
  objects      the objects themselves, in a stable order with stable names
  writing      YAML (with comments) and the Helm chart

Render is deterministic: the same plan gives the same bytes.
"""

from dr.deploy.rendering import Rendering, RenderError, render

__all__ = ["Rendering", "RenderError", "render"]
