"""Requests and limits, from the peak RSS docs/benchmarks.md measured: the numbers live here only.

The memory request is the largest measured peak among the exporters the CronJob runs (the
sources run one after another in a backup, and dr streams, so the peak does not grow with the
data), rounded up to 64 MiB; the limit is twice that, for what the benchmarks' data did not
have. Exporters with no benchmark of their own take the directory backup's figure, the
repository writer's own peak.
"""

from __future__ import annotations

# Peak RSS in MB, by exporter type, and the docs/benchmarks.md section it was measured in.
MEASURED_PEAK_MB: dict[str, tuple[int, str]] = {
    "files": (162, "Backup of a directory to S3: dr vs restic, first backup of 1 GiB"),
    "checkpoints": (232, "Checkpoint DR copies, across endpoints at three shard sizes (peak of the 256 MB-shard rounds)"),
    "kubernetes": (63, "Kubernetes backup and restore, backup of 50k objects"),
    "images": (146, "Image copies registry to registry, first copy into dr's repository (store: repository)"),
    "dns": (97, "DNS zone export and replay, export of 50,000 records"),
    "etcd": (118, "etcd snapshot of 1.2 GB"),
    "mlflow": (76, "MLflow registry, export"),
}
BASELINE = MEASURED_PEAK_MB["files"]  # an exporter without a benchmark of its own
LIMIT_FACTOR = 2
ROUND_MIB = 64
# CPU is not what bounds a backup (the network is): a quarter core requested, and two cores at
# most, which is what the benchmarks' machine had.
CPU_REQUEST, CPU_LIMIT = "250m", "2"
# Git mirror clones are written under /tmp before they are bundled.
EPHEMERAL_REQUEST, EPHEMERAL_LIMIT, EPHEMERAL_LIMIT_GIT = "1Gi", "2Gi", "10Gi"


def resources(types: list[str]) -> tuple[dict, str]:
    """(the container's resources, a comment naming where the memory figure comes from)."""
    peak, measured_in = max((MEASURED_PEAK_MB.get(t, BASELINE) for t in types), default=BASELINE)
    mib = -(-peak * 10**6 // (1 << 20))  # MB -> MiB, rounded up
    request_mib = -(-mib // ROUND_MIB) * ROUND_MIB
    ephemeral = EPHEMERAL_LIMIT_GIT if "git" in types else EPHEMERAL_LIMIT
    spec = {"requests": {"cpu": CPU_REQUEST, "memory": f"{request_mib}Mi", "ephemeral-storage": EPHEMERAL_REQUEST},
            "limits": {"cpu": CPU_LIMIT, "memory": f"{request_mib * LIMIT_FACTOR}Mi", "ephemeral-storage": ephemeral}}
    return spec, f"memory: {peak} MB peak RSS measured in docs/benchmarks.md ({measured_in}), x{LIMIT_FACTOR} as the limit"
