"""Contract v2, what a source needs to run unattended in a pod: `Exporter.run_needs()` answers
with a RunNeeds, which `dr deploy render` turns into mounts, Secret references, RBAC and a
NetworkPolicy. Part of the contract (dr.contract re-exports every name); a module of
its own because only deployment reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AWS_CREDENTIALS", "CREDENTIALS_DIR", "ApiRead", "ApiWrite", "Credential", "RunNeeds", "Sizing"]

# Where a rendered pod mounts credential files (Credential.path): a file an exporter's options
# name elsewhere is mounted where the options say.
CREDENTIALS_DIR = "/var/run/secrets/dr"


@dataclass(frozen=True)
class Credential:
    """A credential a source reads at run time: kept in a Kubernetes Secret, referenced by the
    rendered objects, never written into them."""

    key: str  # its key in the dr credentials Secret ("vault-token", "git-credentials")
    what: str  # for people: what to put under the key
    env: str | None = None  # read from this environment variable (env valueFrom secretKeyRef)
    path: str | None = None  # or from this file (mounted from the Secret)
    optional: bool = False  # the pod starts without it (another way exists: IRSA for AWS keys)


@dataclass(frozen=True)
class ApiRead:
    """Kubernetes API resources a source reads (get, list, watch) in the cluster it runs in."""

    group: str  # the API group: "" the core group, "*" every group
    resources: tuple[str, ...]  # plurals; ("*",) every resource of the group
    namespaces: tuple[str, ...] = ()  # only in these namespaces; empty: cluster-wide
    why: str = ""


@dataclass(frozen=True)
class ApiWrite:
    """Kubernetes API resources a source writes (creates, deletes...) in ONE namespace of the
    cluster it runs in: a Role and RoleBinding there, never a cluster-wide grant."""

    group: str  # the API group: "" the core group ("*" is refused: say which)
    resources: tuple[str, ...]  # plurals, named (never "*")
    verbs: tuple[str, ...]  # exactly the verbs used
    namespace: str | None = None  # none: the namespace the backup runs in
    why: str = ""


@dataclass(frozen=True)
class Sizing:
    """What a backup of this exporter's sources takes in a pod, as measured (Exporter.sizing):
    the peak RSS of its benchmark and where docs/benchmarks.md records it (None: no benchmark of
    its own, the repository writer's figure), and the scratch space it writes under /tmp at most
    (a Kubernetes quantity)."""

    peak_rss_mb: int | None = None
    measured_in: str = ""  # the docs/benchmarks.md section of the figure
    scratch_limit: str = "2Gi"


# The AWS SDK's keys, for every exporter that calls AWS: optional, as IRSA (a role on the
# service account) is the better way on EKS.
AWS_CREDENTIALS = (Credential("aws-access-key-id", "an AWS access key id (leave out with IRSA)",
                              env="AWS_ACCESS_KEY_ID", optional=True),
                   Credential("aws-secret-access-key", "its secret access key (leave out with IRSA)",
                              env="AWS_SECRET_ACCESS_KEY", optional=True))


@dataclass
class RunNeeds:
    """What one source needs in a pod: where it connects, what it reads, what it must be given."""

    endpoints: list[str] = field(default_factory=list)  # URLs, or host:port
    credentials: list[Credential] = field(default_factory=list)
    api_reads: list[ApiRead] = field(default_factory=list)
    api_writes: list[ApiWrite] = field(default_factory=list)  # namespaced only
    paths: list[str] = field(default_factory=list)  # local paths read (mounted read-only)
    env: dict[str, str] = field(default_factory=dict)  # plain settings, never a secret
    notes: list[str] = field(default_factory=list)  # what a deployment cannot express, for people
    service_account_token: bool = False  # the pod's token is mounted (Vault's kubernetes login)
