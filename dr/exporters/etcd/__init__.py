"""The `etcd` exporter: the control plane's own store, for self-managed Kubernetes clusters.

Where it sits: dr.backup calls export() with a sink; dr.restore calls restore() with a reader.
  options       the plan's options          maintenance   status, members, snapshot (gRPC)
  protowire     the few etcd messages read, decoded from protobuf's wire format
  snapshots     the file format: the sha256 trailer, checked while streaming and before placing
  exporter      the contract's class

One artifact per cluster, kind `etcd-snapshot`, identity the cluster's name in the plan: the
snapshot exactly as `etcdctl snapshot save` writes it (database + sha256), streamed from one
member into the sink without a temporary file, its hash checked as the last bytes arrive (a
mismatch fails the cluster, and nothing of it is stored). Always secret-class: etcd holds every
Secret of the cluster. The meta records the revision, raft index, etcd version, cluster and
member ids and the member list (names and URLs: what `--initial-cluster` is rebuilt from), and
the note that a snapshot suits a same-version rebuild of that control plane, not a migration.

Restore writes `<to>/<name>.db`, checked again before it is renamed into place; the operator
(or runbooks/etcd-control-plane.md) then runs `etcdutl snapshot restore` on it.
"""

from dr.exporters.etcd.exporter import EtcdExporter

__all__ = ["EtcdExporter"]
