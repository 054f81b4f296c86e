"""The order of a whole-plan restore across exporters: rules as data, each with its reason.

Where it sits: dr.planner.ordering turns these rules into one dependency graph between the
restore's steps (one step per source of the snapshot) and cuts it into levels; the steps of
a level run in parallel. Inside a step, the exporter orders its own items: the kubernetes
exporter restores CRDs first, waits until they are served, then namespaces, RBAC, Secrets and
ConfigMaps before workloads, and webhooks last (dr.exporters.kubernetes.ordering).

The rules below are the core's, about any exporter; each exporter brings its own rules and
roles as data (contract v2, Exporter.ordering), e.g. "role:declarations before
role:cluster-objects" from the git exporter. No exporter is named here.

A rule (before, after, strength, why) orders every step matching `before` ahead of every step
matching `after` that does not itself match `before` (so two steps of one kind are never
ordered against each other by a rule about that kind). Selectors:
  role:<role>       steps whose exporter declares that role (Ordering.roles); the shared
                    vocabulary is in docs/exporters.md (declarations, cluster-objects,
                    checkpoints, images, secret-stores ...)
  type:<exporter>   steps of that exporter
  kind:<kind>       steps holding an artifact of that kind
  @provider / @dependent   a step whose artifacts provide (meta['provides']) a reference that
                    another step's artifacts depend on: the one rule computed per reference
  @images           role images, or steps holding image or chart artifacts
  @secret-stores    role secret-stores, or steps holding Vault/OpenBao raft snapshots or
                    sealed-secrets keys
  @workloads        steps whose artifacts run pods (a pod template, or an image dependency)
  @any              every step
Strength: REQUIRES also holds the later step back when the earlier one did not succeed
(restoring it would point at nothing); PRECEDES only orders. The @provider rule REQUIRES only
where the dependency's verdict counts on the snapshot's copy (its original place is lost or
unplaced); where the original survives, the provider still goes first but is not required.
"""

from __future__ import annotations

REQUIRES, PRECEDES = "requires", "precedes"

RULES: list[tuple[str, str, str, str]] = [
    # (before, after, strength, why)
    ("@provider", "@dependent", REQUIRES,
     "it restores something this step's artifacts depend on (meta['provides'] matches the "
     "dependency): restored first, the dependent never points at nothing"),
    ("@secret-stores", "@any", PRECEDES,
     "secret stores first: External Secrets, CSI secret volumes and sealed-secrets controllers "
     "read them the moment they start, and cert-manager reissues certificates whose Secrets are missing"),
    ("@images", "@workloads", PRECEDES,
     "images and charts mirrored before the workloads that pull them: otherwise pods sit in "
     "ImagePullBackOff and Helm/Flux releases fail their chart fetch while the RTO clock runs"),
]

# Artifact kinds the set selectors stand for besides the roles: a plugin whose artifacts have
# these kinds is ordered correctly even before it declares a role.
IMAGE_KINDS = frozenset({"image", "container-image", "oci-image", "oci-artifact", "helm-chart", "chart"})
SECRET_STORE_KINDS = frozenset({"vault-snapshot", "raft-snapshot", "openbao-snapshot",
                                "sealed-secrets-key", "secret-store"})
# A dependency of this kind means the artifact runs containers.
WORKLOAD_DEPENDENCY_KINDS = frozenset({"image"})
