"""The `volumes` exporter: the files inside PersistentVolumeClaims, copied out of the cluster.

Where it sits: dr.backup calls export() with a sink after the plan's other sources (it reads
their `volume-data` references); dr.restore calls restore() before the workloads (its claims
provide those references).
  options     the plan's options             selecting    which claims, and why not the others
  temporaries snapshots, claims, mover Jobs   exporting    one claim's copy into the sink
  cluster     API requests, the pod proxy    restoring    claims created, filled, verified
  wire        what dr and the mover say      mover        the process in the volume's pod (HTTP)
  movertree   the mover reading the tree     staging      the mover writing, then committing
  exporter    the contract's class

Per claim: a VolumeSnapshot when the claim's CSI driver has a VolumeSnapshotClass (a
crash-consistent copy), a temporary claim made from it, and a mover Job (dr's own image) that
mounts it read-only and serves its files to dr through the API server's pod proxy. Without a
snapshot class the mover reads the live volume, and the backup warns that the copy may be
inconsistent. The files go through the sink like the `files` exporter's (chunked, deduplicated,
encrypted: volume data is secret-class unless the plan says otherwise), each with a change
token, so an unchanged volume uploads nothing. Artifacts: `volume` (one per claim, identity
`<namespace>/<claim>`: the claim as restore creates it, and the counts; it `provides` the
claim's volume-data references), `volume-file`, `volume-directory`, `volume-symlink` (identity
`<namespace>/<claim>/<path>`, '.' the volume's root; meta mode, uid, gid, mtime_ns, size,
target, sparse), and `volume-files`, a pack of a directory's small files (packing.py).
Temporary objects are always removed, and a run removes those a dead run left.

VolumesExporter is imported when asked for: `python -m dr.exporters.volumes.mover` imports this
package first, and the mover, in the volume's pod, needs the standard library only (the
exporter's imports, the contract and pydantic, were 0.11 s of its start).
"""

__all__ = ["VolumesExporter"]


def __getattr__(name: str):
    if name == "VolumesExporter":
        from dr.exporters.volumes.exporter import VolumesExporter

        return VolumesExporter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
