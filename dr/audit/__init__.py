"""The dependency audit: if these failure domains are gone, can we recover from what is left?

Inputs: the plan (failure domains, locations, placement rules, targets, key and image
locations) and one snapshot's catalog, read from a target's repository. The audit needs read
access to the repository only, never the private key.

Scenarios (dr.audit.scenarios): one per domain in protects_against, each failing alone; or one
scenario in which every domain named with --failed fails at once. A domain fails everything
nested in it.

Verdicts, for each distinct dependency reference recorded in the catalog (dr.audit.dependency_findings,
through the verdict engine dr.model.recovery that restore planning and drills judge with too):
  ok        placed (plan.placer.place) in a domain the scenario does not lose; or placed
            nowhere but COVERED (below): the snapshot brings it back itself (the Secrets,
            ConfigMaps and Services that the kubernetes exporter lists in `provides`);
  remapped  placed in a lost domain but COVERED: the restore rebuilds it at a new location
            from the snapshot's own copy (an info finding that tells the operator which copy
            to restore first); or moved by the plan's remaps (restore.remaps) to a place that
            survives, for every source that needs it, exactly as the restore rewrites it
            (dr.audit.plan_remaps over dr.planner.remaps: the same answer as the restore plan);
            a Service's DNS name is covered by the Service's copy only when no backend it
            selects keeps state in a PersistentVolumeClaim (the backup's `service-state` /
            `service-stateless` facts): with state behind it, it is a blocker naming the PVC
            (dr holds no volume data); stateless, "recreated by the restore". A URL whose
            host is a Service (`postgres://db.ml.svc:5432/x`) is judged as the Service's name;
  blocker   placed in a lost domain and not covered;
  unknown   placed nowhere and not covered: a warning, a blocker under strict. Not for a
            class an object names (storage-, priority-, runtime-, ingress-class: the kinds its
            exporter declares as `checked_kinds`): that is an object the recovery cluster must
            have, not a place, and the backup's own `class-missing` finding (below) reports it.

The remap rule ("covered"). A dependency is covered when
  1. some artifact of the same snapshot lists the dependency's reference in meta['provides']
     (a string or a list of strings), compared after redaction (user:password@ removed, as
     exporters record URLs), trimming whitespace, a trailing '/' and a trailing '.git'
     (nothing else: image tags and paths are case-sensitive); and
  2. that copy survives: every blob of the providing artifact is present in the repository
     (content integrity is dr verify's job), and the audited target survives the scenario and
     its credentials do not live in a lost domain.
Exporters declare what they captured: e.g. the git exporter writes a repository bundle with
meta={'provides': [remote_url]}, so a Git remote hosted in the failed cluster can be restored
to a new remote; the kubernetes exporter lists `secret:<ns>/<name>`, `configmap:<ns>/<name>`,
`storageclass:<name>` and Service DNS names. A dependency's own artifact may provide it.

Always checked, whatever the catalog says (dr.audit.essentials, judged by
dr.model.recovery.essentials as a restore plan judges them): a target outside the lost
domains, the audited target itself, each surviving target's credentials_location, the
decryption key's location (when anything is encrypted or the plan has recipients), and dr's
own image (dr_image). Credentials or a key kept only inside the snapshot they unlock are a
blocker, circular (dr.audit.credentials), also when found through the Secrets dr's own
workload reads. With live (dr audit --live), coverage (dr.audit.coverage): what each
source's exporter discovers now but the snapshot does not hold. None of these can be covered by the snapshot. Staleness
(dr.audit.staleness): the newest good snapshot of each source, against its RPO. What the
backup itself noticed (dr.audit.backup_findings): the exporters' findings that the audited
snapshot's manifest keeps (a Kueue queue naming a missing flavor ...), as `backup-finding`.
With readiness (dr audit --readiness), the readiness scenario: the findings exporters record
with `category: readiness` (go-live checks), as `readiness-finding`, each with its own runbook;
otherwise they are only counted (dr.audit.backup_findings).

Every finding has a code, a severity, what to do, and a runbook at runbooks/<code>.md. Any
blocker makes `dr audit` exit 4 (Exit.BLOCKERS).
"""

from dr.audit.auditing import choose_audited_target, run_audit
from dr.audit.audits import AuditReport
from dr.audit.findings import CODES, Finding
from dr.audit.scenarios import location_scenarios, scenarios_for
from dr.model.recovery import Scenario, UnknownDomain

__all__ = ["AuditReport", "CODES", "Finding", "Scenario", "UnknownDomain", "choose_audited_target",
           "location_scenarios", "run_audit", "scenarios_for"]
