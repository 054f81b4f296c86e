"""Where each claim's volume data lives: one `volume-data` dependency per PersistentVolumeClaim.

dr holds no volume data: the snapshot restores a claim's object, and the workload then starts
on an empty volume. Whether that matters in a failure depends on where the data is, and that is
the provisioner's doing (provisioners.py). So, once every list finished, the backup lists the
claims of the exported namespaces, the PersistentVolumes and the StorageClasses, and records
for every claim, and for every claim a StatefulSet's volumeClaimTemplates will make, one
dependency of kind `volume-data` (artifact kind `kubernetes-volumes`, one per namespace, whose
content is the same facts as JSON):

  in the cluster   <API server URL>/api/v1/namespaces/<ns>/persistentvolumeclaims/<name>: the
                   plan places it where it places the cluster's API server (a location of kind
                   kubernetes-api, as the example plans have), so it is lost with the cluster
  a zone, region   volume://<zone or region>/<ns>/<name>: placed in the plan's domain of that
                   zone (failure_domains[].zone, else its name), else of its region
  nowhere          volume:///<ns>/<name>: an unknown provisioner, or a cloud volume whose zone
                   nothing says yet (an unbound claim of a WaitForFirstConsumer class): the audit
                   reports an unknown location, and the detail names the provisioner

A managed cluster's API host names its region (EKS, AKS): with no plan location for it, the
region rule would place in-cluster claims in the region, and a lost cluster would seem to keep
them. So when the plan's hosts (ExportContext.hosts) hold no pattern for the API host but its
region's, in-cluster claims are recorded placed nowhere instead, the detail saying why.

A generic ephemeral volume's claim (owned by its Pod, deleted with it) is scratch space, not
state: it records nothing.

The detail names the claim, the workload that mounts it, the class, the provisioner and the
rule's reason. A source that copies the volume's data (a `volumes` source) provides the same
reference, and the audit then counts on its copy.

The provisioner is the bound PersistentVolume's own (its CSI driver, its
pv.kubernetes.io/provisioned-by annotation, its in-tree volume type), else its class's. The
zone is what the bound volume says (spec.nodeAffinity, topology labels), else the class
(allowedTopologies, parameters zone/zones/region).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import threading
from dataclasses import asdict, dataclass
from typing import Iterable, Iterator

from dr.contract import FindingCode
from dr.exporters.kubernetes.provisioners import CLUSTER, REGION, ProvisionerRule, rule_for
from dr.model.artifacts import Dependency
from dr.model.locations import host_of
from dr.model.regions import host_region, region_host_patterns, zone_region

KIND = "kubernetes-volumes"
# what the backup lists once every list finished (path, what): the claims (per namespace when
# the plan names namespaces, as its grants are), then the volumes and the classes
CLAIMS = ("/api/v1/persistentvolumeclaims", "persistentvolumeclaims")
LISTS = (("/api/v1/persistentvolumes", "persistentvolumes"),
         ("/apis/storage.k8s.io/v1/storageclasses", "storageclasses"))
DEPENDENCY_KIND = "volume-data"
VOLUME_DATA_LOST = FindingCode(
    "volume-data-lost", "A volume's data is lost with the failure: the workload comes back with empty volumes",
    "No dr source backs up this volume's data: keep a copy outside the failed domain (a volumes source, not yet "
    "in dr; until then your storage system's own backup or replication, or a database dump to a surviving "
    "bucket), or put the claim on a class whose data outlives the failure (docs/exporters/kubernetes.md, "
    "\"Volume data\").")
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ZONE_KEYS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone",
             "topology.ebs.csi.aws.com/zone", "topology.gke.io/zone", "topology.disk.csi.azure.com/zone")
REGION_KEYS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
# In-tree volume types of a PersistentVolume, as the provisioner names that wrote them.
IN_TREE = {"awsElasticBlockStore": "kubernetes.io/aws-ebs", "gcePersistentDisk": "kubernetes.io/gce-pd",
           "azureDisk": "kubernetes.io/azure-disk", "azureFile": "kubernetes.io/azure-file",
           "hostPath": "kubernetes.io/host-path", "local": "kubernetes.io/no-provisioner",
           "cephfs": "kubernetes.io/cephfs", "rbd": "kubernetes.io/rbd"}
# (group, plural) -> the path to its pod template ((): the object is a Pod)
TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "statefulsets"): ("spec", "template"), ("apps", "deployments"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"), ("apps", "replicasets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"), ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
    ("", "pods"): (),
}


# A claim mounted by several objects is named with its most lasting owner: the Deployment rather
# than its ReplicaSet or a Pod it made, the CronJob rather than a Job (others rank 2).
_RANK = {"Pod": 0, "ReplicaSet": 1, "Job": 1, "CronJob": 3}


@dataclass(frozen=True)
class Claim:
    """One claim's facts, as the artifact's content holds them."""

    namespace: str
    name: str
    workload: str  # "StatefulSet ml/qdrant", or "" when nothing the backup lists mounts it
    storage_class: str
    provisioner: str
    where: str  # cluster, zone, region, or "" (placed nowhere)
    at: str  # the zone or region, for where zone/region
    why: str
    reference: str

    def dependency(self) -> Dependency:
        mounted = (f", mounted by {self.workload}" if self.workload
                   else ", mounted by no pod template the backup lists (a custom resource's, or none)")
        placed = {CLUSTER: "in the cluster"}.get(self.where, f"in {self.where} {self.at}" if self.where else "placed nowhere")
        detail = (f"PersistentVolumeClaim {self.namespace}/{self.name}{mounted}: storage class "
                  f"{self.storage_class or '(none)'}, provisioner {self.provisioner or '(none)'}, {placed} "
                  f"({self.why}); no dr source backs up this volume's data, so a failure that takes it leaves "
                  f"the workload with empty volumes (docs/exporters/kubernetes.md, \"Volume data\")")
        return Dependency(DEPENDENCY_KIND, self.reference, detail)


class VolumeData:
    """Observes the workloads from the listing threads; claims() once every list finished."""

    def __init__(self, api_url: str, plan_rules: Iterable[ProvisionerRule] = (), hosts: Iterable[str] = ()):
        self.api_url = api_url.rstrip("/")
        self.plan_rules = tuple(plan_rules)
        self.region_only = _region_only(self.api_url, tuple(hosts))
        self._lock = threading.Lock()
        self._mounts: dict[tuple[str, str], str] = {}  # (ns, claim) -> "Kind ns/name"
        self._templates: list[tuple[str, str, int, dict]] = []  # (ns, workload, replicas, template)

    def observe(self, rtype, obj: dict) -> None:
        path = TEMPLATES.get(rtype.key)
        if path is None:
            return
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name", "")
        who = f"{rtype.kind} {namespace}/{name}"
        template = _at(obj, path)
        mounts = {(namespace, claim): who for claim in _claim_names(template)}
        spec = obj.get("spec") or {}
        replicas = spec.get("replicas", 1) if isinstance(spec.get("replicas", 1), int) else 1
        templates = [(namespace, f"{who}", replicas, t) for t in spec.get("volumeClaimTemplates") or []
                     if isinstance(t, dict) and rtype.key == ("apps", "statefulsets")]
        with self._lock:
            for key, value in mounts.items():
                known = self._mounts.get(key)
                if known is None or _RANK.get(rtype.kind, 2) > _RANK.get(known.split(" ", 1)[0], 2):
                    self._mounts[key] = value
            self._templates += templates

    def claims(self, pvcs: list[dict], pvs: list[dict], classes: list[dict]) -> list[Claim]:
        """Every listed claim, and every claim a volumeClaimTemplate makes that is not listed."""
        by_pv = {(pv.get("metadata") or {}).get("name"): pv for pv in pvs}
        by_class = {(sc.get("metadata") or {}).get("name"): sc for sc in classes}
        default = next((name for name, sc in by_class.items()
                        if ((sc.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS) == "true"), None)
        found: dict[tuple[str, str], Claim] = {}
        for pvc in pvcs:
            meta, spec = pvc.get("metadata") or {}, pvc.get("spec") or {}
            if _ephemeral(meta):
                continue
            key = (meta.get("namespace") or "", meta.get("name", ""))
            found[key] = self._claim(key, spec, by_pv.get(spec.get("volumeName")), by_class, default,
                                     self._mounts.get(key, ""))
        for namespace, who, replicas, template in self._templates:
            workload = who.split(" ", 1)[1].split("/", 1)[1]
            prefix = (template.get("metadata") or {}).get("name", "")
            for ordinal in range(max(replicas, 1)):
                key = (namespace, f"{prefix}-{workload}-{ordinal}")
                if key in found:  # the StatefulSet, not the pod it made
                    found[key] = Claim(**{**asdict(found[key]), "workload": who})
                else:
                    found[key] = self._claim(key, template.get("spec") or {}, None, by_class, default, who)
        return [found[key] for key in sorted(found)]

    def _claim(self, key: tuple[str, str], spec: dict, pv: dict | None, classes: dict[str, dict],
               default: str | None, workload: str) -> Claim:
        name = spec.get("storageClassName")
        class_name = (default or "") if name is None else name  # "" asks for no class at all
        if pv is not None and not class_name:
            class_name = (pv.get("spec") or {}).get("storageClassName") or ""
        sc = classes.get(class_name) or {}
        provisioner = _pv_provisioner(pv) or sc.get("provisioner", "")
        rule = rule_for(provisioner, self.plan_rules)
        namespace, claim = key
        if rule is None:
            why = (f"no placement rule knows provisioner {provisioner!r}: add one to the source's placement_rules"
                   if provisioner else f"no provisioner: storage class {class_name or '(none)'} is not in the cluster "
                                       f"and no volume is bound")
            return Claim(namespace, claim, workload, class_name, provisioner, "", "", why,
                         f"volume:///{namespace}/{claim}")
        if rule.where == CLUSTER and self.region_only:
            return Claim(namespace, claim, workload, class_name, provisioner, "", "",
                         f"{rule.why}; but the plan places the cluster's API server {host_of(self.api_url)} only by "
                         f"its region {self.region_only}: declare it as a location (kind kubernetes-api) in the "
                         f"cluster's domain", f"volume:///{namespace}/{claim}")
        if rule.where == CLUSTER:
            return Claim(namespace, claim, workload, class_name, provisioner, CLUSTER, "", rule.why,
                         f"{self.api_url}/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}")
        where, at = _topology(rule.where, pv, sc)
        if not at:
            return Claim(namespace, claim, workload, class_name, provisioner, "", "",
                         f"{rule.why}; but neither a bound volume nor the storage class says which {rule.where}",
                         f"volume:///{namespace}/{claim}")
        return Claim(namespace, claim, workload, class_name, provisioner, where, at, rule.why,
                     f"volume://{at}/{namespace}/{claim}")


def content(claims: list[Claim]) -> tuple[bytes, str]:
    """The artifact's bytes (JSON, one object per claim) and their change token."""
    data = json.dumps([asdict(c) for c in claims], sort_keys=True, indent=1).encode()
    return data, "volumes-1:" + hashlib.sha256(data).hexdigest()


