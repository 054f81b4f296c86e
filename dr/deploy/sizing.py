"""Requests and limits, from the peak RSS docs/benchmarks.md measured, as each exporter declares it.

Each exporter declares its measured peak and the section of docs/benchmarks.md it comes from
(Exporter.sizing). The memory request is the largest peak among the exporters the CronJob runs
(the sources run one after another in a backup, and dr streams, so the peak does not grow with
the data), rounded up to 64 MiB; the limit is twice that, for what the benchmarks' data did not
have. Exporters with no sizing of their own take the directory backup's figure, the repository
writer's own peak. The ephemeral-storage limit is the largest scratch space declared.
"""

from __future__ import annotations

from dr.contract import Sizing

# An exporter that declares no sizing of its own takes the repository writer's peak: the
# directory backup's, where the writer is nearly all there is (docs/benchmarks.md).
BASELINE = Sizing(162, "Backup of a directory to S3: dr vs restic, first backup of 1 GiB")
LIMIT_FACTOR = 2
ROUND_MIB = 64
# CPU is not what bounds a backup (the network is): a quarter core requested, and two cores at
# most, which is what the benchmarks' machine had.
CPU_REQUEST, CPU_LIMIT = "250m", "2"
EPHEMERAL_REQUEST = "1Gi"


def resources(sizings: list[Sizing | None]) -> tuple[dict, str]:
    """(the container's resources, a comment naming where the memory figure comes from), for a pod
    that runs sources whose exporters declare `sizings` (Exporter.sizing; None: the baseline)."""
    declared = [s or BASELINE for s in sizings] or [BASELINE]
    peak = max((s if s.peak_rss_mb is not None else BASELINE for s in declared), key=lambda s: s.peak_rss_mb)
    mib = -(-peak.peak_rss_mb * 10**6 // (1 << 20))  # MB -> MiB, rounded up
    request_mib = -(-mib // ROUND_MIB) * ROUND_MIB
    ephemeral = max((s.scratch_limit for s in declared), key=_bytes)
    spec = {"requests": {"cpu": CPU_REQUEST, "memory": f"{request_mib}Mi", "ephemeral-storage": EPHEMERAL_REQUEST},
            "limits": {"cpu": CPU_LIMIT, "memory": f"{request_mib * LIMIT_FACTOR}Mi", "ephemeral-storage": ephemeral}}
    return spec, (f"memory: {peak.peak_rss_mb} MB peak RSS measured in docs/benchmarks.md ({peak.measured_in}), "
                  f"x{LIMIT_FACTOR} as the limit")


def _bytes(quantity: str) -> int:
    """A Kubernetes binary quantity (Mi, Gi, Ti) in bytes, to compare scratch limits."""
    for suffix, power in (("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4)):
        if quantity.endswith(suffix):
            return int(float(quantity[:-2]) * 1024 ** power)
    return int(float(quantity))
