"""The `kubernetes` exporter: a cluster's configuration, backed up object by object, restored in order.

Where it sits: dr.backup calls export() with a sink; dr.restore calls restore() with a reader.
The package's modules, in the order a backup meets them:
  options        the plan's options            connecting   credentials, restore destination
  requesting     retries, timeouts, errors     discovering  served types, preferred versions
  selecting      what is exported, and why     listing      paginated lists into batches
  cleaning       runtime fields stripped       scanning     dependencies found in any object
  batches        one artifact in the making    helm_releases, kueue   first-class kinds
  exporting      the parallel export           ordering     restore order as data with reasons
  remapping      namespace/class/registry maps applying     one object: create, compare, replace
  provisioners   where volume data lives, why  volumedata   one volume-data dependency per claim
  restoring      levels, parallel restore      exporter     the contract's class

Artifact granularity (the choice, and why)
------------------------------------------
One artifact per (resource type, namespace) -- kind `kubernetes-objects`, identity
`<plural>[.<group>]/<namespace>` (cluster-scoped types: `<plural>[.<group>]`) -- holding the
objects as JSON Lines, one cleaned object per line, in the API version the server prefers.
  * Fast at 10k-50k objects: one paginated list per type streams straight into its batches;
    there is one catalog entry per type and namespace, not per object (a per-object artifact
    would mean 50k catalog entries and 50k blobs of a few hundred bytes each).
  * Per-object outcomes on restore are still possible: restore reads the lines and reports one
    outcome per object.
  * Per-object change detection: the change token is a digest of every object's
    namespace/name@resourceVersion (plus the content format and options that shape the bytes),
    so a namespace in which no object changed reuses the previous snapshot's content without
    re-reading or re-uploading it.
  * Secrets go in their own artifacts (type `secrets`), always secret-class, so they are
    encrypted; nothing else is, unless the plan raises the source's sensitivity.
  * Each artifact's meta lists what it makes restorable (`provides`: `secret:<ns>/<name>`,
    `configmap:<ns>/<name>`, `storageclass:<name>`, a Service's DNS name ...), in the same form
    as the dependencies that objects record (images, secrets, configmaps, storage classes,
    webhook services, secret stores, Helm chart repositories), so the audit can tell what the
    snapshot brings back itself.
  * Helm releases additionally get a decoded, secret-class `helm-release` artifact per release
    revision (helm_releases.py).
  * Each namespace with claims gets a `kubernetes-volumes` artifact: where every claim's data
    lives, as `volume-data` dependencies (volumedata.py); a restore skips it.

Restore
-------
`dr restore --to DEST`: DEST is a kubeconfig context (of the source's kubeconfig, else
$KUBECONFIG or ~/.kube/config), or `PATH:CONTEXT` (a kubeconfig file and a context in it;
`PATH:` alone uses that file's current context). RestoreRequest.remap takes
`namespace:<old>`, `storage-class:<old>` and `image-registry:<old>` keys (remapping.py).
Order: ordering.py. Idempotent: UNCHANGED when the live object matches, CONFLICT (replaced only
with overwrite) when it differs, RESTORED when created. A dry run changes nothing and needs no
cluster.
"""

from dr.exporters.kubernetes.exporter import KubernetesExporter

__all__ = ["KubernetesExporter"]