def by_namespace(claims: list[Claim]) -> Iterator[tuple[str, list[Claim]]]:
    grouped: dict[str, list[Claim]] = {}
    for claim in claims:
        grouped.setdefault(claim.namespace, []).append(claim)
    yield from sorted(grouped.items())


def _region_only(api_url: str, hosts: tuple[str, ...]) -> str:
    """The API host's region when the plan's hosts place it by that region's patterns alone, else ''."""
    host = host_of(api_url)
    region = host_region(host) if host and hosts else None
    if not region:
        return ""
    regional = set(region_host_patterns(region))
    placed = any(fnmatch.fnmatchcase(host, p.lower()) for p in hosts if p not in regional)
    return "" if placed else region


def _ephemeral(meta: dict) -> bool:
    """A generic ephemeral volume's claim: owned by its Pod and deleted with it, scratch space, not state."""
    return any(isinstance(ref, dict) and ref.get("kind") == "Pod" and ref.get("controller")
               for ref in meta.get("ownerReferences") or [])


def _at(obj: dict, path: tuple[str, ...]) -> dict:
    for key in path:
        obj = obj.get(key) if isinstance(obj.get(key), dict) else {}
    return obj


def _claim_names(template: dict) -> list[str]:
    volumes = (template.get("spec") or {}).get("volumes") or []
    names = [((v or {}).get("persistentVolumeClaim") or {}).get("claimName") for v in volumes if isinstance(v, dict)]
    return [n for n in names if isinstance(n, str) and n]


