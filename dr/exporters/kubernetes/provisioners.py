"""Where a volume's data lives, by the provisioner of its StorageClass: data with reasons.

A PersistentVolumeClaim's bytes are wherever its provisioner put them, and that decides what
a failure takes with it. A provisioner that runs inside the cluster keeps the data on the
cluster's own nodes (their disks, or a storage system the cluster runs): losing the cluster
loses the data. A cloud provider's CSI driver keeps it in a managed volume of a zone (block
disks) or a region (file systems), which outlives the cluster but not its zone or region.

Each rule is (provisioner glob, where the data is, why). `where` is one of:
  cluster   inside the cluster (placed where the plan places the cluster's API server)
  zone      in the zone the bound PersistentVolume's node affinity or labels name (else the
            StorageClass's allowedTopologies or parameters); in their region when they name
            several zones of one region or only a region: a zonal disk
  region    in the region those name (a zone's region): a regional file system
The plan's own rules (the kubernetes source's `placement_rules`) are read first; a provisioner
no rule matches is no verdict of "ok": it is recorded as placed nowhere, naming the
provisioner, and the audit reports it as an unknown location (volumedata.py).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Iterable

CLUSTER, ZONE, REGION = "cluster", "zone", "region"
WHERE = (CLUSTER, ZONE, REGION)


@dataclass(frozen=True)
class ProvisionerRule:
    match: str  # a glob on the StorageClass's provisioner (fnmatch, case-insensitive)
    where: str  # cluster, zone or region
    why: str

    def matches(self, provisioner: str) -> bool:
        return fnmatch.fnmatchcase(provisioner.lower(), self.match.lower())


_ROOK = "Rook Ceph keeps the data in a Ceph cluster it runs on the cluster's own nodes and disks"
_NODE = "the data is on one node's own disk (a local or host path): lost with the node, and so with the cluster"
_NFS = ("the NFS server it provisions on is one the cluster runs (an in-cluster NFS server) or names; "
        "placed with the cluster: give a rule of your own when the server is outside it")
_EBS = "an EBS volume is a disk in one availability zone: it outlives the cluster, not its zone"
_PD = "a zonal Persistent Disk lives in one zone (a regional one in two zones of a region): it outlives the cluster"
_AZURE_DISK = "an Azure managed disk lives in one zone (or a region, without zones): it outlives the cluster"

PROVISIONERS: tuple[ProvisionerRule, ...] = (
    # inside the cluster: the data is on the cluster's nodes
    ProvisionerRule("*.rbd.csi.ceph.com", CLUSTER, _ROOK),
    ProvisionerRule("*.cephfs.csi.ceph.com", CLUSTER, _ROOK),
    ProvisionerRule("ceph.rook.io/block", CLUSTER, _ROOK + " (the flex driver of Rook before CSI)"),
    ProvisionerRule("driver.longhorn.io", CLUSTER,
                    "Longhorn replicates each volume across the cluster's own nodes' disks"),
    ProvisionerRule("*.openebs.io", CLUSTER, "OpenEBS engines (LocalPV, Mayastor, cStor, Jiva) store the data "
                                             "on the cluster's own nodes' disks"),
    ProvisionerRule("topolvm.io", CLUSTER, "TopoLVM carves LVM volumes out of one node's disks"),
    ProvisionerRule("topolvm.cybozu.com", CLUSTER, "TopoLVM (its name before 0.20) carves LVM volumes out of "
                                                   "one node's disks"),
    ProvisionerRule("rancher.io/local-path", CLUSTER, _NODE),
    ProvisionerRule("kubernetes.io/no-provisioner", CLUSTER, "local PersistentVolumes: " + _NODE),
    ProvisionerRule("hostpath.csi.k8s.io", CLUSTER, _NODE),
    ProvisionerRule("kubernetes.io/host-path", CLUSTER, _NODE),
    ProvisionerRule("nfs.csi.k8s.io", CLUSTER, _NFS),
    ProvisionerRule("*nfs-subdir-external-provisioner*", CLUSTER, _NFS),
    # cloud block disks: one zone
    ProvisionerRule("ebs.csi.aws.com", ZONE, _EBS),
    ProvisionerRule("kubernetes.io/aws-ebs", ZONE, _EBS + " (the in-tree driver)"),
    ProvisionerRule("pd.csi.storage.gke.io", ZONE, _PD),
    ProvisionerRule("kubernetes.io/gce-pd", ZONE, _PD + " (the in-tree driver)"),
    ProvisionerRule("disk.csi.azure.com", ZONE, _AZURE_DISK),
    ProvisionerRule("kubernetes.io/azure-disk", ZONE, _AZURE_DISK + " (the in-tree driver)"),
    # cloud file systems: a region
    ProvisionerRule("efs.csi.aws.com", REGION, "an EFS file system is regional (its mount targets span the "
                                               "region's zones): it outlives the cluster and a zone"),
    ProvisionerRule("fsx.csi.aws.com", ZONE, "an FSx file system lives in one zone (Multi-AZ ones in two "
                                             "zones of a region): it outlives the cluster"),
    ProvisionerRule("file.csi.azure.com", REGION, "an Azure Files share lives in a storage account of one "
                                                  "region: it outlives the cluster"),
    ProvisionerRule("filestore.csi.storage.gke.io", ZONE, "a Filestore instance lives in one zone (the "
                                                          "regional and enterprise tiers in a region): it "
                                                          "outlives the cluster"),
)


def rule_for(provisioner: str, plan_rules: Iterable[ProvisionerRule] = ()) -> ProvisionerRule | None:
    """The plan's first matching rule, else the built-in table's, else None (placed nowhere)."""
    for rule in (*plan_rules, *PROVISIONERS):
        if provisioner and rule.matches(provisioner):
            return rule
    return None