def _pv_provisioner(pv: dict | None) -> str:
    if pv is None:
        return ""
    spec = pv.get("spec") or {}
    driver = (spec.get("csi") or {}).get("driver")
    if isinstance(driver, str) and driver:
        return driver
    annotated = ((pv.get("metadata") or {}).get("annotations") or {}).get("pv.kubernetes.io/provisioned-by")
    if isinstance(annotated, str) and annotated:
        return annotated
    return next((name for field, name in IN_TREE.items() if field in spec), "")


def _topology(where: str, pv: dict | None, sc: dict) -> tuple[str, str]:
    """(zone or region, its name) for a cloud volume; ("", "") when nothing says."""
    zones, regions = _pv_topology(pv) if pv is not None else (set(), set())
    if not zones and not regions:
        zones, regions = _class_topology(sc)
    regions |= {r for r in map(zone_region, zones) if r}
    if where != REGION and len(zones) == 1:
        return "zone", next(iter(zones))
    if len(regions) == 1:
        return "region", next(iter(regions))
    return where, ""


def _pv_topology(pv: dict) -> tuple[set[str], set[str]]:
    zones, regions = set(), set()
    affinity = (((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
    for term in affinity.get("nodeSelectorTerms") or []:
        for expression in (term or {}).get("matchExpressions") or []:
            _collect(expression.get("key"), expression.get("values") if expression.get("operator") == "In" else [],
                     zones, regions)
    for key, value in ((pv.get("metadata") or {}).get("labels") or {}).items():
        _collect(key, [value], zones, regions)
    return zones, regions


def _class_topology(sc: dict) -> tuple[set[str], set[str]]:
    zones, regions = set(), set()
    for term in sc.get("allowedTopologies") or []:
        for expression in (term or {}).get("matchLabelExpressions") or []:
            _collect(expression.get("key"), expression.get("values") or [], zones, regions)
    parameters = sc.get("parameters") or {}
    for key in ("zone", "zones"):
        zones |= {z.strip() for z in str(parameters.get(key, "")).split(",") if z.strip()}
    if parameters.get("region"):
        regions.add(str(parameters["region"]).strip())
    return zones, regions


def _collect(key, values, zones: set[str], regions: set[str]) -> None:
    values = {v for v in values or [] if isinstance(v, str) and v}
    if key in ZONE_KEYS:
        zones |= values
    elif key in REGION_KEYS:
        regions |= values
